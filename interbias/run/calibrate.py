"""The run's calibration stage: fit a linear calibration per model and add each cell's
calibration columns to its results row (after every cell is scored; see docs/calibration.md).

With ``calibration.fit_on: reference`` (the default) one calibration per model is fitted on
the dev trials of the reference condition — every cell whose acoustic factors are all at their
reference level, population strata pooled: the system as tuned on clean speech — and applied
unchanged to the eval trials of every cell. ``fit_on: each`` fits on each cell's own dev
trials (an oracle). A run with a back-end factor fits one calibration per model and back-end
level, on that level's reference cells (calibration.json ``by_backend``; ``per_cell`` says which
fit each cell met). A run without dev trials gets empty calibration columns and says why in
run.json. Columns, at the experiment's first operating point unless suffixed:

- ``cllr`` (bits) of the calibrated llrs, ``min_cllr`` (bits, PAV on the raw scores);
- ``act_dcf``: normalised DCF of the decisions llr >= Bayes threshold; ``calibration_loss`` =
  act_dcf − minDCF at the same point; ``dcf_point``: that point's name;
- ``threshold_drift``: the cell's EER threshold minus the calibration trials' EER threshold
  (raw score units);
- per further operating point NAME: ``min_dcf_NAME``, ``act_dcf_NAME``, ``calibration_loss_NAME``.

With ``trials: {operator_draws: K}`` a cell's scores file holds one score column per draw
(``score``, ``score_d1`` …). The calibration is fitted once per model on the reference cells'
dev trials pooled over all their draws: the deployed system has one calibration and does not
know which realisation of the reference condition it meets, so every draw is an equally valid
sample of that condition (a per-draw fit would turn nuisance randomness into different systems).
It is applied to each draw's eval trials; every column above is then the mean over the cell's
draws (as ``eer`` is), ``act_dcf_draw_sd`` and ``calibration_loss_draw_sd`` give the
between-draw SD (ddof 1; 0 for a cell with one draw), and calibration.json ``per_draw`` lists
each draw's ``act_dcf`` and ``calibration_loss`` per model and cell.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from interbias.experiments.decision_spec import OperatingPoint
from interbias.metrics import verification as metrics
from interbias.metrics.calibration import LinearCalibration, fit_linear
from interbias.metrics.deployed import deployed_point
from interbias.metrics.llr import act_dcf, cllr, min_cllr
from interbias.run.measured import calibration_trials, measured
from interbias.run.qmf import experiment_qmf_columns, qmf_model
from interbias.run.rundir import CalibrationRecord
from interbias.utils.errors import MetricError

if TYPE_CHECKING:
    from interbias.experiments.schema import Cell, Experiment
    from interbias.run.rundir import RunDir

METHOD = "linear logistic, llr = a·score + b, prior 0.5, Platt-smoothed labels"
#: Results columns added by this stage in runs with ``operator_draws`` > 1 (after the draw columns).
DRAW_CALIBRATION_COLUMNS = ["act_dcf_draw_sd", "calibration_loss_draw_sd"]


def calibration_columns(points: Sequence[OperatingPoint]) -> list[str]:
    """The results columns this stage fills for an experiment with ``points``."""
    cols = ["cllr", "min_cllr", "act_dcf", "calibration_loss", "threshold_drift", "dcf_point"]
    for p in points[1:]:
        cols += [f"min_dcf_{p.name}", f"act_dcf_{p.name}", f"calibration_loss_{p.name}"]
    return cols


def score_columns(frame: pd.DataFrame) -> list[str]:
    """The frame's per-draw score columns in draw order: ``score`` (draw 0), ``score_d1``, …"""
    extra = sorted((c for c in frame.columns if c.startswith("score_d") and c[7:].isdigit()), key=lambda c: int(c[7:]))
    return ["score", *extra]


