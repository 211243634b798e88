"""p-values and intervals of the findings' effects and their correction over a declared family.

p-value (two-sided, one effect) and interval, from one construction so that the interval at
level L excludes 0 exactly when p < 1 − L: the Wald test and interval with the effect's SE
(:func:`wald_p`, :func:`wald_interval`, normal or Student's t; EER-like metrics), or the bias-corrected percentile
interval of the replicates and the p-value that inverts it (:func:`bc_interval`; DCF metrics).
The SE is the findings' (:mod:`interbias.analysis.effects`: the corrected speaker bootstrap by
default). The percentile p-value of the raw replicates, min(1, 2·min(1 + #{θ* ≤ 0},
1 + #{θ* ≥ 0}) / (B + 1)), cannot go below 2 / (B + 1), so it is not used for EER: with B = 1000
and a family of 60 nothing could be resolved. An effect whose replicates do not move (SE 0 or
fewer than two valid replicates) has no p-value (NaN).

Family: every main effect, interaction and gap of one experiment in one analysis (all models);
simple effects form their own family. Adjustments (``ADJUSTMENTS``), over the m effects of the family:

* ``holm``: sort p ascending; p_adj(i) = max_{j ≤ i} min(1, (m − j + 1)·p(j)) (controls the
  family-wise error rate);
* ``bh``: Benjamini–Hochberg; p_adj(i) = min_{j ≥ i} min(1, m·p(j) / j) (controls the false
  discovery rate under independence or positive dependence);
* ``none``: p_adj = p.

An effect without a p-value counts in m as p = 1 and gets no adjusted value (NaN). Resolved:
p_adj < α. Simultaneous interval (beside the per-effect one, whatever the adjustment): the same
construction at the Bonferroni level 1 − α/m (Wald: θ̂ ± z_{1 − α/(2m)}·SE), which excludes zero
exactly when the Bonferroni-adjusted p is below α (Holm resolves at least those).
"""

from __future__ import annotations

import warnings
from statistics import NormalDist

import numpy as np
from scipy import stats

from interbias.utils.errors import AnalysisError

ADJUSTMENTS: tuple[str, ...] = ("holm", "bh", "none")
DEFAULT_ADJUSTMENT = "holm"
#: One line per adjustment, for reports.
DESCRIPTION = {
    "holm": "Holm (family-wise error rate)",
    "bh": "Benjamini–Hochberg (false discovery rate)",
    "none": "no adjustment (each effect tested on its own)",
}
#: An SE below this (metric units) is rounding noise of replicates that do not move: 0.
SE_FLOOR = 1e-12
P_VALUE_RULE = (
    "two-sided Wald test, p = 2(1 - F(|estimate| / SE)), interval estimate +/- q*SE, SE from the speaker bootstrap "
    "corrected for the non-target pairs' variance and F Student's t on its Satterthwaite df (--bootstrap-design "
    "speaker: the plain SE and the normal)"
)
BC_RULE = (
    "bias-corrected percentile interval of the speaker-bootstrap replicates (shrunk to the corrected SE unless "
    "--bootstrap-design speaker) and the two-sided p-value that inverts it"
)


def check_method(method: str) -> str:
    if method not in ADJUSTMENTS:
        raise AnalysisError(f"--adjust {method!r}: valid: {', '.join(ADJUSTMENTS)}")
    return method


def bootstrap_se(replicates: np.ndarray) -> np.ndarray:
    """SD (ddof 1) over the last axis, ignoring NaN replicates; NaN with fewer than two valid;
    0 below ``SE_FLOOR`` (replicates equal up to float rounding)."""
    reps = np.asarray(replicates, dtype=np.float64)
    if reps.size == 0:
        return np.zeros(reps.shape[:-1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        sd = np.nanstd(reps, axis=-1, ddof=1)
    return np.where(sd < SE_FLOOR, 0.0, sd)


def wald_p(estimate: np.ndarray, se: np.ndarray, df: np.ndarray | None = None) -> np.ndarray:
    """2·(1 − F(|estimate| / se)), F the normal CDF, or Student's t with ``df`` degrees of
    freedom where ``df`` is given and finite; NaN where se is 0 or not finite."""
    est, s = np.asarray(estimate, dtype=np.float64), np.asarray(se, dtype=np.float64)
    ok = np.isfinite(s) & (s > 0) & np.isfinite(est)
    z = np.abs(np.where(ok, est, 0.0)) / np.where(ok, s, 1.0)
    sf = stats.norm.sf(z)
    if df is not None:
        d = np.broadcast_to(np.asarray(df, dtype=np.float64), z.shape)
        sf = np.where(np.isfinite(d), stats.t.sf(z, np.where(np.isfinite(d), d, 1.0)), sf)
    return np.where(ok, np.minimum(1.0, 2 * sf), np.nan)


def adjust(p: np.ndarray, method: str) -> np.ndarray:
    """Adjusted p-values of one family (NaN entries count as p = 1 and stay NaN)."""
    check_method(method)
    raw = np.asarray(p, dtype=np.float64)
    if raw.size == 0 or method == "none":
        return raw.copy()
    filled = np.where(np.isnan(raw), 1.0, raw)
    m = len(filled)
    order = np.argsort(filled, kind="stable")
    ranked = filled[order]
    if method == "holm":
        adj = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * ranked))
    else:
        adj = np.minimum.accumulate(np.minimum(1.0, m * ranked / np.arange(1, m + 1))[::-1])[::-1]
    out = np.empty(m)
    out[order] = adj
    return np.where(np.isnan(raw), np.nan, out)


