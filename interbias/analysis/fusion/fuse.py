"""Linear logistic score fusion of a run's models (BOSARIS style): a new model in a copy of the run.

The fused score of a trial is an LLR, ``w_1·s_1 + … + w_K·s_K + b``, with (w, b) the
prior-weighted logistic fit (:func:`interbias.metrics.logistic.fit_logistic`, prior ½,
Platt-smoothed labels) on the dev trials of the reference cells — the cells the run's
calibration is fitted on: every acoustic factor at its reference level — pooled. It is applied
unchanged to every cell. The fused model's label is ``A+B fused``; it gets per-cell score files,
completion records and results rows (metrics of its eval trials, then the calibration stage's
columns), and the fairness report is recomputed, so analyze, report, fairness and plan read
it like any other model. A trial dropped for any fused model is dropped for the fusion.

The output is written to a new directory (a copy of the run's own files plus the fused model;
never the source run's analysis or report, which do not know the fused model), built beside it
and renamed into place at the end, so a refused or failed fusion leaves nothing. It holds
``fusion_comparison.csv``: the fused model against each component, macro and per cell, with
intervals (:mod:`interbias.analysis.fusion.paired`). ``interbias fuse`` then analyses the copy and
writes its report, which opens with that comparison.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from interbias.analysis.fusion.compare import COMPARISON, NoDev, copy_run_files, no_dev_advice, verdicts
from interbias.analysis.fusion.paired import N_BOOT, paired_comparison
from interbias.analysis.groups.fairness import fairness_for_run
from interbias.metrics import verification as metrics
from interbias.metrics.logistic import LogisticFit, fit_logistic
from interbias.run.calibrate import calibrate_rows, reference_cells, trial_masks
from interbias.run.measured import measured
from interbias.run.rundir import CALIBRATION, RESULTS, RUN_JSON, TRIALS_META, RunDir
from interbias.utils import atomic
from interbias.utils.errors import MetricError, RunError

if TYPE_CHECKING:
    from interbias.experiments.schema import Cell, Experiment

METHOD = (
    "linear logistic fusion, llr = Σ w_k·score_k + b, prior 0.5, Platt-smoothed labels, reference cells' dev trials"
)
#: Columns a fused row takes from its first model's row unchanged (cell identity and trial counts).
_KEPT = (
    "experiment",
    "dataset",
    "cell",
    "stratum",
    "enrol_chain",
    "test_chain",
    "chain_fingerprint",
    "trials_sha256",
    "seed",
)


@dataclass(frozen=True)
class Fusion:
    """A written fusion: its label, the fit, and the output directory."""

    label: str
    fit: LogisticFit
    out: Path
    cells: list[str]
    #: One line per component: fused vs it, macro and per cell (:func:`compare.verdicts`).
    verdicts: list[str]
    #: The source run's files not copied (its analysis and report outputs).
    left: list[str]


def fused_label(models: Sequence[str]) -> str:
    """``A+B fused`` for models A, B."""
    return "+".join(models) + " fused"


def _check_request(run: RunDir, results: pd.DataFrame, models: Sequence[str], out: Path) -> None:
    if len(models) < 2:
        raise RunError("fuse needs at least two models (--models A,B)")
    twice = sorted({m for m in models if list(models).count(m) > 1})
    if twice:
        raise RunError(f"cannot fuse {twice[0]} with itself: name each model once")
    present = list(dict.fromkeys(results["model"].astype(str)))
    for m in models:
        if m not in present:
            raise RunError(f"model {m} is not in {run.path} (its models: {', '.join(present)})")
    if out.exists():
        raise RunError(f"{out} already exists; choose a new --out directory")
    label = fused_label(models)
    if label in present:
        raise RunError(f"{run.path} already holds a model {label}")


def _frames(run: RunDir, models: Sequence[str], cell_ids: Sequence[str]) -> dict[str, list[pd.DataFrame]]:
    """cell -> the models' score frames, checked to hold one trial list (same ids, labels, order)."""
    out: dict[str, list[pd.DataFrame]] = {}
    for cell in cell_ids:
        frames = [run.read_scores(m, cell) for m in models]
        first = frames[0]
        for m, f in zip(models[1:], frames[1:], strict=True):
            same = len(f) == len(first) and np.array_equal(f["trial_id"].to_numpy(), first["trial_id"].to_numpy())
            if not same or not np.array_equal(f["label"].to_numpy(), first["label"].to_numpy()):
                raise RunError(f"cell {cell}: {m} and {models[0]} were scored on different trial lists; cannot fuse")
        if any(len([c for c in f.columns if c.startswith("score_d")]) for f in frames):
            raise RunError("fuse takes runs with one operator draw per cell (trials.operator_draws: 1)")
        out[cell] = frames
    return out


