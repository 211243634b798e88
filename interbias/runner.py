"""The runner conducts a run: experiment + corpus + encoders -> results/<run_id>/.

:func:`run` reads as the data flow:

1. load: the experiment, the corpus manifest and every encoder (all failures before work),
   then the trial list (drawn, or an external list); the run id follows from what was asked
   and the bytes of every trial utterance's file (other audio: another run directory);
2. lock ``results/<run_id>/`` (:class:`interbias.rundir.RunDir`) and save (or verify) the trials;
3. plan: which cell × encoder pairs finished earlier (reused, never scored again) and which
   (utterance, chain) items the rest need; a finished cell over this invocation's
   ``max_failure_share`` stops it here, before anything is written;
4. embed: :class:`interbias.embedding.Embedder` fills the vectors from the cache or an executor;
5. score: :func:`interbias.cells.score_cell` per pending cell × encoder; each writes its
   scores file and completion record;
6. write: results.csv (every finished cell: a rerun never drops a row) and run.json
   (:mod:`interbias.results`), then the run's analyses.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from interbias import atomic, crashpoints
from interbias.analysis.after_run import run_analyses
from interbias.analysis.spoofing import SPOOF_COLUMNS
from interbias.cache import EmbeddingCache
from interbias.cells import score_cell
from interbias.corpora import check_manifest, check_runnable, load_corpus
from interbias.corpora.attacks import AttackSet, load_attacks
from interbias.embedding import Embedder, audio_digest, audio_digests
from interbias.encoders import Encoder, load_encoders
from interbias.errors import InterbiasError, RunError
from interbias.executors import Executor, make_executor
from interbias.experiments import Experiment, find_experiment, load_experiment, resource_problems, with_data
from interbias.lock import RunLock
from interbias.manifest import Manifest
from interbias.paths import cache_dir as default_cache_dir
from interbias.paths import conditions_dir
from interbias.planning import Plan, plan_run
from interbias.progress import Reporter
from interbias.results import (
    COLUMNS,
    RowContext,
    results_row,
    revision,
    run_id_for,
    run_record,
    torch_threads,
)
from interbias.rundir import TRIALS_META, RunDir
from interbias.speaker_budget import read_plan, with_speakers
from interbias.trial_lists import external_trials
from interbias.trials import TrialList, draw_trials, partners


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
    #: Who computes embeddings: ``local`` (this process) or ``ray`` (see interbias.executors).
    executor: str = "local"
    #: Ray cluster address for ``executor="ray"`` (None: a local Ray instance).
    address: str | None = None
    #: A plan.csv of ``interbias plan``: draw the speakers per stratum it asks for this experiment.
    plan: Path | None = None
    #: Worker processes of the local executor (None: automatic, see interbias.executors).
    jobs: int | None = None
    #: Inference runtime where an encoder offers it: auto, eager or onnxruntime (None: $INTERBIAS_RUNTIME, else auto).
    runtime: str | None = None
    command: list[str] = field(default_factory=lambda: list(sys.argv))


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


def run(options: RunOptions, reporter: Reporter | None = None) -> RunOutcome:
    """Run an experiment (see the module docs); rerunning the same command resumes it."""
    from interbias.cm.experiment import is_cm_experiment, run_cm

    if is_cm_experiment(options.experiment, options.corpus):  # countermeasures: interbias.cm.experiment
        return run_cm(
            options, reporter or Reporter(quiet=options.quiet), default_encoders=RunOptions.encoders, outcome=RunOutcome
        )
    ctx = _load(options, reporter or Reporter(quiet=options.quiet))
    with RunLock(ctx.run.path) as lock:
        if lock.previous_pid:
            ctx.reporter.notice(
                f"note: took over the lock of an earlier run (pid {lock.previous_pid}) that is no longer running"
            )
        atomic.remove_stale_temps(ctx.run.path)
        try:
            _save_trials(ctx)
            plan = _plan(ctx)
            emb = _embed(ctx, plan)
            _score(ctx, plan, emb)
            return _write(ctx, plan, emb)
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
    check_runnable(exp, root=options.corpus_root)  # data it needs is here, before any work
    problems = resource_problems(exp)
    if problems:
        raise RunError(f"{exp.name} cannot run here: " + "; ".join(problems))
    if not 0 <= options.max_failure_share < 1:
        raise RunError("--max-failure-share must be in [0, 1)")
    return exp


def _load(options: RunOptions, reporter: Reporter) -> RunContext:
    """Load and check every input, then draw the trials: before the run directory exists, so a
    refusal leaves nothing behind."""
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    exp = _experiment(options)
    if options.plan is not None:  # before any work: a plan of another experiment is refused here
        request = read_plan(Path(options.plan), exp.name)
        exp = with_speakers(exp, request.speakers_per_stratum)
        reporter.info(request.describe(Path(options.plan), exp))
    cache = Path(options.cache_dir) if options.cache_dir else default_cache_dir()
    executor = make_executor(options.executor, device=options.device, address=options.address, jobs=options.jobs)
    encoders = load_encoders(options.encoders, options.device, runtime=options.runtime)
    timings["load_encoders_s"] = time.perf_counter() - t0
    t = time.perf_counter()
    reporter.info(f"corpus {exp.corpus.name}: preparing manifest")
    manifest = load_corpus(exp.corpus, root=options.corpus_root, cache=cache, reporter=reporter)
    check_manifest(exp, manifest)
    listed = external_trials(exp, manifest, max_trials=options.max_trials)
    timings["corpus_s"] = time.perf_counter() - t
    attacks = None
    if listed is not None and exp.spoofing is not None:
        raise RunError(f"{exp.name}: spoof trials are sampled; an external trial list (trials.list) cannot carry them")
    if exp.spoofing is not None:
        t = time.perf_counter()
        attacks = load_attacks(exp.spoofing, exp.corpus, manifest, cache)
        timings["attacks_s"] = time.perf_counter() - t
    t = time.perf_counter()
    trials = (
        listed if listed is not None else draw_trials(exp, manifest, max_trials=options.max_trials, attacks=attacks)
    )
    timings["trials_s"] = time.perf_counter() - t
    scored = attacks.extend(manifest) if attacks else manifest  # attack audio is embedded too
    t = time.perf_counter()
    shas, audio = audio_digests(trials, scored)  # every trial file read once: its bytes are part of the run id
    timings["audio_sha256_s"] = time.perf_counter() - t
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


def _plan(ctx: RunContext) -> Plan:
    """Which cell × encoder pairs are finished (reused) and what the others need embedded."""
    return plan_run(
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


def _embed(ctx: RunContext, plan: Plan) -> Embedder:
    """Vectors of every planned item, for the encoders that still have cells to score."""
    t = time.perf_counter()
    db = EmbeddingCache(ctx.cache / "embeddings.sqlite")
    # Operators that draw other talkers must avoid every speaker an utterance is paired with.
    emb = Embedder(
        ctx.scored,
        [e for e in ctx.encoders if any(e is pe for _, pe in plan.pending)],
        db,
        ctx.exp.frontend,
        ctx.reporter,
        exclude=partners(ctx.trials.frame),
        known_sha=plan.shas,
    )
    if plan.pending:
        emb.run(plan.items, ctx.executor, ahead=plan.ahead)
    else:
        ctx.reporter.info(f"{plan.ahead}; nothing to embed")
    db.close()
    ctx.timings["embed_s"] = time.perf_counter() - t
    ctx.timings["forward_s"] = sum(ctx.executor.stats.forward_s.values())
    ctx.timings["forward_cpu_s"] = sum(ctx.executor.stats.forward_cpu_s.values())
    return emb


def _score(ctx: RunContext, plan: Plan, emb: Embedder) -> None:
    """Score each pending cell × encoder and write its scores file and completion record; a
    cell that fails is counted in ``plan.errored``."""
    t = time.perf_counter()
    seeds = {name: s.seed for name, s in ctx.trials.strata.items()}
    rows = RowContext(ctx.exp, ctx.manifest.name, ctx.run_id, ctx.rev, ctx.trials.sha256, seeds)
    with ctx.reporter.task("scoring", len(plan.pending)) as advance:
        for cell, enc in plan.pending:
            sub = ctx.trials.for_stratum(cell.stratum)
            try:
                scored = score_cell(cell, enc, sub, emb, ctx.options.max_failure_share, ctx.exp.frontend.sample_rate_hz)
            except (RunError, InterbiasError) as exc:
                key = (enc.label, cell.id)
                kept = key in plan.previous
                if kept:  # a finished row never disappears because a later invocation failed
                    plan.rows[key] = plan.previous[key]
                plan.errored.append(str(exc) + ("; its earlier row is kept" if kept else ""))
                advance(1)
                continue
            row = results_row(rows, cell, enc, scored.row)
            record = {
                "row": row,
                "encoder_fingerprint": enc.fingerprint,
                "trials_sha256": ctx.trials.sha256,
                "audio_sha256": plan.audio[cell.stratum],
                "failures": scored.failures,
            }
            ctx.run.write_cell(enc.label, cell.id, scored.frame, record)
            plan.rows[(enc.label, cell.id)] = row
            plan.failures.extend({"model": enc.label, "cell": cell.id, **f} for f in scored.failures)
            advance(1)
            crashpoints.reached("cell-done")
    ctx.timings["score_s"] = time.perf_counter() - t


def _write(ctx: RunContext, plan: Plan, emb: Embedder) -> RunOutcome:
    """results.csv (encoder-major, cell order of the experiment), the analyses, run.json."""
    keys = [(e.label, c.id) for e in ctx.encoders for c in plan.cells]
    ordered = [plan.rows[k] for k in keys if k in plan.rows]
    results = pd.DataFrame(ordered, columns=COLUMNS + (SPOOF_COLUMNS if ctx.attacks else []))
    ctx.run.write_results(results)
    analyses = run_analyses(ctx.run, results, ctx.trials, ctx.scored, ctx.attacks is not None, plan.errored)
    ctx.timings["total_s"] = time.perf_counter() - ctx.t0
    stats = ctx.executor.stats
    counts = {
        "cells": len(plan.cells) * len(ctx.encoders),
        "cells_complete": len(ordered),
        "cells_reused": plan.reused,
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
        "errored_cells": plan.errored,
        "timings": ctx.timings,
        "max_failure_share": ctx.options.max_failure_share,
        "cache": str(ctx.cache),
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
            failures=plan.failures,
            extra=extra,
        )
    )
    return RunOutcome(ctx.run.path, results, emb.n_embedded, emb.n_cached, plan.reused, plan.errored)
