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
``cm_gap.png``; last ``run.json`` with the packages and hardware (docs/outputs.md).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pandas as pd

from interbias.run.conductor import RunOutcome
from interbias.run.inputs import RunOptions
from interbias.run.lock import RunLock
from interbias.run.results import content_run_id, hardware, package_versions, revision
from interbias.run.rundir import RESULTS, RunDir
from interbias.utils import atomic, crashpoints
from interbias.utils.errors import ConfigError
from interbias.utils.progress import Reporter

#: The model folder name of a CM run's per-cell scores and completion records (all models of a cell together).
CELL_KEY = "cm"


def cm_spec(exp: Any) -> dict[str, Any] | None:
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


def grid(exp: Any) -> tuple[tuple[str, str], str, list]:
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


def run(options: RunOptions, reporter: Reporter | None = None, *, exp: Any = None) -> RunOutcome:
    """``interbias run`` of a countermeasure experiment (module docstring). ``exp``: the experiment
    as loaded and checked by :func:`interbias.run.preflight.experiment_for_run` (None: loaded here)."""
    reporter = reporter or Reporter(quiet=options.quiet)
    return run_cm(options, reporter, default_encoders=tuple(RunOptions.encoders), exp=exp)


#: The name this conductor had before the run tasks (kept for callers of the old name).
run_cm_experiment = run


def cm_manifest(exp: Any, options: Any, cache: Path, reporter: Any) -> Any:
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


def run_cm(options: Any, reporter: Any, *, default_encoders: tuple[str, ...], exp: Any = None) -> RunOutcome:
    """Score (resuming by cell), analyse and write a CM experiment (module docstring)."""
    from interbias.cm.frontends import cm_frontend
    from interbias.corpora import check_runnable
    from interbias.experiments.schema import find_experiment, load_experiment
    from interbias.utils.paths import cache_dir, conditions_dir

    t0 = time.perf_counter()
    if exp is None:  # called directly, not through the preflight
        exp = load_experiment(find_experiment(options.experiment, conditions_dir()), corpus=options.corpus)
        check_runnable(exp, root=options.corpus_root)
    spec = cm_spec(exp)
    if spec is None:
        raise ConfigError(f"{exp.name}: not a countermeasure experiment (it has no countermeasures: section)")
    labels = choose_models(spec, list(options.encoders), default_encoders)
    cache = Path(options.cache_dir or cache_dir())
    manifest = cm_manifest(exp, options, cache, reporter)
    frontend = cm_frontend(exp)
    models = load_models(labels, resampler=frontend.resampler)
    checkpoints = {k: m.checkpoint_sha256 for k, m in models.items()}
    run_id = content_run_id(f"{exp.name}-cm", [exp.resolved(), manifest.sha256(), checkpoints])
    run = RunDir(Path(options.out) / run_id)
    with RunLock(run.path) as lock:
        if lock.previous_pid:
            reporter.notice(
                f"note: took over the lock of an earlier run (pid {lock.previous_pid}) that is no longer running"
            )
        atomic.remove_stale_temps(run.path)
        scores, failed, reused = score_all(exp, manifest, models, cache, reporter, frontend, run)
        atomic.write_csv(run.file("cm_scores.csv"), scores)
        ctx = {"exp": exp, "spec": spec, "models": models, "run_id": run_id, "failed": failed, "manifest": manifest}
        after = options.after_run
        analyses = after(run, scores, ctx, kind="countermeasure") if after else {}
        results = run.read_results() if run.file(RESULTS).is_file() else pd.DataFrame()
        record = {
            "run_id": run_id, "revision": revision(), "experiment": exp.resolved(), "command": options.command,
            "models": {k: m.provenance() for k, m in models.items()}, "frontend": frontend.record(),
            "manifest_sha256": manifest.sha256(), "n_failed": {k: len(v) for k, v in failed.items()},
            "n_failures": sum(len(v) for v in failed.values()),
            "failed_first": {k: v[:5] for k, v in failed.items() if v}, "cells_reused": reused,
            "packages": package_versions(), "hardware": hardware(), "analyses": analyses,
            "seconds": round(time.perf_counter() - t0, 2),
        }  # fmt: skip
        run.write_run_json(record)
    return RunOutcome(run.path, results, len(scores), 0, reused, [])


def load_models(labels: list[str], *, resampler: str = "polyphase") -> dict[str, Any]:
    from interbias.cm.models import load_cm

    return {label: load_cm(label, resampler=resampler) for label in labels}


def finished_cell(run: RunDir, cell_id: str, checkpoints: dict[str, str]) -> tuple[pd.DataFrame, list[str]] | None:
    """A finished cell's scores and failures when its completion record names these checkpoints."""
    rec = run.cell_record(CELL_KEY, cell_id)
    if rec is None or rec.get("checkpoints") != checkpoints:
        return None
    return run.read_scores(CELL_KEY, cell_id), list(rec.get("failed", []))


def check_rates(models: dict, frontend: Any) -> None:
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
    exp: Any, manifest: Any, models: dict, cache: Path, reporter: Any, frontend: Any, run: RunDir
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
    with reporter.task(f"{exp.name}: scoring {len(models)} CM(s)", len(cells)) as advance:
        for cell in cells:
            done = finished_cell(run, cell.id, checkpoints)
            if done is not None:
                frame, bad = done
                reused += 1
            else:
                utts = dev + ev if cell.id == ref else ev
                frame, bad = score_cell(models, manifest, utts, cell, cache, frontend)
                run.write_cell(CELL_KEY, cell.id, frame, {"cell": cell.id, "checkpoints": checkpoints, "failed": bad})
                crashpoints.reached("cell-done")
            frames.append(frame)
            failed[cell.id] = bad
            advance(1)
    return pd.concat(frames, ignore_index=True), failed, reused
