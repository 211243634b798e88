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
    s = np.asarray(values, dtype=np.float64)
    if s.ndim != 1 or len(s) == 0:
        raise MetricError(f"a-DCF: need at least one {what} score")
    if not np.isfinite(s).all():
        raise MetricError(f"a-DCF: {int((~np.isfinite(s)).sum())} {what} score(s) are NaN or infinite")
    return s


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
