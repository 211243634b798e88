"""CM experiments (``countermeasures:`` in an experiment YAML, e.g. E19): score a CM manifest's
dev and eval utterances through each cell's operator chain with each CM, and write the CM
fairness tables (:mod:`interbias.analysis.security.cm_run`, through the run's after-run hook).

The YAML's ``countermeasures`` entry: ``models`` (CM labels, :mod:`interbias.cm.models`),
optional ``bootstrap`` (replicates, default 200) and ``threshold`` (default ``eer``). The
factors must be two acoustic factors (test side); the corpus a CM manifest (``asvspoof5``,
``synthetic-cm`` or a manifest file with label and split columns); ``synthetic`` means its CM
form, ``synthetic-cm`` (:mod:`interbias.corpora.cm_corpus`, options are its spec's fields).

Run directory ``<out>/<experiment>-cm-<hash>/`` (:func:`interbias.run.results.content_run_id`;
the hash covers the resolved experiment, the CM manifest and every checkpoint's sha256), locked
while the run works (:class:`interbias.run.lock.RunLock`). Each cell's scores (every model) and
its completion record are written as the cell finishes (``scores/cm/<cell>.parquet``,
``cells/cm/<cell>.json``); a rerun reuses every finished cell whose record names the same
checkpoints and scores only the rest. Then ``cm_scores.csv``, and from the after-run hook
``results.csv``,
``cm_`` + the fairness report's two files (comparisons, per-group values),
``cm_tables.csv`` + ``cm_tables.md`` (Tables I–V), ``cm_interaction.csv``, ``cm_track1.csv``
(ASVspoof 5 Track 1 metrics per model × cell, pooled and per attack), ``cm_report.md``,
``cm_gap.png``; last ``run.json`` with the packages and hardware (docs/outputs.md). The run
frame (:mod:`interbias.run.frame`) opens and locks the directory, and writes results.csv (the
rows the analyses compute) and run.json.

``interbias validate`` counts what the run scores (:func:`cm_estimate`): in the reference cell
each CM scores the CM manifest's dev and eval utterances, in every other cell the eval
utterances; CM scorings = (dev + eval + (cells − 1) × eval) × CMs; ``results.csv`` has one row
per CM × cell. The run also needs every CM's checkpoint file; a missing one means it does not
run here. The manifest is read when it is here (a ``manifest:`` file, or ``synthetic-cm``
already built in the cache); otherwise the estimate states the rule. No time is estimated.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from interbias.run.estimate import Estimate
from interbias.run.frame import RunEnd, RunOutcome, cache_of, finish, header, loaded, opened, seconds_since
from interbias.run.inputs import RunOptions
from interbias.run.results import base_record, content_run_id
from interbias.run.rundir import RESULTS, RunDir
from interbias.run.tasks.base import (
    NO_TIME,
    Task,
    base_estimate,
    check_own_data,
    manifest_here,
    runs_here_text,
    split_counts,
)
from interbias.utils import atomic, crashpoints
from interbias.utils.errors import ConfigError
from interbias.utils.progress import Reporter

if TYPE_CHECKING:
    from interbias.audio.frontend import FrontEnd
    from interbias.cm.models import LoadedCM
    from interbias.corpora.manifest import Manifest
    from interbias.experiments.schema import Experiment

#: The model folder name of a CM run's per-cell scores and completion records (all models of a cell together).
CELL_KEY = "cm"


def cm_spec(exp: Experiment) -> dict[str, Any] | None:
    """The checked ``countermeasures`` section of an experiment (its models in the CM registry, two
    acoustic factors on the test side, a front end the CMs honour), or None for another kind."""
    from interbias.cm.models import CM_MODELS

    spec = exp.countermeasures
    if spec is None:
        return None
    where = exp.path.name if exp.path else exp.name
    for label in spec.models:
        CM_MODELS.get(label)
    acoustic = exp.acoustic_factors
    if len(exp.factors) != 2 or len(acoustic) != 2 or any(lv.enrol.effective for f in acoustic for lv in f.levels):
        raise ConfigError(f"{where}: a countermeasure experiment has two acoustic factors applied to the test side")
    from interbias.cm.frontends import cm_frontend

    cm_frontend(exp)
    return {"models": list(spec.models), "bootstrap": spec.bootstrap, "threshold": spec.threshold}


def choose_models(spec: dict[str, Any], encoders: list[str], default: tuple[str, ...]) -> list[str]:
    """``--encoders`` when it names CMs; the experiment's models when it is left at its SV default."""
    from interbias.cm.models import CM_MODELS

    if tuple(encoders) == tuple(default):
        return spec["models"]
    bad = [e for e in encoders if e not in CM_MODELS]
    if bad:
        raise ConfigError(
            f"this is a countermeasure experiment: --encoders must name CM models ({', '.join(CM_MODELS.names())}); "
            f"not: {', '.join(bad)}"
        )
    return list(encoders)


