"""Verification metrics as pure functions of (scores, labels). Higher score = more target-like.

A trial is accepted when its score is >= the threshold. A :class:`ThresholdSweep` puts a threshold
at every distinct score value (tied scores form one threshold) plus +inf (reject all), so the curves
run from (FPR, FNR) = (1, 0) to (0, 1). Everything is sort-based, O(N log N).

Each metric is registered (:mod:`interbias.metrics.registry`) right after its function, in
results.csv column order, with its value off a sweep (``sweep``: what :func:`summarize` reads) and
its weighted twin from :mod:`interbias.metrics.weighted` when it has one.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from interbias.metrics.operating_points import P_TARGET  # set there; most callers import it from here
from interbias.metrics.registry import FRACTION, MetricSpec, register, specs
from interbias.metrics.weighted import eer_legacy_points, eer_points, min_dcf_points
from interbias.utils.errors import MetricError

#: The false-acceptance rate at which ``frr_at_far1`` reads the false-rejection rate.
FAR_TARGET = 0.01


@dataclass(frozen=True)
class ThresholdSweep:
    """Counts at ascending thresholds (every distinct score, then +inf); rates on demand.

    Between consecutive thresholds at least one score changes sides, so FNR − FPR is
    strictly increasing along the sweep.
    """

    thresholds: np.ndarray
    #: Targets and non-targets strictly below each threshold (int64; the last: all of them).
    t_lo: np.ndarray
    n_lo: np.ndarray
    #: Targets with a score equal to each finite threshold.
    tgt_at: np.ndarray
    n_target: int
    n_nontarget: int

    def fnr_at(self, k: int) -> np.float64:
        return self.t_lo[k] / self.n_target

    def fpr_at(self, k: int) -> np.float64:
        return np.float64(self.n_nontarget - self.n_lo[k]) / self.n_nontarget

    @cached_property
    def fnr(self) -> np.ndarray:
        """P(s < t | target) at each threshold."""
        return self.t_lo / self.n_target

    @cached_property
    def fpr(self) -> np.ndarray:
        """P(s >= t | non-target) at each threshold."""
        out = np.subtract(self.n_nontarget, self.n_lo, dtype=np.float64)
        out /= self.n_nontarget
        return out

    @cached_property
    def non_at(self) -> np.ndarray:
        """Non-targets with a score equal to each finite threshold."""
        return np.diff(self.n_lo)

    @property
    def non_below(self) -> np.ndarray:
        """Non-targets scoring strictly below each finite threshold."""
        return self.n_lo[:-1]


#: Thresholds per piece when minimising the detection cost.
_CHUNK = 1 << 16
#: Below this many (target, non-target) pairs the AUC is summed in int64 (no overflow).
_EXACT_PAIRS = 2**61


def _validate(scores: object, labels: object) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(scores, dtype=np.float64)
    lab = np.asarray(labels)
    if s.ndim != 1 or lab.ndim != 1:
        raise MetricError("scores and labels must be one-dimensional")
    if len(s) != len(lab):
        raise MetricError(f"scores ({len(s)}) and labels ({len(lab)}) differ in length")
    if lab.dtype != bool:
        if not np.isin(lab, (0, 1)).all():
            raise MetricError("labels must be 1 (target) or 0 (non-target)")
        lab = lab.astype(bool)
    if not np.isfinite(s).all():
        raise MetricError(f"{int((~np.isfinite(s)).sum())} score(s) are NaN or infinite")
    n_t = int(lab.sum())
    if n_t == 0:
        raise MetricError("no target trials: the metric is undefined")
    if n_t == len(lab):
        raise MetricError("no non-target trials: the metric is undefined")
    return s, lab


def finite_scores(values: object, what: str) -> np.ndarray:
    """``values`` as a non-empty 1-D float64 array of finite scores; else one
    :class:`MetricError` starting with ``what`` (which scores: ``"a-DCF spoof"``, ``"scores"``)."""
    s = np.asarray(values, dtype=np.float64)
    if s.ndim != 1 or len(s) == 0:
        raise MetricError(f"{what}: need a non-empty one-dimensional array of scores")
    if not np.isfinite(s).all():
        raise MetricError(f"{what}: {int((~np.isfinite(s)).sum())} score(s) are NaN or infinite")
    return s


def validate_scores(scores: object, labels: object, *, allow_inf: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(float64 scores, bool labels) after the checks every metric makes (1-D, equal length,
    labels 0/1 or bool, both classes present, finite scores — with ``allow_inf``: not NaN)."""
    if not allow_inf:
        return _validate(scores, labels)
    s = np.asarray(scores, dtype=np.float64)
    if np.isnan(s).any():
        raise MetricError(f"{int(np.isnan(s).sum())} score(s) are NaN")
    _, lab = _validate(np.where(np.isinf(s), 0.0, s), labels)
    return s, lab