def _features(frames: Sequence[pd.DataFrame], rows: np.ndarray | None = None) -> np.ndarray:
    x = np.column_stack([f["score"].to_numpy(np.float64) for f in frames])
    return x if rows is None else x[rows]


def fit_fusion(models: Sequence[str], frames: dict[str, list[pd.DataFrame]], ref_cells: Sequence[str]) -> LogisticFit:
    """The fusion weights on the reference cells' dev trials (trials no model dropped)."""
    xs, labs = [], []
    for cell in ref_cells:
        fs = frames[cell]
        dev = trial_masks(fs[0])[1] & ~np.logical_or.reduce([f["dropped"].to_numpy(bool) for f in fs])
        xs.append(_features(fs, dev))
        labs.append(fs[0]["label"].to_numpy()[dev])
    if not ref_cells or not sum(len(lab) for lab in labs):
        raise RunError("the run has no dev trials in its reference cells to fit a fusion on")
    try:
        return fit_logistic(np.vstack(xs), np.concatenate(labs), tuple(models))
    except MetricError as exc:
        raise RunError(f"fusion not fitted: {exc}") from exc


def fused_frame(frames: Sequence[pd.DataFrame], fit: LogisticFit) -> pd.DataFrame:
    """The fused model's score frame: the first frame with ``score`` = fused LLR (NaN where
    dropped), without its quality-measure columns."""
    dropped = np.logical_or.reduce([f["dropped"].to_numpy(bool) for f in frames])
    # a quality measure of one model's side (its embedding magnitude) is not the fusion's: left out
    out = frames[0].drop(columns=[c for c in frames[0].columns if c.startswith("q_")])
    score = fit.llr(_features(frames))
    score[dropped] = np.nan
    out["score"] = score
    out["dropped"] = dropped
    return out


def fused_row(template: dict[str, Any], frame: pd.DataFrame, label: str, models: Sequence[str]) -> dict[str, Any]:
    """The fused model's results row: metrics of its measured trials, identity from ``template``."""
    use = measured(frame)
    summary = metrics.summarize(frame["score"].to_numpy()[use], frame["label"].to_numpy()[use]).as_dict()
    row = {k: (template[k] if k in _KEPT else None) for k in template}
    for k in ("n_speakers", "n_utterances", "n_failed", "n_dropped_trials") + tuple(
        k for k in template if k.startswith(("factor_", "level_", "ref_"))
    ):
        if k in template:
            row[k] = template[k]
    row.update(summary)
    row.update(model=label, family="fusion", encoder_source="fusion of " + ", ".join(models))
    row["n_dropped_trials"] = int(frame["dropped"].sum())
    return row


def _no_dev(run: RunDir, exp: Experiment) -> NoDev:
    """What the refusal of a run without a dev split reads: run.json's command, trials.json's speakers per stratum."""
    strata = (run.read_json(TRIALS_META) or {}).get("strata") or {}
    speakers = [int(v["n_speakers"]) for v in strata.values() if isinstance(v, dict) and "n_speakers" in v]
    command = (run.read_json(RUN_JSON) or {}).get("command")
    return NoDev(exp.name, command, speakers, exp.trials.min_speakers, exp.trials.list_file is not None)


