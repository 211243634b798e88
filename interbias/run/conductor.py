"""The runner conducts a run: experiment + corpus + encoders -> results/<run_id>/.

:func:`run` reads as the data flow:

1. load: the experiment, the corpus manifest and every encoder (all failures before work),
   then the trial list (drawn, or an external list); the run id follows from what was asked
   and the bytes of every trial utterance's file (other audio: another run directory);
2. lock ``results/<run_id>/`` (:class:`interbias.run.rundir.RunDir`) and save (or verify) the trials;
3. find the work: which cell × encoder pairs finished earlier (reused, never scored again) and which
   (utterance, chain) items the rest need; a finished cell over this invocation's
   ``max_failure_share`` stops it here, before anything is written;
4. embed: :class:`interbias.embedding.stage.Embedder` fills the vectors from the cache or an executor;
5. score: :func:`interbias.run.cells.score_cell` per pending cell × encoder; each writes its
   scores file and completion record;
6. write: results.csv (every finished cell: a rerun never drops a row) and run.json
   (:mod:`interbias.run.results`), then the run's analyses (``RunOptions.after_run``).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from interbias.corpora import check_manifest, check_runnable, load_corpus, needed_attributes
from interbias.corpora.attacks import AttackSet, load_attacks
from interbias.corpora.manifest import Manifest
from interbias.corpora.manifest_checks import check_distinct_audio, partly_labelled
from interbias.embedding.cache import EmbeddingCache
from interbias.embedding.executors import Executor, make_executor
from interbias.embedding.stage import Embedder, audio_digest, audio_digests, chains_for_cells
from interbias.encoders import Encoder, load_encoders
from interbias.experiments.schema import (
    Cell,
    Experiment,
    find_experiment,
    load_experiment,
    resource_problems,
    with_data,
)
from interbias.metrics.spoof import SPOOF_COLUMNS
from interbias.run.calibrate import DRAW_CALIBRATION_COLUMNS, calibrate_rows, calibration_columns
from interbias.run.cells import DRAW_COLUMNS, CellScore, score_cell
from interbias.run.grid import check_grid_size
from interbias.run.lock import RunLock
from interbias.run.normalise import (
    add_cohort_items,
    cohort_audio_sha256,
    cohort_digest,
    norm_label,
    normalised_cell,
    reuse_normalised,
    scoring_record,
)
from interbias.run.operations import merge_operations, operation_notices, operations_frame
from interbias.run.results import (
    COLUMNS,
    RowContext,
    results_row,
    revision,
    run_id_for,
    run_record,
    torch_threads,
)
from interbias.run.rundir import TRIALS_META, RunDir
from interbias.run.work import RunWork, find_work
from interbias.trials.cohort import Cohort, draw_cohort
from interbias.trials.external import external_trials
from interbias.trials.sampler import TrialList, draw_trials, partners, shortfall
from interbias.trials.speaker_budget import apply_plan, check_drawn
from interbias.utils import atomic, crashpoints
from interbias.utils.errors import InterbiasError, RunError
from interbias.utils.paths import cache_dir as default_cache_dir
from interbias.utils.paths import conditions_dir
from interbias.utils.progress import Reporter


@dataclass
class RunOptions:
    experiment: str
    encoders: Sequence[str] = ("CAM++", "GE2E", "mfcc-stats")
    corpus: str | None = None
    corpus_root: Path | None = None
    out: Path = Path("results")
    device: str = "cpu"
    max_trials: int | None = None
    max_failure_share: float = 0.01
    cache_dir: Path | None = None
    quiet: bool = False
    #: A user's manifest (CSV/JSONL/Lhotse) replacing the experiment's corpus, its data root,
    #: and an external trial list (with its format) replacing the sampled one.
    manifest: Path | None = None
    data_root: Path | None = None
    trials: Path | None = None
    trials_format: str | None = None
    #: Who computes embeddings: ``local`` (this process) or ``ray`` (see interbias.embedding.executors).
    executor: str = "local"
    #: Ray cluster address for ``executor="ray"`` (None: a local Ray instance).
    address: str | None = None
    #: A plan.csv of ``interbias plan``: draw the speakers per stratum it asks for this experiment.
    plan: Path | None = None
    #: Worker processes of the local executor (None: automatic, see interbias.embedding.executors).
    jobs: int | None = None
    #: Inference runtime where an encoder offers it: auto, eager or onnxruntime (None: $INTERBIAS_RUNTIME, else auto).
    runtime: str | None = None
    command: list[str] = field(default_factory=lambda: list(sys.argv))
    #: The analyses written beside results.csv once it is written, called as
    #: ``after_run(run, results, trials, scored, spoofing, errored)`` and returning what run.json
    #: lists under ``analyses``: ``interbias run`` passes
    #: :func:`interbias.analysis.after_run.run_analyses` (spoofing.csv, attributes.parquet,
    #: fairness); None writes none (the run layer does not import the analysis).
    after_run: Callable[..., dict[str, Any]] | None = None


@dataclass
class RunOutcome:
    run_dir: Path
    results: pd.DataFrame
    n_embedded: int
    n_cached: int
    cells_done_before: int
    errored_cells: list[str]


@dataclass
class RunContext:
    """Everything a run works with once its inputs are loaded and checked: the experiment, the
    corpus (``manifest``) and what is embedded (``scored``: the corpus plus any attack audio),
    the encoders and who runs them, the trial list, the run directory and its identity."""

    options: RunOptions
    reporter: Reporter
    exp: Experiment
    manifest: Manifest
    scored: Manifest
    encoders: list[Encoder]
    executor: Executor
    cache: Path
    trials: TrialList
    attacks: AttackSet | None
    run: RunDir
    run_id: str
    rev: str
    timings: dict[str, float]
    t0: float
    #: sha256 of every trial utterance's file and, per stratum, one digest of them (part of the run id).
    shas: dict[str, str] = field(default_factory=dict)
    audio: dict[str, str] = field(default_factory=dict)
    #: The score-normalisation cohort (``scoring.norm`` other than none) and its utterances left out per model.
    cohort: Cohort | None = None
    cohort_missing: dict[str, int] = field(default_factory=dict)

    def models(self) -> list[str]:
        """results ``model`` labels in order: each encoder, then its normalised version."""
        out = []
        for e in self.encoders:
            out += [e.label] + ([norm_label(e.label, self.exp.scoring)] if self.cohort else [])
        return out


def run(options: RunOptions, reporter: Reporter | None = None) -> RunOutcome:
    """Run an experiment (see the module docs); rerunning the same command resumes it."""
    ctx = _load(options, reporter or Reporter(quiet=options.quiet))
    with RunLock(ctx.run.path) as lock:
        if lock.previous_pid:
            ctx.reporter.notice(
                f"note: took over the lock of an earlier run (pid {lock.previous_pid}) that is no longer running"
            )
        atomic.remove_stale_temps(ctx.run.path)
        try:
            _save_trials(ctx)
            work = _find_work(ctx)
            emb = _embed(ctx, work)
            _score(ctx, work, emb)
            return _write(ctx, work, emb)
        except atomic.WriteError as exc:
            raise RunError(
                f"{exc}; {ctx.run.n_finished_cells()} finished cell(s) are kept in {ctx.run.path}: "
                "rerun the same command to resume"
            ) from exc


def _experiment(options: RunOptions) -> Experiment:
    """The experiment with the user's data in place, checked runnable here."""
    exp = load_experiment(find_experiment(options.experiment, conditions_dir()), corpus=options.corpus)
    if options.manifest or options.data_root or options.trials or options.trials_format:
        exp = with_data(
            exp,
            manifest=options.manifest,
            data_root=options.data_root,
            trials=options.trials,
            trials_format=options.trials_format,
        )
    check_grid_size(exp, len(options.encoders))  # counted before any work
    check_runnable(exp, root=options.corpus_root)  # data it needs is here, before any work
    problems = resource_problems(exp)
    if problems:
        raise RunError(f"{exp.name} cannot run here: " + "; ".join(problems))
    if not 0 <= options.max_failure_share < 1:
        raise RunError("--max-failure-share must be in [0, 1)")
    return exp