def threshold_sweep(scores: object, labels: object) -> ThresholdSweep:
    """Counts (and rates) at every distinct threshold: FNR(t) = P(s < t | target),
    FPR(t) = P(s >= t | non-target).

    One sort of all scores gives the distinct thresholds and, at each, the number of scores
    below it; the sorted target scores, located among the thresholds by binary search, give
    the targets at each threshold; non-targets below is the difference. No rate array is
    built until asked for.
    """
    s, lab = _validate(scores, labels)
    tgt = np.sort(s[lab])
    merged = np.sort(s)
    n_t = len(tgt)
    n = len(merged)
    n_n = n - n_t
    keep = np.empty(n, dtype=bool)
    keep[0] = True
    np.not_equal(merged[1:], merged[:-1], out=keep[1:])
    starts = np.flatnonzero(keep)
    del keep
    n_u = len(starts)
    thresholds = np.empty(n_u + 1)
    np.take(merged, starts, out=thresholds[:n_u])
    thresholds[n_u] = np.inf
    del merged
    tgt_at = np.bincount(np.searchsorted(thresholds[:n_u], tgt), minlength=n_u)
    del tgt
    t_lo = np.empty(n_u + 1, dtype=np.int64)
    t_lo[0] = 0
    np.cumsum(tgt_at, out=t_lo[1:])
    n_lo = np.empty(n_u + 1, dtype=np.int64)
    np.subtract(starts, t_lo[:n_u], out=n_lo[:n_u])
    n_lo[n_u] = n_n
    return ThresholdSweep(thresholds, t_lo, n_lo, tgt_at, n_t, n_n)


def _crossing(p: ThresholdSweep) -> int:
    """The first k with FNR_k − FPR_k >= 0 (binary search: the difference increases)."""
    lo, hi = 0, len(p.thresholds) - 1  # at +inf: FNR 1, FPR 0
    while lo < hi:
        mid = (lo + hi) // 2
        if p.fnr_at(mid) - p.fpr_at(mid) >= 0:
            hi = mid
        else:
            lo = mid + 1
    return lo


def eer_from_sweep(p: ThresholdSweep) -> tuple[float, float]:
    """(EER, threshold) at the interpolated crossing of the miss and false-alarm curves.

    With d_k = FNR_k − FPR_k (non-decreasing in k), take the first k with d_k >= 0; if d_k > 0
    interpolate linearly between points k−1 and k: α = −d_{k−1} / (d_k − d_{k−1}),
    EER = FNR_{k−1} + α (FNR_k − FNR_{k−1}) (= the same combination of FPR). This is the
    crossing of the piecewise-linear ROC with the diagonal FNR = FPR (what scikit-learn's
    ``roc_curve`` + ``brentq`` computes). The threshold is interpolated the same way (the
    upper point's threshold when it is +inf).
    """
    k = _crossing(p)
    fnr_k, d_k = p.fnr_at(k), p.fnr_at(k) - p.fpr_at(k)
    if d_k == 0 or k == 0:
        return float(fnr_k), float(p.thresholds[k])
    fnr_j = p.fnr_at(k - 1)
    d_j = fnr_j - p.fpr_at(k - 1)
    a = -d_j / (d_k - d_j)
    eer = fnr_j + a * (fnr_k - fnr_j)
    lo, hi = p.thresholds[k - 1], p.thresholds[k]
    thr = hi if not np.isfinite(hi) else lo + a * (hi - lo)
    return float(eer), float(thr)


def eer(scores: object, labels: object) -> float:
    """Equal error rate, interpolated crossing of FNR and FPR (fraction, 0.01 = 1 %)."""
    return eer_from_sweep(threshold_sweep(scores, labels))[0]


