"""Metrics of one cell under many trial weightings at once (bootstrap and permutation replicates).

A replicate is a vector of non-negative trial weights ``w`` (``B`` replicates → a ``B × N``
matrix). With integer weights, the metric of a replicate equals the metric of the trial set in
which trial ``i`` appears ``w_i`` times (``np.repeat``): at each distinct score ``u_k`` (and
+inf), ``FNR_k = Σ_{target, s<u_k} w / Σ_target w`` and ``FPR_k = Σ_{non, s≥u_k} w / Σ_non w``.
A score whose trials all have weight 0 gives a duplicate of the next operating point, which
changes neither the interpolated crossing nor the minimum. Estimators are those of
:mod:`interbias.metrics.verification` (``eer`` interpolated, ``eer_legacy`` nearest point, ``min_dcf``
normalised at ``verification.P_TARGET``), computed with the same floating-point operations.

Cost per replicate block: one gather and one cumulative sum per class over the trials, then
for the EERs a binary search per replicate for the crossing (d_k = FNR_k − FPR_k is
non-decreasing in k), O(B log K) instead of evaluating every operating point. A replicate
without target or without non-target weight has an undefined metric: NaN.

The kernels here (``*_points``) are the weighted twins that :mod:`interbias.metrics.verification`
registers beside each metric (:attr:`interbias.metrics.registry.MetricSpec.weighted`); the
drivers run the twin a metric's spec names, so a metric with a twin needs nothing added here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from interbias.metrics.operating_points import P_TARGET
from interbias.metrics.registry import replicable, spec
from interbias.utils.errors import AnalysisError, MetricError

#: Replicates evaluated together are capped so that one block holds about this many weights.
_BLOCK_CELLS = 4_000_000


@dataclass(frozen=True)
class SortedCell:
    """A cell sorted once: each class's trial positions by ascending score, and for every
    distinct score u_k (then +inf) how many targets / non-targets score below it."""

    n: int
    target_order: np.ndarray
    nontarget_order: np.ndarray
    t_below: np.ndarray  # length K + 1; last entry = number of targets
    n_below: np.ndarray


def sort_cell(scores: np.ndarray, labels: np.ndarray) -> SortedCell:
    s = np.asarray(scores, dtype=np.float64)
    lab = np.asarray(labels).astype(bool)
    if s.ndim != 1 or s.shape != lab.shape:
        raise MetricError("scores and labels must be one-dimensional and of equal length")
    if not np.isfinite(s).all():
        raise MetricError(f"{int((~np.isfinite(s)).sum())} score(s) are NaN or infinite")
    t_idx, n_idx = np.flatnonzero(lab), np.flatnonzero(~lab)
    t_order = t_idx[np.argsort(s[t_idx], kind="stable")]
    n_order = n_idx[np.argsort(s[n_idx], kind="stable")]
    uniq = np.unique(s)
    t_below = np.append(np.searchsorted(s[t_order], uniq, side="left"), len(t_order))
    n_below = np.append(np.searchsorted(s[n_order], uniq, side="left"), len(n_order))
    return SortedCell(len(s), t_order, n_order, t_below, n_below)


def _cumulative(w: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Row-wise cumulative weights with a leading 0 column: out[:, j] = Σ of the first j."""
    out = np.zeros((len(w), len(order) + 1))
    np.cumsum(w[:, order], axis=1, out=out[:, 1:])
    return out