def _read_corpus(
    exp: Experiment, options: RunOptions, cache: Path, reporter: Reporter, timings: dict[str, float]
) -> tuple[Manifest, TrialList | None, AttackSet | None]:
    """The corpus manifest (checked), the external trial list if the experiment names one, and
    the attack set if it has spoofing; their times go into ``timings``."""
    t = time.perf_counter()
    reporter.info(f"corpus {exp.corpus.name}: preparing manifest")
    manifest = load_corpus(exp.corpus, root=options.corpus_root, cache=cache, reporter=reporter)
    check_manifest(exp, manifest)
    if note := partly_labelled(
        manifest.utterances, needed_attributes(exp), where=f"{exp.name}: corpus {manifest.name!r}"
    ):
        reporter.notice(note)
    listed = external_trials(exp, manifest, max_trials=options.max_trials)
    timings["corpus_s"] = time.perf_counter() - t
    attacks = None
    if listed is not None and exp.spoofing is not None:
        raise RunError(f"{exp.name}: spoof trials are sampled; an external trial list (trials.list) cannot carry them")
    if exp.spoofing is not None:
        t = time.perf_counter()
        attacks = load_attacks(exp.spoofing, exp.corpus, manifest, cache)
        timings["attacks_s"] = time.perf_counter() - t
    return manifest, listed, attacks


