"""Calibration metrics of log-likelihood ratios, as pure functions of (llrs, labels).

A log-likelihood ratio (natural log) llr = log p(s | target) / p(s | non-target) is
*calibrated* when Bayes decisions made with it are optimal. A trial is accepted when
llr >= the Bayes threshold of the operating point. Definitions follow BOSARIS / PYLLR
(Brümmer & du Preez 2006; van Leeuwen & Brümmer 2007):

- Cllr = ½·[mean_tar log2(1 + e^(−llr)) + mean_non log2(1 + e^(llr))], in bits; 0 is perfect,
  1 is an uninformative system that always says llr = 0;
- minCllr: the Cllr after the best monotone (non-decreasing) recalibration of the scores,
  found by the pool-adjacent-violators algorithm (PAV; equivalently the ROC convex hull);
  tied scores are pooled first, so they always receive one llr;
- actDCF: the normalised detection cost of the decisions llr >= −log(β),
  β = C_miss·p / (C_fa·(1 − p)), the Bayes threshold of the operating point.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from interbias.metrics.verification import P_TARGET, min_dcf_from_sweep, threshold_sweep, validate_scores
from interbias.utils.errors import MetricError

_LOG2 = math.log(2.0)


@dataclass(frozen=True)
class CostPoint:
    """An operating point of a detection cost function: target prior and the two costs."""

    p_target: float = P_TARGET
    c_miss: float = 1.0
    c_fa: float = 1.0

    def __post_init__(self) -> None:
        if not 0 < self.p_target < 1:
            raise MetricError(f"p_target must be in (0, 1), got {self.p_target}")
        if not (self.c_miss > 0 and self.c_fa > 0):
            raise MetricError(f"c_miss and c_fa must be positive, got {self.c_miss} and {self.c_fa}")

    @property
    def bayes_threshold(self) -> float:
        """−log β = log(C_fa·(1 − p) / (C_miss·p)): accept when llr >= this (natural-log LLR)."""
        return math.log(self.c_fa * (1 - self.p_target) / (self.c_miss * self.p_target))

    @property
    def effective_prior(self) -> float:
        """p̃ = C_miss·p / (C_miss·p + C_fa·(1 − p)) = 1 / (1 + e^η): the equivalent prior at unit costs."""
        return 1.0 / (1.0 + math.exp(self.bayes_threshold))

    @property
    def norm(self) -> float:
        """min(C_miss·p, C_fa·(1 − p)): the cost of the better of accept-all and reject-all."""
        return min(self.c_miss * self.p_target, self.c_fa * (1 - self.p_target))


def cllr(llrs: object, labels: object) -> float:
    """Cllr in bits (see the module doc); ±inf llrs are allowed (a wrong infinite one gives inf)."""
    s, lab = validate_scores(llrs, labels, allow_inf=True)
    tar = np.logaddexp(0.0, -s[lab]).mean()
    non = np.logaddexp(0.0, s[~lab]).mean()
    return float(0.5 * (tar + non) / _LOG2)


def pav_llrs(scores: object, labels: object) -> np.ndarray:
    """The optimal monotone llr of every trial (PAV on the scores, ties pooled first).

    PAV fits the non-decreasing step function P(target | s) closest in squared error to the
    labels (which minimises every proper scoring rule at once); its log-odds minus the
    empirical prior log-odds log(N_tar / N_non) is the llr. Pooled blocks with only
    non-targets get −inf, with only targets +inf.
    """
    s, lab = validate_scores(scores, labels)
    order = np.argsort(s, kind="stable")
    ss, ll = s[order], lab[order].astype(np.float64)
    starts = np.flatnonzero(np.r_[True, ss[1:] != ss[:-1]])
    sums = list(np.add.reduceat(ll, starts))
    weights = list(np.diff(np.r_[starts, len(ss)]).astype(np.float64))
    # Pool adjacent violators on the tie blocks (a stack of merged blocks).
    st_sum: list[float] = []
    st_w: list[float] = []
    st_n: list[int] = []
    for total, w in zip(sums, weights, strict=True):
        n = 1
        while st_sum and st_sum[-1] / st_w[-1] >= total / w:
            total += st_sum.pop()
            w += st_w.pop()
            n += st_n.pop()
        st_sum.append(total)
        st_w.append(w)
        st_n.append(n)
    means = np.repeat(np.array(st_sum) / np.array(st_w), st_n)  # one value per tie block
    p = np.repeat(means, np.diff(np.r_[starts, len(ss)]))
    n_t = float(lab.sum())
    with np.errstate(divide="ignore"):
        logit = np.log(p) - np.log1p(-p)
    out = np.empty(len(s))
    out[order] = logit - math.log(n_t / (len(s) - n_t))
    return out


def min_cllr(scores: object, labels: object) -> float:
    """minCllr in bits: Cllr of :func:`pav_llrs` (the discrimination part of Cllr)."""
    return cllr(pav_llrs(scores, labels), labels)


def act_dcf(llrs: object, labels: object, point: CostPoint = CostPoint()) -> float:
    """Normalised actual DCF: [C_miss·p·P_miss + C_fa·(1 − p)·P_fa] / min(C_miss·p, C_fa·(1 − p))
    with P_miss = P(llr < η | target), P_fa = P(llr >= η | non-target), η the Bayes threshold."""
    s, lab = validate_scores(llrs, labels, allow_inf=True)
    eta = point.bayes_threshold
    p_miss = float((s[lab] < eta).mean())
    p_fa = float((s[~lab] >= eta).mean())
    cost = point.c_miss * point.p_target * p_miss + point.c_fa * (1 - point.p_target) * p_fa
    return cost / point.norm


def bayes_error_curve(
    scores: object, llrs: object, labels: object, prior_log_odds: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(actual, minimum) normalised DCF at each prior log-odds θ (C_miss = C_fa = 1, p = σ(θ)).

    The Bayes error-rate plot of BOSARIS: actual uses ``llrs`` at threshold −θ, minimum the
    best threshold on ``scores``; both divided by min(p, 1 − p)."""
    act, mins = [], []
    sweep = threshold_sweep(scores, labels)  # one sort of the scores for every prior
    for theta in np.asarray(prior_log_odds, dtype=np.float64):
        point = CostPoint(p_target=float(1.0 / (1.0 + math.exp(-theta))))
        act.append(act_dcf(llrs, labels, point))
        mins.append(min_dcf_from_sweep(sweep, p_target=point.p_target))
    return np.array(act), np.array(mins)