def grid(exp: Experiment) -> tuple[tuple[str, str], str, list]:
    """(factor names, reference cell id, IC grid rows (level_a, level_b, (cell_ab, cell_a, cell_b, cell_ref)))."""
    fa, fb = exp.factors
    cid = lambda a, b: f"{fa.name}={a},{fb.name}={b}"  # noqa: E731 - the cell id rule of experiments.Cell
    ref = cid(fa.reference, fb.reference)
    rows = [
        (la.name, lb.name, (cid(la.name, lb.name), cid(la.name, fb.reference), cid(fa.reference, lb.name), ref))
        for la in fa.levels
        for lb in fb.levels
        if la.name != fa.reference and lb.name != fb.reference
    ]
    return (fa.name, fb.name), ref, rows


def run(options: RunOptions, reporter: Reporter | None = None, *, exp: Experiment | None = None) -> RunOutcome:
    """``interbias run`` of a countermeasure experiment (module docstring). ``exp``: the experiment
    as loaded and checked by :func:`interbias.run.tasks.experiment_for_run` (None: loaded here)."""
    reporter = reporter or Reporter(quiet=options.quiet)
    return run_cm(options, reporter, default_encoders=tuple(RunOptions.encoders), exp=exp)


#: The name this conductor had before the run tasks (kept for callers of the old name).
run_cm_experiment = run


def cm_manifest(exp: Experiment, options: RunOptions, cache: Path, reporter: Reporter) -> Manifest:
    """The CM manifest: ``synthetic`` → its CM form (bona fide vs proxy attacks); any other corpus
    through its adapter; checked to be a CM manifest."""
    from interbias.corpora import load_corpus
    from interbias.corpora.cm_corpus import check_cm_manifest, prepare_synthetic_cm

    if exp.corpus.name == "synthetic" and not exp.corpus.manifest:
        manifest = prepare_synthetic_cm(None, cache, dict(exp.corpus.options), reporter)
    else:
        manifest = load_corpus(exp.corpus, root=options.corpus_root, cache=cache, reporter=reporter)
    check_cm_manifest(manifest)
    return manifest