def _load(options: RunOptions, reporter: Reporter) -> RunContext:
    """Load and check every input, then draw the trials: before the run directory exists, so a
    refusal leaves nothing behind."""
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    exp = _experiment(options)
    request = None
    if options.plan is not None:  # before any work: a plan of another experiment is refused here
        exp, request = apply_plan(exp, Path(options.plan))
        reporter.info(request.describe(Path(options.plan), exp))
    cache = Path(options.cache_dir) if options.cache_dir else default_cache_dir()
    executor = make_executor(options.executor, device=options.device, address=options.address, jobs=options.jobs)
    encoders = load_encoders(options.encoders, options.device, runtime=options.runtime)
    timings["load_encoders_s"] = time.perf_counter() - t0
    manifest, listed, attacks = _read_corpus(exp, options, cache, reporter, timings)
    t = time.perf_counter()
    trials = (
        listed if listed is not None else draw_trials(exp, manifest, max_trials=options.max_trials, attacks=attacks)
    )
    if request is not None and listed is None:
        check_drawn(request, trials.strata)
    timings["trials_s"] = time.perf_counter() - t
    if listed is None and (short := shortfall(trials.info)):
        reporter.notice(short)
    cohort = draw_cohort(exp, manifest, trials.frame) if exp.scoring.norm != "none" else None
    scored = attacks.extend(manifest) if attacks else manifest  # attack audio is embedded too
    t = time.perf_counter()
    shas, audio = audio_digests(trials, scored)  # every trial file read once: its bytes are part of the run id
    bona = manifest.by_id()  # attack audio may be made from corpus files; the corpus itself may not repeat
    check_distinct_audio({u: h for u, h in shas.items() if h and u in bona}, where=f"corpus {manifest.name!r}")
    timings["audio_sha256_s"] = time.perf_counter() - t
    shas = {**shas, **cohort_audio_sha256(cohort, manifest)} if cohort is not None else shas  # cohort audio too
    rev = revision()
    run_id = run_id_for(
        exp,
        manifest,
        encoders,
        rev,
        options.max_trials,
        listed,
        attacks.sha256 if attacks else None,
        audio_sha256=audio_digest(shas),
    )
    return RunContext(
        options=options,
        reporter=reporter,
        exp=exp,
        manifest=manifest,
        scored=scored,
        encoders=encoders,
        executor=executor,
        cache=cache,
        trials=trials,
        attacks=attacks,
        run=RunDir(Path(options.out) / run_id),
        run_id=run_id,
        rev=rev,
        timings=timings,
        t0=t0,
        shas=shas,
        audio=audio,
        cohort=cohort,
    )


def _save_trials(ctx: RunContext) -> None:
    """Write the trial list and experiment, or check a resumed run's saved list is this one."""
    t = time.perf_counter()
    if ctx.run.file(TRIALS_META).is_file():
        try:
            earlier = ctx.run.read_trials()
        except (OSError, ValueError) as exc:
            raise RunError(
                f"{ctx.run.path}: the saved trial list cannot be read ({type(exc).__name__}); remove the directory "
                "to start over"
            ) from exc
        if earlier.sha256 != ctx.trials.sha256:
            raise RunError(
                f"{ctx.run.path}: the saved trial list differs from a fresh draw; remove the directory to start over"
            )
    else:
        ctx.run.write_trials(ctx.trials)
    ctx.run.write_experiment(ctx.exp)
    ctx.timings["trials_s"] += time.perf_counter() - t


