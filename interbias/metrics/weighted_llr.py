"""Calibration metrics of one cell at the run's shared calibration, under many trial weightings
(the analysis metrics ``act_dcf``, ``calibration_loss`` and ``cllr``).

The calibration is the one the run fitted per model on the reference condition's dev trials
(``calibration: {fit_on: reference}``, run.json ``calibration``) and applied unchanged to every
cell and every group level: llr = slope·score + offset. A bootstrap or permutation replicate
reweights the cell's eval trials and keeps that calibration fixed (it is never refitted), so an
interval says how much the deployed system's cost varies with the speakers drawn, not how a
re-tuned system would do. With weights w (a trial of weight k counts k times), at the run's
first operating point (p, C_miss, C_fa), η = log(C_fa·(1 − p)/(C_miss·p)):

    P_miss = Σ_tar w·[llr < η] / Σ_tar w,   P_fa = Σ_non w·[llr >= η] / Σ_non w,
    act_dcf = (C_miss·p·P_miss + C_fa·(1 − p)·P_fa) / min(C_miss·p, C_fa·(1 − p)),
    calibration_loss = act_dcf − min over thresholds of the same normalised cost (raw scores),
    cllr = ½·[Σ_tar w·log2(1 + e^−llr)/Σ_tar w + Σ_non w·log2(1 + e^llr)/Σ_non w]   (bits).

With unit weights these are the results.csv columns of :mod:`interbias.run.calibrate`. A
replicate without target or non-target weight gives NaN.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from interbias.metrics import verification as metrics
from interbias.metrics.llr import CostPoint, act_dcf, cllr
from interbias.metrics.registry import MetricSpec, register, replicable
from interbias.metrics.weighted import SortedCell, min_dcf_batch, sort_cell
from interbias.utils.errors import AnalysisError, MetricError


@dataclass(frozen=True)
class SharedCalibration:
    """One model's shared calibration llr = slope·score + offset and act_dcf's operating point."""

    model: str
    slope: float
    offset: float
    point: CostPoint

    @classmethod
    def of_run(cls, record: Any, model: str) -> SharedCalibration:
        """From the run's calibration record (an :class:`interbias.run.rundir.CalibrationRecord`,
        ``RunDir.read_calibration``); :class:`AnalysisError` unless the run fitted a shared
        calibration (``fit_on: reference``) for ``model``."""
        require_shared(record)
        shared = record.shared(model)
        if shared is None:
            raise AnalysisError(
                f"no shared calibration for model {model!r}: {record.model(model).get('error', 'not in the record')}"
            )
        if not record.operating_points:
            raise AnalysisError("the run's calibration record names no operating point")
        p = record.operating_points[0]
        try:
            point = CostPoint(float(p["p_target"]), float(p["c_miss"]), float(p["c_fa"]))
        except (KeyError, TypeError, ValueError, MetricError) as exc:
            raise AnalysisError(f"the calibration record's first operating point is not usable: {exc}") from None
        return cls(model, *shared, point)

    def llr(self, scores: np.ndarray) -> np.ndarray:
        return self.slope * np.asarray(scores, dtype=np.float64) + self.offset

    def value(self, metric: str, scores: np.ndarray, labels: np.ndarray) -> float:
        """``metric`` of the trials with unit weights (the results.csv column's formula)."""
        _check(metric)
        llr = self.llr(scores)
        if metric == "cllr":
            return cllr(llr, labels)
        act = act_dcf(llr, labels, self.point)
        if metric == "act_dcf":
            return act
        c = self.point
        return act - metrics.min_dcf(scores, labels, p_target=c.p_target, c_miss=c.c_miss, c_fa=c.c_fa)

    def batch(
        self, metric: str, scores: np.ndarray, labels: np.ndarray, weights: np.ndarray, cell: SortedCell | None = None
    ) -> np.ndarray:
        """``metric`` under each row of ``weights`` (replicates × trials); NaN where a class has no
        weight. ``cell``: the trials already sorted (:func:`sort_cell`), else sorted here."""
        _check(metric)
        s = np.asarray(scores, dtype=np.float64)
        lab = np.asarray(labels).astype(bool)
        w = np.asarray(weights, dtype=np.float64)
        if w.ndim != 2 or w.shape[1] != len(s):
            raise AnalysisError(f"weights must be (replicates × {len(s)} trials), got {w.shape}")
        wt, wn = w[:, lab], w[:, ~lab]
        n_t, n_n = wt.sum(axis=1), wn.sum(axis=1)
        valid = (n_t > 0) & (n_n > 0)
        out = np.full(len(w), np.nan)
        if not valid.any():
            return out
        wt, wn, n_t, n_n = wt[valid], wn[valid], n_t[valid], n_n[valid]
        llr = self.llr(s)
        if metric == "cllr":
            tar = _row_dots(wt, np.logaddexp(0.0, -llr[lab])) / n_t
            non = _row_dots(wn, np.logaddexp(0.0, llr[~lab])) / n_n
            out[valid] = 0.5 * (tar + non) / math.log(2)
            return out
        c, eta = self.point, self.point.bayes_threshold  # sums of integer weights: exact in any order
        p_miss = wt @ (llr[lab] < eta).astype(float) / n_t
        p_fa = wn @ (llr[~lab] >= eta).astype(float) / n_n
        act = (c.c_miss * c.p_target * p_miss + c.c_fa * (1 - c.p_target) * p_fa) / c.norm
        if metric == "act_dcf":
            out[valid] = act
            return out
        low = min_dcf_batch(cell or sort_cell(s, lab), w[valid], c.p_target, c.c_miss, c.c_fa)
        out[valid] = act - low
        return out


def _calibrated(name: str, units: str, *, skewed: bool) -> MetricSpec:
    """The spec of a calibration metric: :meth:`SharedCalibration.value` and its twin :meth:`SharedCalibration.batch`."""

    def value(cal: SharedCalibration, scores: np.ndarray, labels: np.ndarray) -> float:
        return cal.value(name, scores, labels)

    def batch(
        cal: SharedCalibration,
        scores: np.ndarray,
        labels: np.ndarray,
        weights: np.ndarray,
        cell: SortedCell | None = None,
    ) -> np.ndarray:
        return cal.batch(name, scores, labels, weights, cell)

    return MetricSpec(name, value, units, batch, calibrated=True, skewed=skewed)


_AT_POINT = "normalised detection cost at the first operating point and each model's shared calibration"
register(_calibrated("act_dcf", _AT_POINT, skewed=True))
register(_calibrated("calibration_loss", _AT_POINT, skewed=True))
register(_calibrated("cllr", "bits, at each model's shared calibration", skewed=False))

#: Analysis metrics read at the run's shared calibration.
CALIBRATED_METRICS = replicable(calibrated=True)


def _row_dots(w: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``w @ v`` summed in an order fixed per row (numpy's pairwise sum of each row), so a
    replicate's value does not depend on which replicates share the call: a BLAS matrix-vector
    product's last bits do (its kernel for groups of rows and its thread split differ)."""
    return np.multiply(w, v).sum(axis=1)


def require_shared(record: Any) -> None:
    """:class:`AnalysisError` saying why not unless the run's calibration record (a
    :class:`interbias.run.rundir.CalibrationRecord` or ``None``) holds a shared calibration
    (``fit_on: reference``, measured)."""
    if record is None:
        raise AnalysisError("calibration metrics need the run's calibration record (run.json beside results.csv)")
    if why := record.lacks_shared():
        raise AnalysisError(f"calibration metrics are read at the shared calibration, which this run lacks: {why}")


def _check(metric: str) -> None:
    if metric not in CALIBRATED_METRICS:
        raise AnalysisError(f"{metric!r} is not a calibration metric; valid: {', '.join(CALIBRATED_METRICS)}")