def trial_masks(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(eval, dev) masks of a scores frame: the trials the row measured and the ones a calibration
    is fitted on (:mod:`interbias.run.measured`; no dev trials without a split column)."""
    return measured(frame), calibration_trials(frame)


def cell_values(
    scores: np.ndarray,
    labels: np.ndarray,
    cal: LinearCalibration,
    points: Sequence[OperatingPoint],
    fit_threshold: float,
) -> dict[str, Any]:
    """The calibration columns of one cell's eval trials under ``cal`` (see the module doc)."""
    llr = cal.llr(scores)
    pts = metrics.threshold_sweep(scores, labels)
    out: dict[str, Any] = {"cllr": cllr(llr, labels), "min_cllr": min_cllr(scores, labels)}
    for i, p in enumerate(points):
        act = act_dcf(llr, labels, p.cost)
        low = metrics.min_dcf_from_sweep(pts, p_target=p.cost.p_target, c_miss=p.cost.c_miss, c_fa=p.cost.c_fa)
        if i == 0:
            out.update(act_dcf=act, calibration_loss=act - low, dcf_point=p.name)
        else:
            out.update({f"min_dcf_{p.name}": low, f"act_dcf_{p.name}": act, f"calibration_loss_{p.name}": act - low})
    out["threshold_drift"] = metrics.eer_from_sweep(pts)[1] - fit_threshold
    return out


def reference_cells(exp: Experiment, cells: Sequence[Cell]) -> list[Cell]:
    """Cells with every acoustic factor at its reference level (all population levels, all
    back-end levels: a run with a back-end factor fits one calibration per back-end on its
    level's reference cells)."""
    refs = {f.name: f.reference for f in exp.acoustic_factors}
    return [c for c in cells if all(dict(c.levels)[f] == r for f, r in refs.items())]


def _fit(frames: Sequence[pd.DataFrame]) -> tuple[LinearCalibration, float, dict[str, Any]]:
    """Fit on the dev trials of ``frames``, every draw's scores pooled: (calibration, its
    trials' EER threshold, record)."""
    parts = [(f.loc[m, col].to_numpy(np.float64), f.loc[m, "label"].to_numpy()) for f in frames
             for m in [trial_masks(f)[1]] for col in score_columns(f)]  # fmt: skip
    if not sum(len(s) for s, _ in parts):
        raise MetricError("no dev trials to fit on")
    s, lab = np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
    cal = fit_linear(s, lab)
    thr = metrics.eer_from_sweep(metrics.threshold_sweep(s, lab))[1]
    return cal, thr, {**cal.record(), "eer_threshold": thr}


def _model(
    run: RunDir, exp: Experiment, model: str, cells: Sequence[Cell], rows: dict[tuple[str, str], dict[str, Any]]
) -> dict[str, Any]:
    """Fill the calibration columns of ``model``'s rows; return its provenance record."""
    frames = {c.id: run.read_scores(model, c.id) for c in cells if (model, c.id) in rows}
    points = exp.operating_points
    record: dict[str, Any] = {}
    fits: dict[str, tuple[LinearCalibration, float, dict[str, Any]]] = {}
    by_level = any(f.type == "backend" for f in exp.factors)  # one calibration per back-end
    kind_of = {c.id: exp.backend_of(c) if by_level else "" for c in cells}
    if exp.calibration.fit_on == "reference":
        for kind in dict.fromkeys(kind_of.values()):
            ids = [c.id for c in reference_cells(exp, cells) if c.id in frames and kind_of[c.id] == kind]
            try:
                fit = fits[kind] = _fit([frames[i] for i in ids])
            except MetricError as exc:
                return {"error": f"{model}: calibration{f' of back-end {kind}' if kind else ''} not fitted: {exc}"}
            rec = {**fit[2], "cells": ids}
            rec["decision_thresholds"] = {p.name: fit[0].score_at(p.cost.bayes_threshold) for p in points}
            if by_level:
                record.setdefault("by_backend", {})[kind] = rec
            else:
                record = rec
    shared = fits.get("") if not by_level else None
    per_cell: dict[str, Any] = {}
    per_draw: dict[str, Any] = {}
    for cell_id, frame in frames.items():
        try:
            cal, thr, rec = fits[kind_of[cell_id]] if fits else _fit([frame])
            use = trial_masks(frame)[0]
            labels = frame["label"].to_numpy()[use]
            draws = [
                cell_values(frame[col].to_numpy(np.float64)[use], labels, cal, points, thr)
                for col in score_columns(frame)
            ]
        except MetricError as exc:
            per_cell[cell_id] = {"error": str(exc)}
            continue
        rows[(model, cell_id)].update(combine_draw_values(draws, exp.trials.operator_draws > 1))
        if len(draws) > 1:
            per_draw[cell_id] = {k: [d[k] for d in draws] for k in ("act_dcf", "calibration_loss")}
        if shared is None:  # fit_on each, or a back-end factor: the fit this cell's scores met
            per_cell[cell_id] = rec if not by_level else {**rec, "backend": kind_of[cell_id]}
    if per_cell:
        record["per_cell"] = per_cell
    if per_draw:
        record["per_draw"] = per_draw
    return record


def combine_draw_values(draws: Sequence[dict[str, Any]], drawn_run: bool) -> dict[str, Any]:
    """One cell's calibration columns from its draws' (:func:`cell_values`): numbers averaged,
    ``dcf_point`` kept; in a run with draws, the between-draw SD (ddof 1) of ``act_dcf`` and
    ``calibration_loss`` (0 for one draw)."""
    out = {k: (v if isinstance(v, str) else float(np.mean([d[k] for d in draws]))) for k, v in draws[0].items()}
    if drawn_run:
        for k in ("act_dcf", "calibration_loss"):
            out[f"{k}_draw_sd"] = float(np.std([d[k] for d in draws], ddof=1)) if len(draws) > 1 else 0.0
    return out


def calibrate_rows(
    run: RunDir,
    exp: Experiment,
    models: Sequence[str],
    cells: Sequence[Cell],
    rows: dict[tuple[str, str], dict[str, Any]],
    *,
    has_dev: bool,
) -> CalibrationRecord:
    """Add the calibration columns to ``rows`` ((model, cell id) -> results row) from the run's
    scores files and write calibration.json; returns the record (what was fitted on what, or
    why not: then no calibration.json is written, run.json carries the record)."""
    spec = exp.calibration
    points = [p.record() for p in exp.operating_points]
    drawn = DRAW_CALIBRATION_COLUMNS if exp.trials.operator_draws > 1 else []
    qmf = experiment_qmf_columns(exp)
    for row in rows.values():
        for col in [*calibration_columns(exp.operating_points), *drawn, *qmf]:
            row[col] = np.nan if col != "dcf_point" else ""
    if not has_dev:
        reason = "the run has no dev split (set trials.dev_share): the calibration columns are empty"
        return CalibrationRecord(spec.fit_on, spec.split, METHOD, points, measured=False, reason=reason)
    fitted = {m: _model(run, exp, m, cells, rows) for m in models}
    if qmf:
        for m in models:
            frames = {c.id: run.read_scores(m, c.id) for c in cells if (m, c.id) in rows}
            refs = [c.id for c in reference_cells(exp, cells) if c.id in frames] if spec.fit_on == "reference" else None
            mine = {cid: rows[(m, cid)] for cid in frames}
            measures = exp.scoring.calibration.measures
            fitted[m]["qmf"] = qmf_model(frames, refs, exp.operating_points, measures, mine)
    record = CalibrationRecord(spec.fit_on, spec.split, METHOD, points, measured=True, models=fitted)
    run.write_calibration(record)
    return record


def group_values(
    scores: np.ndarray, labels: np.ndarray, cal: tuple[float, float], point: OperatingPoint
) -> dict[str, Any]:
    """``act_dcf``, ``min_dcf_at_point``, ``calibration_loss`` and ``cllr`` of one group's trials
    under the shared calibration ``cal`` = (slope, offset) at ``point``, and the group's
    ``far_deployed``, ``frr_deployed`` and ``cdet`` at the deployed threshold
    (:mod:`interbias.metrics.deployed`); NaN when the group lacks target or non-target trials."""
    lab = np.asarray(labels).astype(bool)
    names = ("act_dcf", "min_dcf_at_point", "calibration_loss", "cllr", "far_deployed", "frr_deployed", "cdet")
    if lab.all() or not lab.any():
        return dict.fromkeys(names, np.nan)
    llr = cal[0] * np.asarray(scores, dtype=np.float64) + cal[1]
    act = act_dcf(llr, lab, point.cost)
    low = metrics.min_dcf(scores, lab, p_target=point.cost.p_target, c_miss=point.cost.c_miss, c_fa=point.cost.c_fa)
    out = {"act_dcf": act, "min_dcf_at_point": low, "calibration_loss": act - low, "cllr": cllr(llr, lab)}
    dp = deployed_point(scores, lab, cal[0], cal[1], point.cost) if cal[0] > 0 else None
    out.update(
        far_deployed=dp.far if dp else np.nan, frr_deployed=dp.frr if dp else np.nan, cdet=dp.cdet if dp else np.nan
    )
    return out