def run_cm(
    options: RunOptions, reporter: Reporter, *, default_encoders: tuple[str, ...], exp: Experiment | None = None
) -> RunOutcome:
    """Score (resuming by cell), analyse and write a CM experiment (module docstring)."""
    from interbias.cm.frontends import cm_frontend

    t0 = time.perf_counter()
    exp = loaded(options, exp)
    spec = cm_spec(exp)
    if spec is None:
        raise ConfigError(f"{exp.name}: not a countermeasure experiment (it has no countermeasures: section)")
    labels = choose_models(spec, list(options.encoders), default_encoders)
    cache = cache_of(options)
    manifest = cm_manifest(exp, options, cache, reporter)
    frontend = cm_frontend(exp)
    models = load_models(labels, resampler=frontend.resampler)
    checkpoints = {k: m.checkpoint_sha256 for k, m in models.items()}
    run_id = content_run_id(f"{exp.name}-cm", [exp.resolved(), manifest.sha256(), checkpoints])
    with opened(Path(options.out) / run_id, reporter) as run:
        scores, failed, reused = score_all(exp, manifest, models, cache, reporter, frontend, run)
        atomic.write_csv(run.file("cm_scores.csv"), scores)
        ctx = {"exp": exp, "spec": spec, "models": models, "run_id": run_id, "failed": failed, "manifest": manifest}
        end = RunEnd("countermeasure", run, [], scores=scores, detail=ctx)
        record = lambda analyses: base_record(  # noqa: E731 - run.json once the analyses are written
            header=header(run_id, options.command),
            exp=exp,
            extra={
                "models": {k: m.provenance() for k, m in models.items()}, "frontend": frontend.record(),
                "manifest_sha256": manifest.sha256(), "n_failed": {k: len(v) for k, v in failed.items()},
                "n_failures": sum(len(v) for v in failed.values()),
                "failed_first": {k: v[:5] for k, v in failed.items() if v}, "cells_reused": reused,
                "analyses": analyses.files, "seconds": seconds_since(t0),
            },
        )  # fmt: skip
        finish(run, end, options.after_run, record)
        results = written_results(run)
    return RunOutcome(run.path, results, len(scores), 0, reused, [])


def written_results(run: RunDir) -> pd.DataFrame:
    """results.csv as written (by this invocation's analyses, or an earlier one's), else no rows."""
    return run.read_results() if run.file(RESULTS).is_file() else pd.DataFrame()


def load_models(labels: list[str], *, resampler: str = "polyphase") -> dict[str, LoadedCM]:
    from interbias.cm.models import load_cm

    return {label: load_cm(label, resampler=resampler) for label in labels}


def finished_cell(run: RunDir, cell_id: str, checkpoints: dict[str, str]) -> tuple[pd.DataFrame, list[str]] | None:
    """A finished cell's scores and failures when its completion record names these checkpoints."""
    rec = run.cell_record(CELL_KEY, cell_id)
    if rec is None or rec.get("checkpoints") != checkpoints:
        return None
    return run.read_scores(CELL_KEY, cell_id), list(rec.get("failed", []))


def check_rates(models: dict[str, LoadedCM], frontend: FrontEnd) -> None:
    """A checkpoint trained at another sample rate than the front end gives is refused, not fed that rate."""
    from interbias.utils.errors import EncoderError

    for label, cm in models.items():
        if cm.policy.sample_rate_hz != frontend.sample_rate_hz:
            raise EncoderError(
                f"{label}: its checkpoint was trained on {cm.policy.sample_rate_hz} Hz audio; this experiment's "
                f"front end gives {frontend.sample_rate_hz} Hz (score it with interbias cm score, which uses the "
                "checkpoint's own rate)"
            )


def score_all(
    exp: Experiment,
    manifest: Manifest,
    models: dict[str, LoadedCM],
    cache: Path,
    reporter: Reporter,
    frontend: FrontEnd,
    run: RunDir,
) -> tuple[pd.DataFrame, dict[str, list[str]], int]:
    """Scores of every cell (dev + eval in the reference cell, eval elsewhere), failures per cell
    and the number of cells reused; each scored cell is written with its completion record."""
    from interbias.cm.scoring import score_cell

    check_rates(models, frontend)
    _, ref, _ = grid(exp)
    dev = sorted((u for u in manifest if u.get("split") == "dev"), key=lambda u: u.id)
    ev = sorted((u for u in manifest if u.get("split") == "eval"), key=lambda u: u.id)
    checkpoints = {k: m.checkpoint_sha256 for k, m in models.items()}
    frames, failed, reused = [], {}, 0
    cells = exp.cells()
    finished = {cell.id: finished_cell(run, cell.id, checkpoints) for cell in cells}
    n_done = sum(v is not None for v in finished.values())
    if n_done:  # the progress line counts the cells still to score
        reporter.info(f"{exp.name}: {n_done} of {len(cells)} cell(s) finished earlier (reused)")
    with reporter.task(f"{exp.name}: scoring {len(models)} CM(s)", len(cells) - n_done) as advance:
        for cell in cells:
            done = finished[cell.id]
            if done is not None:
                frame, bad = done
                reused += 1
            else:
                utts = dev + ev if cell.id == ref else ev
                frame, bad = score_cell(models, manifest, utts, cell, cache, frontend)
                run.write_cell(CELL_KEY, cell.id, frame, {"cell": cell.id, "checkpoints": checkpoints, "failed": bad})
                crashpoints.reached("cell-done")
                advance(1)
            frames.append(frame)
            failed[cell.id] = bad
    return pd.concat(frames, ignore_index=True), failed, reused


