"""The run's quality-aware (QMF) calibration: ``scoring.calibration: {kind: qmf, measures: [...]}``.

Beside the linear calibration (:mod:`interbias.run.calibrate`, whose columns stay), one QMF
calibration per model, llr = a·score + Σ_m (w_m,min·q_m_min + w_m,max·q_m_max) + b, is fitted
by the prior-weighted logistic regression of :mod:`interbias.metrics.logistic` (prior ½,
Platt-smoothed labels) on the same trials as the linear one (the reference cells' dev trials,
or each cell's own with ``fit_on: each``) and applied to every cell's eval trials. The trial
features are the blind quality measures' min and max over its two sides
(:mod:`interbias.audio.quality`). Columns, at the first operating point unless suffixed:

- ``qmf_cllr`` (bits), ``qmf_act_dcf``, ``qmf_calibration_loss`` (= qmf_act_dcf − min_dcf at the point);
- ``qmf_threshold_drift``: the mean over the cell's eval trials of the QMF Bayes decision
  threshold in raw score units, (θ − Σ w·q − b)/a, minus that mean over the fitting trials;
- per further operating point NAME: ``qmf_act_dcf_NAME``, ``qmf_calibration_loss_NAME``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from interbias.audio.quality import feature_names
from interbias.metrics import verification as metrics
from interbias.metrics.llr import act_dcf, cllr
from interbias.metrics.logistic import LogisticFit, fit_logistic
from interbias.run.measured import calibration_trials, measured
from interbias.utils.errors import MetricError

if TYPE_CHECKING:
    from interbias.experiments.decision_spec import OperatingPoint
    from interbias.experiments.schema import Experiment

METHOD = "QMF: linear logistic, llr = a·score + Σ w·q + b, prior 0.5, Platt-smoothed labels"


def qmf_columns(points: Sequence[OperatingPoint]) -> list[str]:
    """The results columns a QMF run adds (after the linear calibration's)."""
    cols = ["qmf_cllr", "qmf_act_dcf", "qmf_calibration_loss", "qmf_threshold_drift"]
    for p in points[1:]:
        cols += [f"qmf_act_dcf_{p.name}", f"qmf_calibration_loss_{p.name}"]
    return cols


def _design(frame: pd.DataFrame, names: Sequence[str], rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(features [score, q…], labels) of ``frame``'s ``rows``; :class:`MetricError` when a
    measure is missing or not finite on one of them (never a silent drop)."""
    missing = [n for n in names[1:] if n not in frame.columns]
    if missing:
        raise MetricError(f"the scores lack quality measures {', '.join(missing)} (the run was scored without QMF)")
    x = frame[list(names)].to_numpy(np.float64)[rows]
    bad = ~np.isfinite(x).all(axis=0)
    if bad.any():
        n = int((~np.isfinite(x).all(axis=1)).sum())
        raise MetricError(f"{n} trial(s) lack a finite {', '.join(np.array(names)[bad])}: no QMF llr for them")
    return x, frame["label"].to_numpy()[rows]


def fit_qmf(frames: Sequence[pd.DataFrame], measures: Sequence[str]) -> tuple[LogisticFit, float]:
    """The QMF fit on the dev trials of ``frames`` and the mean decision threshold offset term
    over them (Σ w·q + b, for the drift column)."""
    names = ("score", *feature_names(measures))
    parts = [_design(f, names, calibration_trials(f)) for f in frames]
    if not sum(len(lab) for _, lab in parts):
        raise MetricError("no dev trials with quality measures to fit on")
    x = np.vstack([p[0] for p in parts])
    fit = fit_logistic(x, np.concatenate([p[1] for p in parts]), names)
    if not fit.weights[0] > 0:
        raise MetricError(f"the QMF score weight is {fit.weights[0]:.4g}: target trials do not score higher")
    return fit, float(np.mean(x[:, 1:] @ np.asarray(fit.weights[1:]) + fit.offset))


def qmf_values(
    frame: pd.DataFrame, fit: LogisticFit, fit_term: float, points: Sequence[OperatingPoint], min_dcfs: Sequence[float]
) -> dict[str, Any]:
    """One cell's QMF columns on its eval trials (``min_dcfs``: the cell's minDCF per point)."""
    x, lab = _design(frame, fit.names, measured(frame))
    llr = fit.llr(x)
    a, w = fit.weights[0], np.asarray(fit.weights[1:])
    term = x[:, 1:] @ w + fit.offset
    out: dict[str, Any] = {"qmf_cllr": cllr(llr, lab)}
    for i, (p, low) in enumerate(zip(points, min_dcfs, strict=True)):
        act = act_dcf(llr, lab, p.cost)
        if i == 0:
            out.update(qmf_act_dcf=act, qmf_calibration_loss=act - low)
            theta = p.cost.bayes_threshold
            out["qmf_threshold_drift"] = float(np.mean((theta - term) / a) - (theta - fit_term) / a)
        else:
            out.update({f"qmf_act_dcf_{p.name}": act, f"qmf_calibration_loss_{p.name}": act - low})
    return out


def cell_min_dcfs(frame: pd.DataFrame, points: Sequence[OperatingPoint]) -> list[float]:
    """The cell's minDCF on its eval trials at each of ``points``."""
    use = measured(frame)
    pts = metrics.threshold_sweep(frame["score"].to_numpy(np.float64)[use], frame["label"].to_numpy()[use])
    return [
        metrics.min_dcf_from_sweep(pts, p_target=p.cost.p_target, c_miss=p.cost.c_miss, c_fa=p.cost.c_fa)
        for p in points
    ]


def qmf_model(
    frames: dict[str, pd.DataFrame],
    refs: Sequence[str] | None,
    points: Sequence[OperatingPoint],
    measures: Sequence[str],
    rows: dict[str, dict[str, Any]],
) -> dict[str, Any]:
    """Fill one model's QMF columns in ``rows`` (cell id -> results row) from its score
    ``frames``, fitted on the dev trials of the ``refs`` cells pooled (``None``: each cell's
    own); return the record (the fit, or why not)."""
    if any(c.startswith("score_d") for f in frames.values() for c in f.columns):
        return {"error": "QMF calibration takes runs with one operator draw per cell"}
    shared = None
    if refs is not None:
        try:
            shared = fit_qmf([frames[c] for c in refs], measures)
        except MetricError as exc:
            return {"error": f"QMF calibration not fitted: {exc}"}
    record: dict[str, Any] = {"method": METHOD}
    if shared is not None:
        record.update(shared[0].record(), cells=list(refs or []))
    per_cell: dict[str, Any] = {}
    for cell_id, frame in frames.items():
        try:
            fit, term = shared if shared is not None else fit_qmf([frame], measures)
            rows[cell_id].update(qmf_values(frame, fit, term, points, cell_min_dcfs(frame, points)))
        except MetricError as exc:
            per_cell[cell_id] = {"error": str(exc)}
            continue
        if shared is None:
            per_cell[cell_id] = fit.record()
    if per_cell:
        record["per_cell"] = per_cell
    return record


def qmf_notices(models: dict[str, Any] | None) -> list[str]:
    """One console line per model whose QMF calibration was not fitted (``models``: the
    calibration record's, model -> record with its ``qmf``): the whole model, or how many of
    its cells (with the first one's reason). Those rows' ``qmf_`` columns are empty."""
    lines = []
    for model, rec in (models or {}).items():
        q = rec.get("qmf") or {}
        if "error" in q:
            lines.append(f"{model}: {q['error']}; its qmf_ columns are empty")
            continue
        failed = [(c, r["error"]) for c, r in (q.get("per_cell") or {}).items() if "error" in r]
        if failed:
            cell, why = failed[0]
            lines.append(
                f"{model}: QMF calibration not fitted in {len(failed)} cell(s) (first: {cell}: {why}); "
                "their qmf_ columns are empty"
            )
    return lines


def experiment_qmf_columns(exp: Experiment) -> list[str]:
    """:func:`qmf_columns` for an experiment with ``scoring.calibration.kind: qmf``, else none."""
    return qmf_columns(exp.operating_points) if exp.scoring.calibration.quality_aware else []
