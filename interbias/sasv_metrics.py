"""Spoofing-aware verification cost: the a-DCF of ASVspoof 5 (Shim et al., Odyssey 2024).

One verification score per trial and three trial classes: target, non-target (zero-effort
impostor) and spoof. A trial is accepted when its score is >= the threshold t:

    a-DCF(t) = [C_miss·P_tar·P_miss(t) + C_fa,asv·P_non·P_fa,non(t) + C_fa,cm·P_spf·P_fa,spf(t)]
               / min(C_fa,asv·P_non + C_fa,cm·P_spf, C_miss·P_tar),

the denominator being the better of accept-all and reject-all. The reported a-DCF is the
minimum over every distinct score and +inf (reject all) — what the ASVspoof 5 evaluation
package's ``calculate_a_dcf`` returns. Defaults are ASVspoof 5's cost model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from interbias import metrics
from interbias.errors import MetricError


@dataclass(frozen=True)
class ADCFCost:
    """a-DCF cost model (ASVspoof 5 defaults); the three priors must sum to 1."""

    p_spf: float = 0.05
    p_non: float = 0.05
    p_tar: float = 0.9
    c_miss: float = 1.0
    c_fa_asv: float = 10.0
    c_fa_cm: float = 20.0

    def __post_init__(self) -> None:
        priors = (self.p_spf, self.p_non, self.p_tar)
        if min(priors) < 0 or abs(sum(priors) - 1) > 1e-9:
            raise MetricError(f"a-DCF priors must be non-negative and sum to 1, got {priors}")
        if min(self.c_miss, self.c_fa_asv, self.c_fa_cm) <= 0:
            raise MetricError("a-DCF costs must be positive")

    @property
    def norm(self) -> float:
        return min(self.c_fa_asv * self.p_non + self.c_fa_cm * self.p_spf, self.c_miss * self.p_tar)


def _scores(values: object, what: str) -> np.ndarray:
    return metrics.finite_scores(values, f"a-DCF {what}")


def a_dcf(target: object, nontarget: object, spoof: object, cost: ADCFCost = ADCFCost()) -> tuple[float, float]:
    """(minimum normalised a-DCF, its threshold) over all thresholds; see the module doc.

    Sort-based: at each distinct score t, P_miss = #(tar < t)/N_tar, P_fa = #(x >= t)/N_x.
    The threshold +inf (reject all) is included; of equal costs the lowest threshold wins."""
    tar, non, spf = _scores(target, "target"), _scores(nontarget, "non-target"), _scores(spoof, "spoof")
    grid = np.r_[np.unique(np.concatenate([tar, non, spf])), np.inf]
    p_miss = np.searchsorted(np.sort(tar), grid, side="left") / len(tar)
    p_non = 1.0 - np.searchsorted(np.sort(non), grid, side="left") / len(non)
    p_spf = 1.0 - np.searchsorted(np.sort(spf), grid, side="left") / len(spf)
    costs = cost.c_miss * cost.p_tar * p_miss + cost.c_fa_asv * cost.p_non * p_non + cost.c_fa_cm * cost.p_spf * p_spf
    k = int(np.argmin(costs))
    return float(costs[k] / cost.norm), float(grid[k])


@dataclass(frozen=True)
class TDCFCost:
    """t-DCF cost model of the ASVspoof 5 evaluation package (``calculate_metrics.py``): priors
    of target, non-target and spoof trials (summing to 1) and the tandem system's costs."""

    p_tar: float = 0.95 * 0.99
    p_non: float = 0.95 * 0.01
    p_spoof: float = 0.05
    c_miss: float = 1.0
    c_fa: float = 10.0
    c_fa_spoof: float = 10.0

    def __post_init__(self) -> None:
        priors = (self.p_tar, self.p_non, self.p_spoof)
        if min(priors) < 0 or abs(sum(priors) - 1) > 1e-9:
            raise MetricError(f"t-DCF priors must be non-negative and sum to 1, got {priors}")
        if min(self.c_miss, self.c_fa, self.c_fa_spoof) <= 0:
            raise MetricError("t-DCF costs must be positive")


def min_t_dcf(
    bonafide_cm: object,
    spoof_cm: object,
    pfa_asv: float,
    pmiss_asv: float,
    pfa_spoof_asv: float,
    cost: TDCFCost = TDCFCost(),
) -> tuple[float, float]:
    """(minimum normalised t-DCF, its CM threshold) of a countermeasure in tandem with a fixed
    ASV system whose error rates at its threshold are given (Kinnunen et al., TASLP 2020):

        t-DCF(τ) = C0 + C1·P_miss,cm(τ) + C2·P_fa,cm(τ),  normalised by C0 + min(C1, C2),
        C0 = P_tar·C_miss·P_miss,asv + P_non·C_fa·P_fa,asv,
        C1 = P_tar·C_miss − C0,  C2 = P_spoof·C_fa,spoof·P_fa,spoof,asv.

    CM scores: higher = bona fide; a trial passes the CM when its score is >= τ; τ runs over
    every distinct CM score and +inf."""
    bona, spf = _scores(bonafide_cm, "bona fide CM"), _scores(spoof_cm, "spoof CM")
    for name, rate in (("pfa_asv", pfa_asv), ("pmiss_asv", pmiss_asv), ("pfa_spoof_asv", pfa_spoof_asv)):
        if not 0 <= rate <= 1:
            raise MetricError(f"t-DCF: {name} must be a rate in [0, 1], got {rate}")
    c0 = cost.p_tar * cost.c_miss * pmiss_asv + cost.p_non * cost.c_fa * pfa_asv
    c1 = cost.p_tar * cost.c_miss - c0
    c2 = cost.p_spoof * cost.c_fa_spoof * pfa_spoof_asv
    if c1 < 0 or c0 + min(c1, c2) <= 0:
        raise MetricError(f"t-DCF undefined for these ASV error rates (C0 {c0:.4g}, C1 {c1:.4g}, C2 {c2:.4g})")
    grid = np.r_[np.unique(np.concatenate([bona, spf])), np.inf]
    p_miss = np.searchsorted(np.sort(bona), grid, side="left") / len(bona)
    p_fa = 1.0 - np.searchsorted(np.sort(spf), grid, side="left") / len(spf)
    curve = (c0 + c1 * p_miss + c2 * p_fa) / (c0 + min(c1, c2))
    k = int(np.argmin(curve))
    return float(curve[k]), float(grid[k])