# ---- validate: what the run scores ------------------------------------------------------------


def cm_estimate(exp: Experiment, encoders: Sequence[str], cache: Path, default_encoders: Sequence[str]) -> Estimate:
    """What a countermeasure run of ``exp`` scores (module docstring)."""
    from interbias.cm.models import missing_checkpoints
    from interbias.corpora.cm_corpus import check_cm_manifest, cm_corpus_folder, cm_spec_from_options
    from interbias.run.preflight import availability

    spec = cm_spec(exp)
    if spec is None:
        raise ConfigError(f"{exp.name}: not a countermeasure experiment (it has no countermeasures: section)")
    models = choose_models(spec, list(encoders), tuple(default_encoders))
    cells = exp.cells()
    _, ref, _ = grid(exp)
    est = base_estimate(exp, "countermeasure", len(cells))
    est.n_rows = len(cells) * len(models)
    why = availability(exp, models=False)  # the CMs this run loads are judged below
    missing = missing_checkpoints(models)
    est.runs_here = runs_here_text(why, missing)
    est.headline = (
        f"{est.label}: corpus {est.corpus}, countermeasure experiment: {len(cells)} cells × {len(models)} CM(s) "
        f"({', '.join(models)}) → {est.n_rows} results rows; {est.runs_here}"
    )
    synthetic_cm = lambda o: ("synthetic-cm", cm_corpus_folder(cache, cm_spec_from_options(o)))  # noqa: E731
    manifest, est.utterances_from = manifest_here(
        exp.corpus, cache, {"synthetic": synthetic_cm, "synthetic-cm": synthetic_cm}
    )
    others = sum(c.id != ref for c in cells)
    if manifest is None:
        est.work = [
            f"  cost: unknown ({est.utterances_from}); each CM scores the dev and eval utterances in the reference "
            f"cell and the eval utterances in each of the other {others} cells"
        ]
        return est
    check_cm_manifest(manifest)
    n = split_counts(manifest)
    per_cm = n["dev"] + n["eval"] + others * n["eval"]
    est.n_utterances, est.n_scorings = n["dev"] + n["eval"], per_cm * len(models)
    est.work = [
        f"  cost: {n['dev']} dev + {n['eval']} eval utterances in the reference cell, {n['eval']} eval in each of "
        f"the other {others} cells = {per_cm} scorings × {len(models)} CM(s) = {est.n_scorings} CM scorings, no "
        f"embeddings or trials ({est.utterances_from}); {NO_TIME}"
    ]
    return est


class CountermeasureTask(Task):
    """Experiments with a ``countermeasures:`` section: CMs score a CM manifest per cell."""

    kind = "countermeasure"

    def names_models(self, options: RunOptions) -> bool:
        """``--encoders`` left at its default means the experiment's CMs; otherwise it names CMs."""
        return tuple(options.encoders) != tuple(type(options).encoders)

    def check(self, exp: Experiment, options: RunOptions) -> Experiment:
        return check_own_data(exp, options)

    def estimate(self, exp: Experiment, encoders: Sequence[str], cache: Path) -> Estimate:
        return cm_estimate(exp, encoders, cache, RunOptions.encoders)

    def run(self, options: RunOptions, reporter: Reporter | None, exp: Experiment) -> RunOutcome:
        return run(options, reporter, exp=exp)


COUNTERMEASURE = CountermeasureTask()