def wald_interval(
    estimate: np.ndarray, se: np.ndarray, level: np.ndarray | float, df: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """estimate ± q·SE, q the (1 + level)/2 quantile of the normal or of Student's t with ``df``
    (where given and finite): it excludes 0 exactly when :func:`wald_p` < 1 − level."""
    est, s = np.asarray(estimate, dtype=np.float64), np.asarray(se, dtype=np.float64)
    lv = np.broadcast_to(np.asarray(level, dtype=np.float64), est.shape)
    q = stats.norm.ppf((1 + lv) / 2)
    if df is not None:
        d = np.broadcast_to(np.asarray(df, dtype=np.float64), est.shape)
        q = np.where(np.isfinite(d), stats.t.ppf((1 + lv) / 2, np.where(np.isfinite(d), d, 1.0)), q)
    return est - q * s, est + q * s


def bc_interval(estimate: float, replicates: np.ndarray, scale: float, levels: tuple[float, ...]) -> tuple[list, float]:
    """Bias-corrected percentile intervals (BCa with acceleration 0; Efron 1981) of one effect at
    each of ``levels``, and the p-value that inverts them.

    The finite replicates are first shrunk about the estimate, θ' = θ̂ + ``scale``·(θ* − θ̂)
    (``scale`` = corrected SE / speaker-bootstrap SE; 1 leaves them). z₀ = Φ⁻¹(share of θ' below θ̂,
    ties counted half, kept within [0.5/B, 1 − 0.5/B]); the interval at level L is the quantiles
    of θ' at Φ(2z₀ ∓ z_{(1+L)/2}). p = 2·min(Φ(w − 2z₀), 1 − Φ(w − 2z₀)) with w = Φ⁻¹(G(0)) and G
    the replicates' CDF read the way the quantiles are (linear interpolation), so an interval
    at level L excludes 0 exactly when p < 1 − L (replicates equal to 0: G(0) is the last of
    their positions for the lower side, the first for the upper); 0 beyond every replicate
    gives p = 0 (below the bootstrap's resolution)."""
    nd = NormalDist()
    r = np.asarray(replicates, dtype=np.float64)
    r = np.sort(estimate + scale * (r[np.isfinite(r)] - estimate))
    n = len(r)
    if n < 2 or not np.isfinite(estimate):
        return [(np.nan, np.nan) for _ in levels], np.nan
    share = (np.sum(r < estimate) + 0.5 * np.sum(r == estimate)) / n
    z0 = nd.inv_cdf(min(max(share, 0.5 / n), 1 - 0.5 / n))
    bounds = []
    for level in levels:
        z = nd.inv_cdf((1 + level) / 2)
        q = np.quantile(r, [nd.cdf(2 * z0 - z), nd.cdf(2 * z0 + z)])
        bounds.append((float(q[0]), float(q[1])))
    if r[0] > 0 or r[-1] < 0:
        return bounds, 0.0
    lo_pos, hi_pos = _positions(r)
    t_low, t_up = (_shifted(nd, h / (n - 1), z0) for h in (hi_pos, lo_pos))
    return bounds, float(min(1.0, 2 * min(t_low, 1 - t_up)))


def _shifted(nd: NormalDist, g: float, z0: float) -> float:
    """Φ(Φ⁻¹(g) − 2z₀), with g = 0 and g = 1 mapped to 0 and 1."""
    return 0.0 if g <= 0 else (1.0 if g >= 1 else nd.cdf(nd.inv_cdf(g) - 2 * z0))


def _positions(r: np.ndarray) -> tuple[float, float]:
    """(first, last) position h at which the linear-interpolation quantile of sorted ``r`` at
    q = h / (len − 1) equals 0 (one position unless replicates equal 0)."""
    left, right = int(np.searchsorted(r, 0.0, "left")), int(np.searchsorted(r, 0.0, "right"))
    if left < right:
        return float(left), float(right - 1)
    pos = left - 1 + (0.0 - r[left - 1]) / (r[left] - r[left - 1])
    return pos, pos


def simultaneous_halfwidth(se: np.ndarray, alpha: float, m: int) -> np.ndarray:
    """z_{1 − α/(2m)}·SE: half-width of the Bonferroni-level interval over a family of m."""
    z = NormalDist().inv_cdf(1 - alpha / (2 * max(m, 1)))
    return z * np.asarray(se, dtype=np.float64)