def _find_work(ctx: RunContext) -> RunWork:
    """Which cell × encoder pairs are finished (reused) and what the others need embedded."""
    work = find_work(
        ctx.run,
        ctx.exp.cells(),
        ctx.encoders,
        ctx.trials,
        ctx.shas,
        ctx.audio,
        max_failure_share=ctx.options.max_failure_share,
        run_id=ctx.run_id,
        reporter=ctx.reporter,
    )
    if ctx.cohort is not None:  # normalised rows: reuse finished ones, embed the cohort for the rest
        reuse_normalised(work, ctx.run, ctx.encoders, ctx.exp.scoring, cohort_digest(ctx.cohort, ctx.exp.scoring))
        work.items = chains_for_cells([c for c, _ in work.pending], ctx.trials.for_stratum)
        add_cohort_items(work.items, [c for c, _ in work.pending], ctx.cohort, ctx.exp.scoring)
    return work


def _embed(ctx: RunContext, work: RunWork) -> Embedder:
    """Vectors of every pending item, for the encoders that still have cells to score."""
    t = time.perf_counter()
    db = EmbeddingCache(ctx.cache / "embeddings.sqlite")
    # Operators that draw other talkers must avoid every speaker an utterance is paired with.
    emb = Embedder(
        ctx.scored,
        [e for e in ctx.encoders if any(e is pe for _, pe in work.pending)],
        db,
        ctx.exp.frontend,
        ctx.reporter,
        exclude=partners(ctx.trials.frame),
        known_sha=work.shas,
    )
    if work.pending:
        emb.run(work.items, ctx.executor, ahead=work.ahead)
    else:
        ctx.reporter.info(f"{work.ahead}; nothing to embed")
    db.close()
    ctx.timings["embed_s"] = time.perf_counter() - t
    ctx.timings["forward_s"] = sum(ctx.executor.stats.forward_s.values())
    ctx.timings["forward_cpu_s"] = sum(ctx.executor.stats.forward_cpu_s.values())
    return emb


def _score(ctx: RunContext, work: RunWork, emb: Embedder) -> None:
    """Score each pending cell × encoder and write its scores file and completion record; a
    cell that fails is counted in ``work.errored``."""
    t = time.perf_counter()
    seeds = {name: s.seed for name, s in ctx.trials.strata.items()}
    rows = RowContext(ctx.exp, ctx.manifest.name, ctx.run_id, ctx.rev, ctx.trials.sha256, seeds)
    with ctx.reporter.task("scoring", len(work.pending)) as advance:
        for cell, enc in work.pending:
            sub = ctx.trials.for_stratum(cell.stratum)
            try:
                scored = score_cell(cell, enc, sub, emb, ctx.options.max_failure_share, ctx.exp.frontend.sample_rate_hz)
            except (RunError, InterbiasError) as exc:
                key = (enc.label, cell.id)
                kept = key in work.previous
                if kept:  # a finished row never disappears because a later invocation failed
                    work.rows[key] = work.previous[key]
                work.errored.append(str(exc) + ("; its earlier row is kept" if kept else ""))
                work.failures.extend({"model": enc.label, "cell": cell.id, **f} for f in getattr(exc, "failures", []))
                advance(1)
                continue
            row = results_row(rows, cell, enc, scored.row)
            record = {
                "row": row,
                "encoder_fingerprint": enc.fingerprint,
                "trials_sha256": ctx.trials.sha256,
                "audio_sha256": work.audio[cell.stratum],
                "failures": scored.failures,
            }
            ctx.run.write_cell(enc.label, cell.id, scored.frame, record)
            work.rows[(enc.label, cell.id)] = row
            if ctx.cohort is not None:
                _normalise(ctx, work, cell, enc, sub, emb, scored, record)
            work.failures.extend({"model": enc.label, "cell": cell.id, **f} for f in scored.failures)
            advance(1)
            crashpoints.reached("cell-done")
    ctx.timings["score_s"] = time.perf_counter() - t