# EER lies in [0, 1] (1 on inverted scores): U = 1; 0.5 is the chance reference, not a bound
register(
    MetricSpec(
        "eer",
        eer,
        FRACTION,
        eer_points,
        sweep=lambda p: eer_from_sweep(p)[0],
        chance=0.5,
        upper=1.0,
        rate=True,
        column=True,
        draw_sd=True,
        summary=True,
    )
)


def eer_legacy_from_sweep(p: ThresholdSweep) -> float:
    """InterBias-SV's EER: the operating point minimising |FPR − FNR|, the two rates averaged.

    Ties go to the highest threshold (the first such point in scikit-learn's ``roc_curve``
    order with ``drop_intermediate=False``). Not interpolated: it can differ from :func:`eer`
    by up to half the rate step at the crossing.
    """
    k = _crossing(p)  # |FPR − FNR| is smallest at k or k − 1 (the difference increases)
    if k > 0 and abs(p.fnr_at(k - 1) - p.fpr_at(k - 1)) < abs(p.fnr_at(k) - p.fpr_at(k)):
        k -= 1
    return float((p.fpr_at(k) + p.fnr_at(k)) / 2)


def eer_legacy(scores: object, labels: object) -> float:
    return eer_legacy_from_sweep(threshold_sweep(scores, labels))


register(
    MetricSpec(
        "eer_legacy",
        eer_legacy,
        FRACTION,
        eer_legacy_points,
        sweep=eer_legacy_from_sweep,
        chance=0.5,
        upper=1.0,
        rate=True,
        column=True,
    )
)


def min_dcf_from_sweep(
    p: ThresholdSweep, *, p_target: float = P_TARGET, c_miss: float = 1.0, c_fa: float = 1.0
) -> float:
    """Normalised minimum detection cost.

    C(t) = C_miss·P_miss(t)·p + C_fa·P_fa(t)·(1 − p), minimised over all thresholds (accept-all
    and reject-all included) and divided by min(C_miss·p, C_fa·(1 − p)); hence in [0, 1].
    """
    if not 0 < p_target < 1:
        raise MetricError(f"p_target must be in (0, 1), got {p_target}")
    if c_miss <= 0 or c_fa <= 0:
        raise MetricError("c_miss and c_fa must be positive")
    best = np.inf
    for start in range(0, len(p.t_lo), _CHUNK):  # cache-sized pieces, no full-length temporaries
        fnr = p.t_lo[start : start + _CHUNK] / p.n_target
        fpr = np.subtract(p.n_nontarget, p.n_lo[start : start + _CHUNK], dtype=np.float64)
        fpr /= p.n_nontarget
        cost = c_miss * fnr * p_target + c_fa * fpr * (1 - p_target)
        best = min(best, cost.min())
    return float(best / min(c_miss * p_target, c_fa * (1 - p_target)))


def min_dcf(
    scores: object, labels: object, *, p_target: float = P_TARGET, c_miss: float = 1.0, c_fa: float = 1.0
) -> float:
    return min_dcf_from_sweep(threshold_sweep(scores, labels), p_target=p_target, c_miss=c_miss, c_fa=c_fa)


register(
    MetricSpec(
        "min_dcf",
        min_dcf,
        "normalised detection cost",
        min_dcf_points,
        sweep=min_dcf_from_sweep,
        interval="reflected",
        skewed=True,
        every_point=True,
        column=True,
        draw_sd=True,
        summary=True,
        upper=1.0,  # normalised: the thresholds that accept or reject everything cost 1
        p_target=P_TARGET,
    )
)


def auc_from_sweep(p: ThresholdSweep) -> float:
    """Area under the ROC: P(s_target > s_non) + ½·P(s_target = s_non) (Mann–Whitney).

    Twice the wins, Σ_k tgt_at_k·(n_lo_k + n_lo_{k+1}), is summed exactly in integers."""
    pairs = p.n_target * p.n_nontarget
    if pairs < _EXACT_PAIRS:
        wins2 = int(np.dot(p.tgt_at, p.n_lo[:-1])) + int(np.dot(p.tgt_at, p.n_lo[1:]))
        return wins2 / (2 * pairs)
    wins = np.sum(p.tgt_at * (p.non_below + 0.5 * p.non_at), dtype=np.float64)
    return float(wins / pairs)


