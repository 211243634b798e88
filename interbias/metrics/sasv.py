"""Spoofing-aware verification metrics: the a-DCF of ASVspoof 5 (Shim et al., Odyssey 2024),
the min t-DCF and the concurrent t-EER (:func:`t_eer`).

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

from interbias.metrics import verification as metrics
from interbias.utils.errors import MetricError


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


def a_dcf(target: object, nontarget: object, spoof: object, cost: ADCFCost = ADCFCost()) -> tuple[float, float]:
    """(minimum normalised a-DCF, its threshold) over all thresholds; see the module doc.

    Sort-based: at each distinct score t, P_miss = #(tar < t)/N_tar, P_fa = #(x >= t)/N_x.
    The threshold +inf (reject all) is included; of equal costs the lowest threshold wins."""
    tar, non, spf = (
        metrics.finite_scores(target, "a-DCF target"),
        metrics.finite_scores(nontarget, "a-DCF non-target"),
        metrics.finite_scores(spoof, "a-DCF spoof"),
    )
    grid = np.r_[np.unique(np.concatenate([tar, non, spf])), np.inf]
    p_miss = np.searchsorted(np.sort(tar), grid, side="left") / len(tar)
    p_non = 1.0 - np.searchsorted(np.sort(non), grid, side="left") / len(non)
    p_spf = 1.0 - np.searchsorted(np.sort(spf), grid, side="left") / len(spf)
    costs = cost.c_miss * cost.p_tar * p_miss + cost.c_fa_asv * cost.p_non * p_non + cost.c_fa_cm * cost.p_spf * p_spf
    k = int(np.argmin(costs))
    return float(costs[k] / cost.norm), float(grid[k])


def _weight_below(scores: np.ndarray, weights: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """(B, len(grid)): per row of ``weights`` the weight of ``scores`` < each grid value."""
    order = np.argsort(scores, kind="stable")
    cum = np.zeros((weights.shape[0], len(scores) + 1))
    np.cumsum(weights[:, order], axis=1, out=cum[:, 1:])
    return cum[:, np.searchsorted(scores[order], grid, side="left")]


def a_dcf_weighted(
    scores: tuple[object, object, object], weights: tuple[object, object, object], cost: ADCFCost = ADCFCost()
) -> np.ndarray:
    """:func:`a_dcf` (its minimum) under each row of trial multiplicities: ``scores`` the (target,
    non-target, spoof) scores, ``weights`` their (B, n_class) non-negative weights. Each rate is a
    weighted share, e.g. P_miss(t) = Σ w·[tar < t] / Σ w; a row whose weights of a class sum to 0
    gives NaN. Unit weights give :func:`a_dcf` exactly."""
    s = [np.asarray(x, dtype=np.float64) for x in scores]
    w = [np.atleast_2d(np.asarray(x, dtype=np.float64)) for x in weights]
    if any(wi.shape[1] != len(si) for si, wi in zip(s, w, strict=True)) or len({wi.shape[0] for wi in w}) != 1:
        raise MetricError("a-DCF weights: one row of weights per replicate and one weight per score")
    grid = np.r_[np.unique(np.concatenate(s)), np.inf]
    with np.errstate(invalid="ignore", divide="ignore"):
        share = [_weight_below(si, wi, grid) / wi.sum(axis=1, keepdims=True) for si, wi in zip(s, w, strict=True)]
        costs = (
            cost.c_miss * cost.p_tar * share[0]
            + cost.c_fa_asv * cost.p_non * (1.0 - share[1])
            + cost.c_fa_cm * cost.p_spf * (1.0 - share[2])
        )
    return costs.min(axis=1) / cost.norm


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
    bona, spf = (
        metrics.finite_scores(bonafide_cm, "t-DCF bona fide CM"),
        metrics.finite_scores(spoof_cm, "t-DCF spoof CM"),
    )
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


@dataclass(frozen=True)
class TandemEER:
    """The concurrent t-EER (a fraction in [0, 1]) and the operating point that gives it: the ASV
    and CM thresholds and the three tandem error rates there (equal at an exact crossing)."""

    t_eer: float
    asv_threshold: float
    cm_threshold: float
    pmiss: float
    pfa_nontarget: float
    pfa_spoof: float


def _rates_below(scores: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """#(scores < u)/N for every u of ``grid``."""
    return np.searchsorted(np.sort(scores), grid, side="left") / len(scores)