class _Points:
    """FNR/FPR of every replicate at operating point k, evaluated on demand (``ct``, ``cn``:
    replicates × cumulative weights of each class in score order, with a leading 0 column)."""

    def __init__(
        self,
        cell: SortedCell,
        w: np.ndarray | None = None,
        *,
        ct: np.ndarray | None = None,
        cn: np.ndarray | None = None,
    ) -> None:
        self.ct = _cumulative(w, cell.target_order) if ct is None else ct
        self.cn = _cumulative(w, cell.nontarget_order) if cn is None else cn
        self.tb, self.nb = cell.t_below, cell.n_below
        self.n_t = self.ct[:, -1]
        self.n_n = self.cn[:, -1]
        self.rows = np.arange(len(self.ct))
        self.k_max = len(self.tb) - 1

    def at(self, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        fnr = self.ct[self.rows, self.tb[k]] / self.n_t
        fpr = (self.n_n - self.cn[self.rows, self.nb[k]]) / self.n_n
        return fnr, fpr

    def d(self, k: np.ndarray) -> np.ndarray:
        fnr, fpr = self.at(k)
        return fnr - fpr

    def first(self, pred_ge: np.ndarray | None = None) -> np.ndarray:
        """Per row, the first k with d_k >= 0 (or with d_k > ``pred_ge`` when given)."""
        lo = np.zeros(len(self.rows), dtype=np.int64)
        hi = np.full(len(self.rows), self.k_max, dtype=np.int64)  # d at +inf is 1
        while (lo < hi).any():
            mid = (lo + hi) // 2
            dm = self.d(mid)
            ok = dm >= 0 if pred_ge is None else dm > pred_ge
            active = lo < hi
            hi = np.where(active & ok, mid, hi)
            lo = np.where(active & ~ok, mid + 1, lo)
        return lo


def eer_points(p: _Points) -> np.ndarray:
    """Row-wise :func:`interbias.metrics.verification.eer_from_sweep` (same operations, same floats)."""
    k = p.first()
    km1 = np.maximum(k - 1, 0)
    fnr_k, fpr_k = p.at(k)
    fnr_1, fpr_1 = p.at(km1)
    dk, dk1 = fnr_k - fpr_k, fnr_1 - fpr_1
    exact = (dk == 0) | (k == 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        a = -dk1 / (dk - dk1)
        interp = fnr_1 + a * (fnr_k - fnr_1)
    return np.where(exact, fnr_k, interp)


def eer_legacy_points(p: _Points) -> np.ndarray:
    """Row-wise :func:`interbias.metrics.verification.eer_legacy_from_sweep`: the last k minimising |d_k|.

    With d non-decreasing, the minimum of |d| is at k* (first d ≥ 0) or k* − 1; when it is at
    k* (or tied), the last minimiser is the last k with d_k = d_{k*}."""
    k = p.first()
    km1 = np.maximum(k - 1, 0)
    dk, dk1 = p.d(k), p.d(km1)
    before = (k > 0) & (np.abs(dk1) < np.abs(dk))
    after = p.first(pred_ge=dk)  # first k with d_k > d_{k*} (the last point when none is)
    last = np.where(p.d(after) > dk, after - 1, after)
    pick = np.where(before, km1, last)
    fnr, fpr = p.at(pick)
    return (fpr + fnr) / 2


def min_dcf_points(p: _Points, p_target: float = P_TARGET, c_miss: float = 1.0, c_fa: float = 1.0) -> np.ndarray:
    ks = np.arange(p.k_max + 1)
    fnr = p.ct[:, p.tb[ks]] / p.n_t[:, None]
    fpr = (p.n_n[:, None] - p.cn[:, p.nb[ks]]) / p.n_n[:, None]
    cost = c_miss * p_target * fnr + c_fa * (1 - p_target) * fpr
    return cost.min(axis=1) / min(c_miss * p_target, c_fa * (1 - p_target))


def batch_metrics() -> tuple[str, ...]:
    """The metrics :func:`metric_batch` and :func:`metric_by_class` evaluate: those whose spec
    has a raw-score weighted twin."""
    return replicable(calibrated=False)


def _twin(metric: str) -> Callable[[_Points], np.ndarray]:
    if metric not in batch_metrics():
        raise AnalysisError(f"replicated metric {metric!r} is not supported; valid: {', '.join(batch_metrics())}")
    return spec(metric).weighted


def metric_batch(metric: str, cell: SortedCell, weights: np.ndarray) -> np.ndarray:
    """The metric under each row of ``weights`` (``B × N``, trial order of the unsorted cell)."""
    return _batched(cell, weights, _twin(metric))


def min_dcf_batch(cell: SortedCell, weights: np.ndarray, p_target: float, c_miss: float, c_fa: float) -> np.ndarray:
    """Normalised minimum DCF at (``p_target``, ``c_miss``, ``c_fa``) under each row of
    ``weights``: min over the operating points of (C_miss·p·FNR + C_fa·(1 − p)·FPR) / min(C_miss·p,
    C_fa·(1 − p)); ``min_dcf`` of :func:`metric_batch` is the unit-cost case at ``verification.P_TARGET``."""
    return _batched(cell, weights, lambda p: min_dcf_points(p, p_target, c_miss, c_fa))


#: Most trials per chunk of :class:`_ClassSums` (a running sum is a chunk total plus at most this many).
_CHUNK = 256


class _ClassSums:
    """Running weight sums of one class in score order for the replicates ``cols``, without the
    ``trials × replicates`` cumulative matrix: chunk totals are summed once (int64, exact), and
    the sum of the first ``p`` weights is a chunk total plus the partial chunk, read on demand."""

    def __init__(self, w: np.ndarray, cols: np.ndarray) -> None:
        n, b = w.shape
        self.chunk = size = max(1, min(_CHUNK, n // 64))  # a small class: (nearly) the whole running sum
        full = n // size
        totals = np.zeros((full + 1, b), dtype=np.int64)
        totals[:full] = w[: full * size].reshape(full, size, b).sum(axis=1, dtype=np.int64)
        totals[full] = w[full * size :].sum(axis=0, dtype=np.int64)
        self.base = np.zeros((full + 2, b), dtype=np.int64)
        np.cumsum(totals, axis=0, out=self.base[1:])
        self.w, self.cols, self.n = w, cols, n
        self.total = self.base[-1]
        self.offsets = np.arange(size)

    def at(self, pos: np.ndarray) -> np.ndarray:
        """Per replicate ``cols[j]``, the sum of its first ``pos[j]`` weights (int64)."""
        chunk, within = pos // self.chunk, pos % self.chunk
        if self.chunk == 1:
            return self.base[chunk, self.cols]
        idx = np.minimum(chunk[:, None] * self.chunk + self.offsets, max(0, self.n - 1))
        part = self.w[idx, self.cols[:, None]] if self.n else np.zeros(idx.shape, dtype=np.int64)
        part = np.where(self.offsets < within[:, None], part, 0).sum(axis=1, dtype=np.int64)
        return self.base[chunk, self.cols] + part


class _LazyPoints(_Points):
    """:class:`_Points` whose FNR/FPR come from :class:`_ClassSums` (the same exact sums)."""

    def __init__(self, cell: SortedCell, ts: _ClassSums, ns: _ClassSums) -> None:
        self.ts, self.ns = ts, ns
        self.tb, self.nb = cell.t_below, cell.n_below
        self.n_t = ts.total[ts.cols].astype(np.float64)
        self.n_n = ns.total[ns.cols].astype(np.float64)
        self.rows = np.arange(len(ts.cols))
        self.k_max = len(self.tb) - 1

    def at(self, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        fnr = self.ts.at(self.tb[k]).astype(np.float64) / self.n_t
        fpr = (self.n_n - self.ns.at(self.nb[k]).astype(np.float64)) / self.n_n
        return fnr, fpr


def _full_cumulative(w: np.ndarray) -> np.ndarray:
    """Replicates × (1 + trials) running sums of score-ordered trial-major weights ``w``."""
    out = np.zeros((len(w) + 1, w.shape[1]), dtype=np.int64)
    np.cumsum(w, axis=0, dtype=np.int64, out=out[1:])
    return out.astype(np.float64).T


def metric_by_class(metric: str, cell: SortedCell, w_target: np.ndarray, w_nontarget: np.ndarray) -> np.ndarray:
    """:func:`metric_batch` with the same values, from integer weights given per class in score
    order and trial major: ``w_target`` is ``weights[:, cell.target_order].T`` (targets ×
    replicates), ``w_nontarget`` likewise. The EERs read their O(log K) operating points from
    chunk totals (:class:`_ClassSums`, no cumulative matrix); min DCF, which reads every point,
    sums the whole block. The caller bounds memory by passing a block of replicates."""
    twin = _twin(metric)
    wt, wn = np.asarray(w_target), np.asarray(w_nontarget)
    if wt.shape != (len(cell.target_order), wn.shape[1]) or wn.shape[0] != len(cell.nontarget_order):
        raise AnalysisError(
            f"class weights must be (targets × replicates) and (non-targets × replicates), got {wt.shape}, {wn.shape}"
        )
    if wt.dtype.kind not in "iu" or wn.dtype.kind not in "iu":
        raise AnalysisError(f"class weights must be integers, got {wt.dtype}, {wn.dtype}")
    if (wt < 0).any() or (wn < 0).any():
        raise AnalysisError("trial weights must be non-negative")
    out = np.full(wt.shape[1], np.nan)
    if not spec(metric).every_point:
        cols = np.arange(wt.shape[1])
        ts, ns = _ClassSums(wt, cols), _ClassSums(wn, cols)
        valid = np.flatnonzero((ts.total > 0) & (ns.total > 0))
        if len(valid):
            ts.cols = ns.cols = valid
            out[valid] = twin(_LazyPoints(cell, ts, ns))
        return out
    ct, cn = _full_cumulative(wt), _full_cumulative(wn)
    valid = (ct[:, -1] > 0) & (cn[:, -1] > 0)
    if valid.any():
        out[valid] = twin(_Points(cell, ct=ct[valid], cn=cn[valid]))
    return out


def _batched(cell: SortedCell, weights: np.ndarray, func: Callable[[_Points], np.ndarray]) -> np.ndarray:
    """``func`` of each block of replicates (rows of ``weights``) with both classes weighted;
    NaN for the others."""
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 2 or w.shape[1] != cell.n:
        raise AnalysisError(f"weights must be (replicates × {cell.n} trials), got {w.shape}")
    if (w < 0).any():
        raise AnalysisError("trial weights must be non-negative")
    out = np.full(len(w), np.nan)
    step = max(1, _BLOCK_CELLS // max(1, cell.n))
    for lo in range(0, len(w), step):
        block = w[lo : lo + step]
        p = _Points(cell, block)
        valid = (p.n_t > 0) & (p.n_n > 0)
        if valid.any():
            p = _Points(cell, block[valid]) if not valid.all() else p
            part = out[lo : lo + step]
            part[valid] = func(p)
    return out
