"""Per-cell spoofing metrics of one verification system, computed by the run layer when a cell
holds spoof trials (the columns :data:`SPOOF_COLUMNS` of results.csv); definitions in
:mod:`interbias.analysis.spoofing`, which also aggregates them over systems (DSR, WDSR)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from interbias.metrics import verification as metrics
from interbias.metrics.sasv import a_dcf
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
