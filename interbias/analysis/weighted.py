"""Metrics of one cell under many trial weightings at once (bootstrap and permutation replicates).

A replicate is a vector of non-negative trial weights ``w`` (``B`` replicates → a ``B × N``
matrix). With integer weights, the metric of a replicate equals the metric of the trial set in
which trial ``i`` appears ``w_i`` times (``np.repeat``): the rates at each distinct score are
``FNR(t) = Σ_{target, s<t} w / Σ_target w`` and ``FPR(t) = Σ_{non, s≥t} w / Σ_non w``. A score
whose trials all have weight 0 gives a duplicate of the next operating point, which changes
neither the interpolated crossing nor the minimum. The scores are sorted once per cell; each
replicate costs two cumulative sums. Estimators are those of :mod:`interbias.metrics`
(``eer`` interpolated, ``eer_legacy`` nearest point, ``min_dcf`` normalised at p_target 0.01).
A replicate without target or without non-target weight has an undefined metric: NaN.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from interbias.errors import AnalysisError, MetricError

METRICS = ("eer", "eer_legacy", "min_dcf")
#: Replicates evaluated together are capped so that one block holds about this many weights.
_BLOCK_CELLS = 2_000_000


@dataclass(frozen=True)
class SortedCell:
    """A cell's scores sorted once: ``order`` into the original trials, tie-group starts."""

    order: np.ndarray
    is_target: np.ndarray
    starts: np.ndarray

    @property
    def n(self) -> int:
        return len(self.order)


def sort_cell(scores: np.ndarray, labels: np.ndarray) -> SortedCell:
    s = np.asarray(scores, dtype=np.float64)
    lab = np.asarray(labels).astype(bool)
    if s.ndim != 1 or s.shape != lab.shape:
        raise MetricError("scores and labels must be one-dimensional and of equal length")
    if not np.isfinite(s).all():
        raise MetricError(f"{int((~np.isfinite(s)).sum())} score(s) are NaN or infinite")
    order = np.argsort(s, kind="stable")
    ss = s[order]
    keep = np.ones(len(ss), dtype=bool)
    if len(ss) > 1:
        np.not_equal(ss[1:], ss[:-1], out=keep[1:])
    return SortedCell(order, lab[order], np.flatnonzero(keep))


def _rates(cell: SortedCell, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(FNR, FPR, valid) with one row per replicate; columns are thresholds ascending + inf."""
    w = np.asarray(weights, dtype=np.float64)[:, cell.order]
    wt = np.where(cell.is_target, w, 0.0)
    wn = w - wt
    ct = np.cumsum(wt, axis=1)
    cn = np.cumsum(wn, axis=1)
    n_t = ct[:, -1:] if ct.shape[1] else np.zeros((len(w), 1))
    n_n = cn[:, -1:] if cn.shape[1] else np.zeros((len(w), 1))
    before = cell.starts - 1
    t_lo = np.where(before >= 0, ct[:, np.maximum(before, 0)], 0.0)
    n_lo = np.where(before >= 0, cn[:, np.maximum(before, 0)], 0.0)
    valid = (n_t[:, 0] > 0) & (n_n[:, 0] > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        fnr = np.concatenate([t_lo, n_t], axis=1) / n_t
        fpr = (n_n - np.concatenate([n_lo, n_n], axis=1)) / n_n
    return fnr, fpr, valid


def _eer(fnr: np.ndarray, fpr: np.ndarray) -> np.ndarray:
    """Row-wise :func:`interbias.metrics.eer_from_points` (same operations, same floats)."""
    d = fnr - fpr
    rows = np.arange(len(d))
    k = np.argmax(d >= 0, axis=1)
    km1 = np.maximum(k - 1, 0)
    dk, dk1 = d[rows, k], d[rows, km1]
    exact = (dk == 0) | (k == 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        a = -dk1 / (dk - dk1)
        interp = fnr[rows, km1] + a * (fnr[rows, k] - fnr[rows, km1])
    return np.where(exact, fnr[rows, k], interp)


def _eer_legacy(fnr: np.ndarray, fpr: np.ndarray) -> np.ndarray:
    gap = np.abs(fpr - fnr)
    last = gap.shape[1] - 1 - np.argmin(gap[:, ::-1], axis=1)
    rows = np.arange(len(gap))
    return (fpr[rows, last] + fnr[rows, last]) / 2


def _min_dcf(fnr: np.ndarray, fpr: np.ndarray, p_target: float = 0.01) -> np.ndarray:
    cost = fnr * p_target + fpr * (1 - p_target)
    return cost.min(axis=1) / min(p_target, 1 - p_target)


_FUNCS = {"eer": _eer, "eer_legacy": _eer_legacy, "min_dcf": _min_dcf}


def metric_batch(metric: str, cell: SortedCell, weights: np.ndarray) -> np.ndarray:
    """The metric under each row of ``weights`` (``B × N``, trial order of the unsorted cell)."""
    if metric not in _FUNCS:
        raise AnalysisError(f"replicated metric {metric!r} is not supported; valid: {', '.join(METRICS)}")
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 2 or w.shape[1] != cell.n:
        raise AnalysisError(f"weights must be (replicates × {cell.n} trials), got {w.shape}")
    if (w < 0).any():
        raise AnalysisError("trial weights must be non-negative")
    out = np.full(len(w), np.nan)
    step = max(1, _BLOCK_CELLS // max(1, cell.n))
    for lo in range(0, len(w), step):
        fnr, fpr, valid = _rates(cell, w[lo : lo + step])
        if valid.any():
            vals = _FUNCS[metric](fnr[valid], fpr[valid])
            block = out[lo : lo + step]
            block[valid] = vals
    return out