def fuse_run(run_path: Path, models: Sequence[str], out: Path, *, n_boot: int = N_BOOT) -> Fusion:
    """Fuse ``models`` of the run at ``run_path`` into ``out`` (see the module doc); ``n_boot``:
    the comparison's replicates."""
    run = RunDir(run_path)
    if run.missing(RESULTS, RUN_JSON) or not run.has_scores:
        raise RunError(f"{run.path} is not a finished run directory (results.csv, run.json, scores/)")
    results = run.read_results(keep_default_na=False, na_values=[""])
    exp = run.experiment()
    if exp is None:
        raise RunError(f"{run.path} holds no experiment.resolved.json")
    if any(f.type == "backend" for f in exp.factors):
        raise RunError(
            f"{run.path}: {exp.name} has a back-end factor; a fusion is fitted once over the reference cells, which "
            "hold several back-ends' scores: run the experiment once per back-end (scoring.backend) and fuse those"
        )
    _check_request(run, results, models, out)
    trials = run.read_trials().frame
    if "split" not in trials.columns or not bool((trials["split"] == "dev").any()):
        raise RunError(no_dev_advice(run.path, _no_dev(run, exp)))
    have = [set(results.loc[results["model"] == m, "cell"].astype(str)) for m in models]
    cells = [c for c in exp.cells() if all(c.id in h for h in have)]
    frames = _frames(run, models, [c.id for c in cells])
    refs = [c.id for c in reference_cells(exp, cells)]
    fit = fit_fusion(models, frames, refs)
    label = fused_label(models)
    tmp = out.with_name(f".{out.name}.partial-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        left = copy_run_files(run.path, tmp)  # never the source run's analysis or report
        _write(RunDir(tmp), exp, cells, results, frames, fit, label, models, refs)
        compared = paired_comparison(RunDir(tmp), label, models, n_boot=n_boot)
        atomic.write_csv(tmp / COMPARISON, compared)
        os.replace(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return Fusion(label, fit, out, [c.id for c in cells], verdicts(compared, label), left)


def _write(
    dest: RunDir,
    exp: Experiment,
    cells: Sequence[Cell],
    results: pd.DataFrame,
    frames: dict[str, list[pd.DataFrame]],
    fit: LogisticFit,
    label: str,
    models: Sequence[str],
    refs: Sequence[str],
) -> None:
    """Score files, cell records and rows of the fused model; calibration, results, fairness, run.json."""
    first = results[results["model"] == models[0]].set_index("cell", drop=False)
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for cell in cells:
        frame = fused_frame(frames[cell.id], fit)
        row = fused_row(first.loc[cell.id].to_dict(), frame, label, models)
        dest.write_cell(label, cell.id, frame, {"row": row, "fusion": fit.record()})
        rows[(label, cell.id)] = row
    calibration = dest.read_calibration()
    fused_cal = calibrate_rows(dest, exp, [label], cells, rows, has_dev=True)
    models_cal = {**((calibration.models if calibration else None) or {}), **(fused_cal.models or {})}
    merged = fused_cal.to_json() if calibration is None else {**calibration.to_json(), "models": models_cal}
    atomic.write_text(dest.file(CALIBRATION), json.dumps(merged, indent=2, sort_keys=True, default=str) + "\n")
    new = pd.DataFrame([rows[(label, c.id)] for c in cells], columns=list(results.columns))
    dest.append_results(new)
    record = dest.read_json(RUN_JSON) or {}
    record["calibration"] = merged
    record.setdefault("fusions", {})[label] = {
        "method": METHOD,
        "models": list(models),
        "cells": list(refs),
        **fit.record(),
    }
    atomic.write_text(dest.file(RUN_JSON), json.dumps(record, indent=2, sort_keys=True, default=str) + "\n")
    report = fairness_for_run(dest.path)
    if report is not None:
        report.write(dest.path)
