"""Per-cell spoofing metrics of one verification system, computed by the run layer when a cell
holds spoof trials (the columns :data:`SPOOF_COLUMNS` of results.csv); definitions in
:mod:`interbias.analysis.security.spoofing`, which also aggregates them over systems (DSR, WDSR)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from interbias.metrics import verification as metrics
from interbias.metrics.sasv import a_dcf, sorted_det
from interbias.utils.errors import MetricError

#: Extra trailing results.csv columns of spoofing experiments (absent otherwise).
SPOOF_COLUMNS = ["n_spoof", "n_spoof_accepted", "spoof_far", "spoof_threshold", "eer_spoof", "a_dcf"]


@dataclass(frozen=True)
class SpoofSummary:
    n_spoof: int
    n_spoof_accepted: int
    spoof_far: float
    spoof_threshold: float
    eer_spoof: float
    #: ASVspoof 5's a-DCF of the verification score (default cost model, :mod:`interbias.metrics.sasv`).
    a_dcf: float

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


def _scores(values: object, what: str) -> np.ndarray:
    return metrics.finite_scores(values, what)


def accepted(scores: object, threshold: float) -> int:
    """Number of scores at or above ``threshold`` (accepted trials)."""
    return int((_scores(scores, "spoof scores") >= threshold).sum())


def spoof_summary(scores: object, trial_types: object) -> SpoofSummary:
    """Spoof metrics of one system from per-trial scores and types (target|nontarget|spoof)."""
    s = _scores(scores, "scores")
    types = np.asarray(trial_types).astype(str)
    if len(types) != len(s):
        raise MetricError(f"scores ({len(s)}) and trial types ({len(types)}) differ in length")
    unknown = sorted(set(types) - {"target", "nontarget", "spoof"})
    if unknown:
        raise MetricError(f"unknown trial type(s) {', '.join(unknown)}; valid: target, nontarget, spoof")
    tgt, non, spf = types == "target", types == "nontarget", types == "spoof"
    if not spf.any():
        raise MetricError("no spoof trials: spoof metrics are undefined")
    bona = tgt | non
    _, thr = metrics.eer_from_sweep(metrics.threshold_sweep(s[bona], tgt[bona]))
    if not np.isfinite(thr):
        raise MetricError("the bona fide EER threshold is +inf (every non-target outscores every target)")
    n_acc = accepted(s[spf], thr)
    keep = tgt | spf
    return SpoofSummary(
        n_spoof=int(spf.sum()),
        n_spoof_accepted=n_acc,
        spoof_far=n_acc / int(spf.sum()),
        spoof_threshold=float(thr),
        eer_spoof=metrics.eer(s[keep], tgt[keep]),
        a_dcf=a_dcf(s[tgt], s[non], s[spf])[0],
    )


# ---- ASVspoof 5 Track 1: a countermeasure's own metrics ------------------------------------------


@dataclass(frozen=True)
class Track1Cost:
    """ASVspoof 5 Track 1's DCF cost model: spoof prior, cost of rejecting bona fide, cost of
    accepting a spoof."""

    p_spoof: float = 0.05
    c_miss: float = 1.0
    c_fa: float = 10.0

    def check(self) -> None:
        if not 0.0 < self.p_spoof < 1.0 or self.c_miss <= 0 or self.c_fa <= 0:
            raise MetricError(f"DCF cost model: need 0 < p_spoof < 1 and positive costs, got {self}")

    @property
    def norm(self) -> float:
        """The default cost min(C_miss·(1−P_spoof), C_fa·P_spoof), the normaliser of every DCF."""
        return min(self.c_miss * (1 - self.p_spoof), self.c_fa * self.p_spoof)

    @property
    def bayes_threshold(self) -> float:
        """−log β, β = C_miss·(1−P_spoof) / (C_fa·P_spoof): the threshold on a natural-log LLR."""
        return -float(np.log(self.c_miss * (1 - self.p_spoof) / (self.c_fa * self.p_spoof)))


def cllr(bona: np.ndarray, spoof: np.ndarray) -> float:
    """C_llr in bits of scores read as natural-log likelihood ratios (bona fide over spoof):
    ½·(mean log(1 + e^−s_bona) + mean log(1 + e^s_spoof)) / log 2."""
    return float(0.5 * (np.logaddexp(0.0, -bona).mean() + np.logaddexp(0.0, spoof).mean()) / np.log(2.0))


def track1_metrics(bona: object, spoof: object, cost: Track1Cost = Track1Cost()) -> dict[str, float | int | str]:
    """ASVspoof 5 Track 1 metrics of CM scores (higher = bona fide), as its evaluation package
    computes them: ``min_dcf`` (normalised, minimum over the :func:`sorted_det` points — ties
    cannot lower it), ``act_dcf`` (normalised, at :attr:`Track1Cost.bayes_threshold`: a bona
    fide score below it is a miss, a spoof score at or above it a false accept), ``cllr``
    (:func:`cllr`), ``eer`` (the mean of the two rates at the first point where they are
    closest) with their thresholds. ``act_dcf`` and ``cllr`` read scores as LLRs. Scores that
    are all one value rank nothing: ``eer`` and its threshold are NaN, and ``eer_undefined``
    (:func:`eer_undefined`) says why (the package's stable tie order would report 1.0)."""
    cost.check()
    n_b, n_s = np.asarray(bona).size, np.asarray(spoof).size
    if not n_b or not n_s:
        raise MetricError(f"{n_b} bona fide and {n_s} spoof scores: Track 1 metrics need both classes")
    b = metrics.finite_scores(bona, "bona fide scores")
    s = metrics.finite_scores(spoof, "spoof scores")
    miss, fa, thr = sorted_det(b, s)
    dcf = (cost.c_miss * (1 - cost.p_spoof) * miss + cost.c_fa * cost.p_spoof * fa) / cost.norm
    i_dcf = int(np.argmin(dcf))
    i_eer = int(np.argmin(np.abs(miss - fa)))
    t = cost.bayes_threshold
    act = cost.c_miss * (1 - cost.p_spoof) * np.mean(b < t) + cost.c_fa * cost.p_spoof * np.mean(s >= t)
    undefined = eer_undefined(b, s)
    return {
        "n_bonafide": len(b),
        "n_spoof": len(s),
        "min_dcf": float(dcf[i_dcf]),
        "min_dcf_threshold": float(thr[i_dcf]),
        "act_dcf": float(act / cost.norm),
        "act_dcf_threshold": t,
        "cllr": cllr(b, s),
        "eer": math.nan if undefined else float((miss[i_eer] + fa[i_eer]) / 2),
        "eer_threshold": math.nan if undefined else float(thr[i_eer]),
        "eer_undefined": undefined or "",
    }


def eer_undefined(bona: np.ndarray, spoof: np.ndarray) -> str | None:
    """Why these scores have no EER (every score the same value: no threshold ranks any pair),
    or None."""
    low = min(bona.min(), spoof.min())
    if low == max(bona.max(), spoof.max()):
        return f"every score is {low:g}: a constant score has no EER"
    return None