def _normalise(
    ctx: RunContext,
    work: RunWork,
    cell: Cell,
    enc: Encoder,
    sub: pd.DataFrame,
    emb: Embedder,
    raw: CellScore,
    record: dict,
) -> None:
    """Write the normalised row of a scored cell as the model ``<label> +<norm>``."""
    if ctx.cohort is None:
        return
    label = norm_label(enc.label, ctx.exp.scoring)
    try:
        normed, missing = normalised_cell(cell, enc, sub, emb, ctx.cohort, ctx.exp.scoring, raw)
    except InterbiasError as exc:
        work.errored.append(f"cell {cell.id} / {label}: {exc}")
        return
    seeds = {name: s.seed for name, s in ctx.trials.strata.items()}
    rows = RowContext(ctx.exp, ctx.manifest.name, ctx.run_id, ctx.rev, ctx.trials.sha256, seeds)
    row = {**results_row(rows, cell, enc, normed.row), "model": label}
    digest = cohort_digest(ctx.cohort, ctx.exp.scoring)
    ctx.run.write_cell(label, cell.id, normed.frame, {**record, "row": row, "cohort_sha256": digest})
    work.rows[(label, cell.id)] = row
    ctx.cohort_missing[label] = max(ctx.cohort_missing.get(label, 0), missing)


def _write_operations(ctx: RunContext, work: RunWork, emb: Embedder) -> None:
    """operations.parquet: this invocation's realised records, plus an earlier invocation's rows."""
    speakers = {u.id: u.speaker for u in ctx.scored.utterances}
    new = operations_frame([c for c, _ in work.pending], ctx.trials.for_stratum, emb.realised, speakers)
    for line in operation_notices(new, [c for c, _ in work.pending]):  # an operator that did less than asked
        ctx.reporter.notice(line)
    earlier = ctx.run.read_operations()
    if new.empty and earlier is not None:
        return  # nothing ran: the file stays as it is (byte for byte)
    ctx.run.write_operations(merge_operations(earlier, new))


def _write(ctx: RunContext, work: RunWork, emb: Embedder) -> RunOutcome:
    """results.csv (encoder-major, cell order of the experiment), the analyses, run.json."""
    keys = [(m, c.id) for m in ctx.models() for c in work.cells]
    has_dev = "split" in ctx.trials.frame.columns and bool((ctx.trials.frame["split"] == "dev").any())
    calibration = calibrate_rows(ctx.run, ctx.exp, ctx.models(), work.cells, work.rows, has_dev=has_dev)
    ordered = [work.rows[k] for k in keys if k in work.rows]
    draws = DRAW_COLUMNS + DRAW_CALIBRATION_COLUMNS if ctx.exp.trials.operator_draws > 1 else []
    columns = COLUMNS + calibration_columns(ctx.exp.operating_points) + draws + (SPOOF_COLUMNS if ctx.attacks else [])
    results = pd.DataFrame(ordered, columns=columns)
    ctx.run.write_results(results)
    _write_operations(ctx, work, emb)
    after = ctx.options.after_run
    analyses = after(ctx.run, results, ctx.trials, ctx.scored, ctx.attacks is not None, work.errored) if after else {}
    ctx.timings["total_s"] = time.perf_counter() - ctx.t0
    stats = ctx.executor.stats
    counts = {
        "cells": len(work.cells) * len(ctx.models()),
        "cells_complete": len(ordered),
        "cells_reused": work.reused,
        "embedded": emb.n_embedded,
        "from_cache": emb.n_cached,
        "forward_calls": {e.label: e.forward_calls + stats.remote_calls[e.label] for e in ctx.encoders},
        "forward_s": dict(stats.forward_s),
        "failed_items": len(emb.failures),
    }
    header = {
        "run_id": ctx.run_id,
        "revision": ctx.rev,
        "command": ctx.options.command,
        "device": ctx.options.device,
        "executor": {**ctx.executor.describe(), "torch_threads": torch_threads()},
    }
    extra = {
        "errored_cells": work.errored,
        "timings": ctx.timings,
        "max_failure_share": ctx.options.max_failure_share,
        "cache": str(ctx.cache),
        "calibration": calibration,
        "scoring": scoring_record(ctx.exp.scoring, ctx.cohort, ctx.cohort_missing),
        **({"analyses": analyses} if analyses else {}),
    }
    ctx.run.write_run_json(
        run_record(
            header=header,
            exp=ctx.exp,
            manifest=ctx.manifest,
            encoders=ctx.encoders,
            trials=ctx.trials,
            counts=counts,
            failures=work.failures,
            extra=extra,
        )
    )
    return RunOutcome(ctx.run.path, results, emb.n_embedded, emb.n_cached, work.reused, work.errored)
