"""The runner conducts a run: experiment + corpus + encoders -> results/<run_id>/.

:func:`run` reads as the data flow:

1. load: the experiment, read and checked once (:func:`interbias.run.tasks.experiment_for_run`,
   unless the caller hands it over), the executor and every encoder, then the corpus manifest
   and the trial list (drawn, or an external list: :func:`interbias.run.inputs.load_inputs`);
   all failures come before work; the run id (:func:`interbias.run.results.run_id`) follows from
   what was asked and the bytes of every trial utterance's file (other audio: another run directory);
2. open and lock ``results/<run_id>/`` (the run frame, :func:`interbias.run.frame.opened`) and
   save (or verify) the trials;
3. find the work: which cell × encoder pairs finished earlier (reused, never scored again) and which
   (utterance, chain) items the rest need; a finished cell over this invocation's
   ``max_failure_share`` stops it here, before anything is written;
4. embed: :class:`interbias.embedding.stage.Embedder` fills the vectors from the cache or an executor;
5. score: :func:`interbias.run.cells.score_cell` per pending cell × encoder; each writes its
   scores file and completion record; then the countermeasures of a spoofing run that names
   them score every trial's test audio (:mod:`interbias.run.cm_stage`);
6. finish (:func:`interbias.run.frame.finish`): results.csv (every finished cell: a rerun never
   drops a row), the run's analyses (``RunOptions.after_run``), run.json (:mod:`interbias.run.results`).
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any

import pandas as pd

from interbias.embedding.cache import EmbeddingCache
from interbias.embedding.device import precision_options
from interbias.embedding.executors import make_executor
from interbias.embedding.stage import Embedder
from interbias.encoders import Encoder, load_encoders
from interbias.experiments.schema import Cell, Experiment
from interbias.metrics.spoof import SPOOF_COLUMNS
from interbias.run.attack_stage import check_attack_encoders, run_attacks
from interbias.run.backend_stage import backend_record, fit_run_backends
from interbias.run.calibrate import DRAW_CALIBRATION_COLUMNS, calibrate_rows, calibration_columns
from interbias.run.cells import DRAW_COLUMNS, CellScore, score_cell
from interbias.run.cm_stage import load_countermeasures, run_countermeasures
from interbias.run.frame import Analyses, RunEnd, RunOutcome, finish, header, opened
from interbias.run.frontends import CellEmbedders
from interbias.run.inputs import RunContext, RunOptions, load_inputs, with_plan
from interbias.run.normalise import (
    add_cohort_items,
    cohort_digest,
    norm_label,
    normalised_cell,
    reuse_normalised,
    scoring_record,
)
from interbias.run.operations import merge_operations, operation_notices
from interbias.run.preflight import verification_experiment
from interbias.run.qmf import experiment_qmf_columns, qmf_notices
from interbias.run.results import (
    COLUMNS,
    RowContext,
    results_row,
    run_record,
    torch_threads,
)
from interbias.run.rundir import TRIALS_META, CalibrationRecord
from interbias.run.work import RunWork, find_work
from interbias.trials.enrolment import first_enrolment
from interbias.trials.sampler import partners
from interbias.utils import atomic, crashpoints
from interbias.utils.errors import InterbiasError, RunError
from interbias.utils.progress import Reporter


def run(options: RunOptions, reporter: Reporter | None = None, *, exp: Experiment | None = None) -> RunOutcome:
    """Run an experiment (see the module docs); rerunning the same command resumes it. ``exp``:
    the experiment as :func:`interbias.run.tasks.experiment_for_run` loaded and checked it
    (None: :func:`interbias.run.preflight.verification_experiment` loads and checks it here)."""
    reporter = reporter or Reporter(quiet=options.quiet)
    t0 = time.perf_counter()
    exp, request = with_plan(options, exp if exp is not None else verification_experiment(options), reporter)
    precision = precision_options(options.precision, options.device, options.encoders, options.executor)
    executor = make_executor(options.executor, device=options.device, address=options.address, jobs=options.jobs)
    executor.encoder_options = {"precision": options.precision} if precision else {}
    # fp32 passes no options: encoders load exactly as without --precision
    with_options = {"options": precision} if precision else {}
    encoders = load_encoders(options.encoders, options.device, runtime=options.runtime, **with_options)
    check_attack_encoders(exp, encoders)
    cms = load_countermeasures(exp)
    ctx = load_inputs(options, exp, request, (executor, encoders), reporter, t0, cms)
    with opened(ctx.run.path, ctx.reporter):
        try:
            _save_trials(ctx)
            work = _find_work(ctx)
            emb = _embed(ctx, work)
            # before any cell is written: a kill after it must not leave finished cells without
            # the record of what their operators did (a rerun reuses the cells and embeds nothing)
            _write_operations(ctx, work, emb)
            ctx.backends = fit_run_backends(ctx, work, emb)
            _score(ctx, work, emb)
            try:
                run_attacks(ctx)
            except InterbiasError as exc:  # reported like an errored cell; the scored cells are written
                work.errored.append(f"attacks: {exc}")
            cm_record = _countermeasures(ctx, work)
            return _write(ctx, work, emb, cm_record)
        except atomic.WriteError as exc:
            raise RunError(
                f"{exc}; {ctx.run.n_finished_cells()} finished cell(s) are kept in {ctx.run.path}: "
                "rerun the same command to resume"
            ) from exc


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
        also_reuse=None
        if ctx.cohort is None
        else partial(
            reuse_normalised,
            run=ctx.run,
            encoders=ctx.encoders,
            spec=ctx.exp.scoring,
            digest=cohort_digest(ctx.cohort, ctx.exp.scoring),
        ),
    )
    if ctx.cohort is not None:  # the rows still to normalise need the cohort's vectors too
        add_cohort_items(work.items, [c for c, _ in work.pending], ctx.cohort, ctx.exp.scoring)
    return work


def _embed(ctx: RunContext, work: RunWork) -> CellEmbedders:
    """Vectors of every pending item, for the encoders that still have cells to score (one
    embedder per front end: :mod:`interbias.run.frontends`)."""
    t = time.perf_counter()
    db = EmbeddingCache(ctx.cache / "embeddings.sqlite")
    # Operators that draw other talkers must avoid every speaker an utterance is paired with.
    exclude = partners(ctx.trials.frame)
    emb = CellEmbedders(
        ctx.exp,
        [c for c, _ in work.pending],
        lambda fe, cells: Embedder(
            ctx.scored,
            [e for e in ctx.encoders if any(e is pe and c in cells for c, pe in work.pending)],
            db,
            fe,
            ctx.reporter,
            exclude=exclude,
            known_sha=work.shas,
            quality=ctx.exp.scoring.calibration.quality_aware,
        ),
    )
    if not work.pending:
        ctx.reporter.info(f"{work.ahead}; nothing to embed", wrap=True)
    elif len(emb.groups) == 1:
        emb.run(work.items, ctx.trials.for_stratum, lambda e, items: e.run(items, ctx.executor, ahead=work.ahead))
    else:  # the run's line once, then one embeddings line per front end, named by what differs
        ctx.reporter.info(work.ahead, wrap=True)
        emb.run(work.items, ctx.trials.for_stratum, lambda e, items: e.run(items, ctx.executor, ahead=emb.label(e)))
    db.close()
    ctx.timings["embed_s"] = time.perf_counter() - t
    ctx.timings["cache_write_s"] = emb.cache_write_s  # the cache's writer thread, beside the driver
    ctx.timings["cache_wait_s"] = emb.cache_wait_s  # the driver's share of embed_s spent waiting for it
    ctx.timings["forward_s"] = sum(ctx.executor.stats.forward_s.values())
    ctx.timings["forward_cpu_s"] = sum(ctx.executor.stats.forward_cpu_s.values())
    # seconds of audio through the encoders (each waveform once per encoder): × real time = this / embed_s
    ctx.timings["embedded_audio_s"] = sum(ctx.executor.stats.samples.values()) / ctx.exp.frontend.sample_rate_hz
    return emb


def _score(ctx: RunContext, work: RunWork, emb: CellEmbedders) -> None:
    """Score each pending cell × encoder and write its scores file and completion record; a
    cell that fails is counted in ``work.errored``."""
    t = time.perf_counter()
    seeds = {name: s.seed for name, s in ctx.trials.strata.items()}
    rows = RowContext(ctx.exp, ctx.manifest.name, ctx.run_id, ctx.rev, ctx.trials.sha256, seeds)
    with ctx.reporter.task("scoring", len(work.pending)) as advance:
        for cell, enc in work.pending:
            try:
                sub = first_enrolment(ctx.trials.for_stratum(cell.stratum), cell.enrol_utterances)
                backend = ctx.backends.for_cell(enc.label, cell) if ctx.backends is not None else None
                scored = score_cell(
                    cell,
                    enc,
                    sub,
                    emb.for_cell(cell),
                    ctx.options.max_failure_share,
                    ctx.exp.frontend.sample_rate_hz,
                    enrol=ctx.exp.scoring.enrol,
                    backend=backend,
                )
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
                **({"backend": backend.kind, "backend_sha256": backend.sha256()} if backend is not None else {}),
            }
            ctx.run.write_cell(enc.label, cell.id, scored.frame, record)
            work.rows[(enc.label, cell.id)] = row
            if ctx.cohort is not None:
                _normalise(ctx, work, cell, enc, sub, emb.for_cell(cell), scored, record)
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


def _write_operations(ctx: RunContext, work: RunWork, emb: CellEmbedders) -> None:
    """The operations record: this invocation's realised records, plus an earlier invocation's rows."""
    speakers = {u.id: u.speaker for u in ctx.scored.utterances}
    new = emb.operations(ctx.trials.for_stratum, speakers)
    for line in operation_notices(new, [c for c, _ in work.pending]):  # an operator that did less than asked
        ctx.reporter.notice(line)
    earlier = ctx.run.read_operations()
    if new.empty and earlier is not None:
        return  # nothing ran: the file stays as it is (byte for byte)
    ctx.run.write_operations(merge_operations(earlier, new))


def _countermeasures(ctx: RunContext, work: RunWork) -> dict | None:
    """The CM stage of a spoofing run with CMs (:mod:`interbias.run.cm_stage`); a failure is
    reported like an errored cell, and the speaker-verification cells are written regardless."""
    t = time.perf_counter()
    try:
        return run_countermeasures(ctx, ctx.cms)
    except InterbiasError as exc:
        work.errored.append(f"countermeasures: {exc}")
        return None
    finally:
        if ctx.cms:
            ctx.timings["countermeasures_s"] = time.perf_counter() - t


def _write(ctx: RunContext, work: RunWork, emb: CellEmbedders, cm_record: dict | None = None) -> RunOutcome:
    """results.csv (encoder-major, cell order of the experiment), the analyses, run.json."""
    keys = [(m, c.id) for m in ctx.models() for c in work.cells]
    has_dev = "split" in ctx.trials.frame.columns and bool((ctx.trials.frame["split"] == "dev").any())
    calibration = calibrate_rows(ctx.run, ctx.exp, ctx.models(), work.cells, work.rows, has_dev=has_dev)
    for line in qmf_notices(calibration.models):  # a QMF that could not be fitted: said, not only recorded
        ctx.reporter.notice(line)
    ordered = [work.rows[k] for k in keys if k in work.rows]
    draws = DRAW_COLUMNS + DRAW_CALIBRATION_COLUMNS if ctx.exp.trials.operator_draws > 1 else []
    columns = COLUMNS + calibration_columns(ctx.exp.operating_points) + draws + (SPOOF_COLUMNS if ctx.attacks else [])
    columns += ["n_windowed"] if ctx.exp.frontend.long_audio == "window" else []
    columns += ["n_trimmed"] if ctx.exp.frontend.trim_silence else []
    columns += ["n_segments"] if any(u.span for u in ctx.manifest) else []
    columns += experiment_qmf_columns(ctx.exp)
    results = pd.DataFrame(ordered, columns=columns)
    end = RunEnd(
        "verification", ctx.run, work.errored, results=results, trials=ctx.trials, scored=ctx.scored,
        spoofing=ctx.attacks is not None,
    )  # fmt: skip
    finish(ctx.run, end, ctx.options.after_run, partial(_record, ctx, work, emb, calibration, cm_record, len(ordered)))
    return RunOutcome(ctx.run.path, results, emb.n_embedded, emb.n_cached, work.reused, work.errored)


def _record(
    ctx: RunContext,
    work: RunWork,
    emb: CellEmbedders,
    calibration: CalibrationRecord,
    cm_record: dict | None,
    n_complete: int,
    analyses: Analyses,
) -> dict[str, Any]:
    """run.json (:func:`interbias.run.results.run_record`) once the analyses are written."""
    ctx.timings["total_s"] = time.perf_counter() - ctx.t0
    stats = ctx.executor.stats
    counts = {
        "cells": len(work.cells) * len(ctx.models()),
        "cells_complete": n_complete,
        "cells_reused": work.reused,
        "embedded": emb.n_embedded,
        "from_cache": emb.n_cached,
        "forward_calls": {e.label: e.forward_calls + stats.remote_calls[e.label] for e in ctx.encoders},
        "forward_s": dict(stats.forward_s),
        "failed_items": emb.n_failures,
        "oom_retries": stats.oom_retries,
        "batch_fallbacks": stats.batch_fallbacks,
    }
    executor = {**ctx.executor.describe(), "torch_threads": torch_threads()}
    run_header = header(
        ctx.run_id,
        ctx.options.command,
        rev=ctx.rev,
        device=ctx.options.device,
        precision=ctx.options.precision,
        executor=executor,
    )
    extra = {
        "errored_cells": work.errored,
        "timings": ctx.timings,
        "max_failure_share": ctx.options.max_failure_share,
        "cache": str(ctx.cache),
        **({"batch_fallback_reasons": dict(stats.fallback_reasons)} if stats.fallback_reasons else {}),
        "calibration": calibration.to_json(),
        "scoring": {
            **scoring_record(ctx.exp.scoring, ctx.cohort, ctx.cohort_missing),
            **({"enrol": ctx.exp.scoring.enrol} if ctx.exp.trials.enrol_utterances > 1 else {}),
            **(backend_record(ctx.backends, ctx.run) if ctx.backends is not None else {}),
        },
        **({"analyses": analyses.files} if analyses.files else {}),
        **({"countermeasures": cm_record} if cm_record else {}),
    }
    return run_record(
        header=run_header,
        exp=ctx.exp,
        manifest=ctx.manifest,
        encoders=ctx.encoders,
        trials=ctx.trials,
        counts=counts,
        failures=work.failures,
        extra=extra,
    )