def tandem_h(pmiss_cm: np.ndarray, pfa_cm: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """P_miss,tdm − P_fa,tdm at spoof prevalence ρ = ½ (see :func:`t_eer`), elementwise."""
    pmiss_tdm = pmiss_cm + (1 - pmiss_cm) * a
    pfa_tdm = 0.5 * (1 - pmiss_cm) * b + 0.5 * pfa_cm * c
    return pmiss_tdm - pfa_tdm


def _cm_index(pmiss_cm: np.ndarray, pfa_cm: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Per ASV threshold, the first CM index minimising |h| (h of :func:`tandem_h`).

    h is strictly increasing in the CM index where 0 <= a < 1 and c > 0 (each distinct CM
    threshold raises P_miss,cm or lowers P_fa,cm), so the minimiser is the first index k with
    h >= 0 or k − 1, found by a bisection per row (O(M log N) instead of O(M·N))."""
    lo = np.zeros(len(a), dtype=np.int64)
    hi = np.full(len(a), len(pmiss_cm) - 1, dtype=np.int64)  # h = 1 at the last (+inf) threshold
    while (lo < hi).any():
        mid = (lo + hi) // 2
        ok = tandem_h(pmiss_cm[mid], pfa_cm[mid], a, b, c) >= 0
        hi = np.where(ok, mid, hi)
        lo = np.where(ok, lo, np.minimum(mid + 1, hi))
    km1 = np.maximum(lo - 1, 0)
    h_k = np.abs(tandem_h(pmiss_cm[lo], pfa_cm[lo], a, b, c))
    h_km1 = np.abs(tandem_h(pmiss_cm[km1], pfa_cm[km1], a, b, c))
    return np.where((lo > 0) & (h_km1 <= h_k), km1, lo)


def t_eer(
    asv_target: object, asv_nontarget: object, asv_spoof: object, cm_bonafide: object, cm_spoof: object
) -> TandemEER:
    """Concurrent tandem equal error rate of a CM in front of an ASV system (Kinnunen et al.,
    "t-EER: parameter-free tandem evaluation of countermeasures and biometric comparators",
    IEEE TPAMI 2023), the track-2 t-EER of the ASVspoof 5 evaluation package.

    A trial is accepted when the CM passes it (CM score >= τ_cm) and the ASV accepts it (ASV
    score >= τ_asv). With a = P_miss,asv, b = P_fa,asv (non-targets), c = P_fa,spoof,asv at
    τ_asv and the CM's P_miss,cm (bona fide) and P_fa,cm (spoofs) at τ_cm, the tandem rates are

        P_miss,tdm = P_miss,cm + (1 − P_miss,cm)·a,
        P_fa,non,tdm = (1 − P_miss,cm)·b,   P_fa,spf,tdm = P_fa,cm·c.

    The t-EER at spoof prevalence ρ equates P_miss,tdm with (1 − ρ)·P_fa,non,tdm + ρ·P_fa,spf,tdm;
    the concurrent t-EER is the point where all three rates are equal, which every ρ's path
    crosses. Estimator (the package's ``compute_teer``, on a tie-exact grid): τ_asv runs over
    every distinct ASV score and +inf, τ_cm over every distinct CM score and +inf. For each
    τ_asv with c > 0 and a < (b + c)/2 (the allowed region at ρ = ½), τ_cm is the first
    minimiser of |P_miss,tdm − P_fa,tdm| at ρ = ½; among those pairs the one minimising
    |b/c − P_fa,cm/(1 − P_miss,cm)| (the concurrency criterion; the first on ties) is chosen and
    t-EER = P_fa,spf,tdm = P_fa,cm·c there. A fraction (the package prints percent).

    Inputs: ASV scores of target, non-target and spoof trials; CM scores (higher = bona fide)
    of bona fide trials (the target and non-target trials) and of spoof trials. Every class
    must be non-empty and finite (:class:`MetricError`); then the t-EER is always defined (at
    the lowest ASV threshold a = 0 < (b + c)/2 = 1)."""
    tar, non = (
        metrics.finite_scores(asv_target, "t-EER ASV target"),
        metrics.finite_scores(asv_nontarget, "t-EER ASV non-target"),
    )
    spf = metrics.finite_scores(asv_spoof, "t-EER ASV spoof")
    bona, cm_spf = (
        metrics.finite_scores(cm_bonafide, "t-EER CM bona fide"),
        metrics.finite_scores(cm_spoof, "t-EER CM spoof"),
    )
    asv_grid = np.r_[np.unique(np.concatenate([tar, non, spf])), np.inf]
    a = _rates_below(tar, asv_grid)
    b, c = 1.0 - _rates_below(non, asv_grid), 1.0 - _rates_below(spf, asv_grid)
    cm_grid = np.r_[np.unique(np.concatenate([bona, cm_spf])), np.inf]
    pmiss_cm, pfa_cm = _rates_below(bona, cm_grid), 1.0 - _rates_below(cm_spf, cm_grid)
    rows = np.flatnonzero((a < 0.5 * b + 0.5 * c) & (c > 0))  # never empty: a = 0, b = c = 1 at the lowest score
    j = _cm_index(pmiss_cm, pfa_cm, a[rows], b[rows], c[rows])
    with np.errstate(divide="ignore", invalid="ignore"):
        crit = np.abs(b[rows] / c[rows] - pfa_cm[j] / (1 - pmiss_cm[j]))
    crit[~np.isfinite(crit)] = np.inf
    k = int(np.argmin(crit))  # finite at the lowest ASV threshold (|h| there is smallest at a CM P_miss < 1)
    i, jk = rows[k], j[k]
    return TandemEER(
        t_eer=float(pfa_cm[jk] * c[i]),
        asv_threshold=float(asv_grid[i]),
        cm_threshold=float(cm_grid[jk]),
        pmiss=float(pmiss_cm[jk] + (1 - pmiss_cm[jk]) * a[i]),
        pfa_nontarget=float((1 - pmiss_cm[jk]) * b[i]),
        pfa_spoof=float(pfa_cm[jk] * c[i]),
    )


# ---- the ASVspoof packages' sorted-score operating points ----------------------------------------


def sorted_det(bona: np.ndarray, spoof: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ASVspoof packages' DET points: scores sorted ascending (stable, bona fide before spoof
    at equal scores); point i rejects the first i sorted scores. Returns (miss rate of bona
    fide, false-accept rate of spoofs, threshold: the lowest score − 0.001, then each sorted score)."""
    scores = np.concatenate([bona, spoof])
    is_bona = np.concatenate([np.ones(len(bona)), np.zeros(len(spoof))])
    order = np.argsort(scores, kind="mergesort")
    rejected_bona = np.cumsum(is_bona[order])
    rejected_spoof = np.arange(1, len(scores) + 1) - rejected_bona
    miss = np.concatenate([[0.0], rejected_bona / len(bona)])
    fa = np.concatenate([[1.0], (len(spoof) - rejected_spoof) / len(spoof)])
    thresholds = np.concatenate([[scores[order[0]] - 0.001], scores[order]])
    return miss, fa, thresholds


def package_eer_threshold(target: object, nontarget: object) -> float:
    """The ASV threshold of the ASVspoof 5 package (``compute_eer``): the :func:`sorted_det`
    point of target against non-target scores where |P_miss − P_fa| is least (the first such
    point), and that point's threshold — the last score it rejects (the lowest score − 0.001 at
    the first point). Rates at it are then counted with accept ≥ threshold, so trials scoring
    exactly the threshold count as accepted although the point rejected them."""
    tar = metrics.finite_scores(target, "ASV target")
    non = metrics.finite_scores(nontarget, "ASV non-target")
    miss, fa, thr = sorted_det(tar, non)
    return float(thr[int(np.argmin(np.abs(miss - fa)))])