def auc(scores: object, labels: object) -> float:
    return auc_from_sweep(threshold_sweep(scores, labels))


AUC_WHY = "the bootstrap form of AUC is not built (and higher is better)"
register(
    MetricSpec(
        "auc",
        auc,
        FRACTION,
        sweep=auc_from_sweep,
        better="higher",
        column=True,
        summary=True,
        no_interval=AUC_WHY,
    )
)


def frr_at_far_from_sweep(p: ThresholdSweep, far: float = FAR_TARGET) -> float:
    """False-rejection rate at the lowest threshold whose false-acceptance rate is at most ``far``.

    Over the sweep's thresholds t_k (every distinct score, then +inf; a trial is accepted when
    s >= t_k, so tied scores are accepted or rejected together, as for :func:`eer` and
    :func:`min_dcf`), FPR_k = #(non-targets with s >= t_k) / #non-targets is non-increasing;
    take the first k with FPR_k <= ``far`` (float64 rates, as in the sweep) and return
    FNR_k = #(targets with s < t_k) / #targets. Not interpolated: the achievable operating point
    at or below the FAR. With fewer than 1/``far`` non-targets it is the FRR at zero false
    acceptances (t above the highest non-target score).
    """
    if not 0 < far < 1:
        raise MetricError(f"far must be in (0, 1), got {far}")
    lo, hi = 0, len(p.thresholds) - 1  # at +inf: FPR 0
    while lo < hi:
        mid = (lo + hi) // 2
        if p.fpr_at(mid) <= far:
            hi = mid
        else:
            lo = mid + 1
    return float(p.fnr_at(lo))


def frr_at_far1(scores: object, labels: object) -> float:
    """FRR (fraction) at FAR <= 1 %: :func:`frr_at_far_from_sweep` at :data:`FAR_TARGET`."""
    return frr_at_far_from_sweep(threshold_sweep(scores, labels))


# no weighted twin (so no bootstrap or analyze --metric): its intervals would need min_dcf's
# small-support check (n_nontarget·FAR >= 10); no chance level: random scores give 0.99, and so
# can a system whose few highest non-targets outscore every target however well it ranks the rest,
# so a value above 0.99 does not mean that the scores rank the classes the wrong way round
FRR_WHY = (
    "it is read at the one threshold where FAR reaches 1 %, set by the few highest non-target "
    "scores, and its interval would need minDCF's small-support check (n_nontarget × FAR >= 10)"
)
register(
    MetricSpec(
        "frr_at_far1",
        frr_at_far1,
        FRACTION,
        sweep=frr_at_far_from_sweep,
        rate=True,
        column=True,
        upper=1.0,
        summary=True,
        no_interval=FRR_WHY,
    )
)


@dataclass(frozen=True)
class Summary:
    """Every metric of the registry that reads a sweep (:attr:`MetricSpec.sweep`), in results.csv
    column order (``summary["eer"]``), the EER's threshold and the trial counts."""

    values: dict[str, float]
    eer_threshold: float
    n_target: int
    n_nontarget: int

    def __getitem__(self, metric: str) -> float:
        return self.values[metric]

    def as_dict(self) -> dict[str, float | int]:
        return {**self.values, "n_target": self.n_target, "n_nontarget": self.n_nontarget}


def summarize(scores: object, labels: object, *, p_target: float = P_TARGET) -> Summary:
    """All metrics from one sort; a metric read at a prior (:attr:`MetricSpec.p_target`) at ``p_target``."""
    p = threshold_sweep(scores, labels)
    values = {
        s.name: s.sweep(p, p_target=p_target) if s.p_target is not None else s.sweep(p)
        for s in specs()
        if s.sweep is not None
    }
    return Summary(values, eer_from_sweep(p)[1], p.n_target, p.n_nontarget)


def det_curve(scores: object, labels: object) -> tuple[np.ndarray, np.ndarray]:
    """(FPR, FNR) at every distinct threshold, for DET plots."""
    p = threshold_sweep(scores, labels)
    return p.fpr, p.fnr


def rates_at(scores: object, labels: object, threshold: float) -> tuple[float, float]:
    """(FPR, FNR) when accepting scores >= ``threshold``."""
    s, lab = _validate(scores, labels)
    accept = s >= threshold
    return float(accept[~lab].mean()), float((~accept[lab]).mean())
