"""Trial-budget planner: how many speakers a run needs to resolve an effect of a given size.

Every interaction effect (IE) and subgroup gap of a pilot run gets a standard error from the
same speaker-cluster bootstrap the analysis uses: the standard deviation (ddof 1) of its
replicates, each replicate recomputing the effect from one resample of speakers applied to all
its terms. The planner then assumes

* SE(n) = SE_pilot · sqrt(n_pilot / n), where n is the number of speakers per stratum: speakers
  are the independent units, so the variance of any effect is inversely proportional to their
  number once each speaker contributes enough trials (trials per speaker held at the pilot's
  level; adding trials per speaker at a fixed number of speakers does not shrink the
  between-speaker part of the variance);
* the estimate is approximately normal with that SE, and the effect is declared when a
  two-sided interval at level 1 − α excludes zero.

Minimum detectable effect: MDE(n) = (z_{1−α/2} + z_power) · SE(n); speakers per stratum needed
for an effect δ: n = ceil(n_pilot · ((z_{1−α/2} + z_power) · SE_pilot / δ)²) (at least 2). Every
stratum is scaled by the same factor, so strata of unequal size keep their proportions; the
table gives the count for the smallest stratum of the pilot and the trials per stratum that
keep the pilot's trials per speaker.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import pandas as pd

from interbias.analysis.bootstrap import TrialDesign
from interbias.analysis.suite import Analysis
from interbias.errors import AnalysisError

MODEL = (
    "SE(n) = SE_pilot * sqrt(n_pilot / n) with n speakers per stratum (speaker-cluster bootstrap SE of the "
    "pilot; trials per speaker held at the pilot's level); MDE = (z_{1-alpha/2} + z_power) * SE; "
    "speakers needed = ceil(n_pilot * ((z_{1-alpha/2} + z_power) * SE_pilot / effect)^2), at least 2"
)
ASSUMPTIONS = (
    "Speakers are the independent units and the variance of an effect scales as 1/speakers once trials per "
    "speaker saturate; the follow-up run keeps the pilot's design (same conditions, strata in the same "
    "proportions, same trials per speaker, speakers from the same population); the estimate is roughly "
    "normal; the test is two-sided at level alpha (the interval at 1 - alpha excludes zero). Effects whose "
    "terms do not move under resampling (SE 0) cannot be planned."
)


@dataclass(frozen=True)
class Settings:
    effect: float = 0.01
    power: float = 0.8
    alpha: float = 0.05

    def __post_init__(self) -> None:
        if not self.effect > 0:
            raise AnalysisError(f"--effect must be > 0 (metric units; 0.01 = one point of EER), got {self.effect}")
        if not 0 < self.power < 1:
            raise AnalysisError(f"--power must be in (0, 1), got {self.power}")
        if not 0 < self.alpha < 1:
            raise AnalysisError(f"--alpha must be in (0, 1), got {self.alpha}")

    @property
    def z(self) -> float:
        """z_{1−α/2} + z_power."""
        nd = NormalDist()
        return nd.inv_cdf(1 - self.alpha / 2) + nd.inv_cdf(self.power)


@dataclass(frozen=True)
class Pilot:
    """Speakers and trials per stratum of the pilot's trial list."""

    speakers: dict[str, int]
    targets: dict[str, int]
    nontargets: dict[str, int]

    @property
    def n_min(self) -> int:
        return min(self.speakers.values())

    def describe(self) -> str:
        return "; ".join(
            f"{st}: {n} speakers, {self.targets[st]} target / {self.nontargets[st]} non-target trials"
            for st, n in self.speakers.items()
        )


def pilot_of(design: TrialDesign) -> Pilot:
    speakers, targets, nontargets = {}, {}, {}
    for st in sorted(set(design.stratum.tolist())):
        sel = design.stratum == st
        speakers[st] = len(set(design.enrol[sel].tolist()) | set(design.test[sel].tolist()))
        targets[st] = int((design.label & sel).sum())
        nontargets[st] = int((~design.label & sel).sum())
    if not speakers:
        raise AnalysisError("the pilot's trial list is empty")
    return Pilot(speakers, targets, nontargets)


def speakers_needed(se: float, n_pilot: int, settings: Settings) -> float:
    """Speakers per stratum (smallest stratum) to detect ``settings.effect``; NaN when SE is 0/NaN."""
    if not np.isfinite(se) or se <= 0:
        return math.nan
    return float(max(2, math.ceil(n_pilot * (settings.z * se / settings.effect) ** 2)))


def _sd(reps: np.ndarray) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanstd(reps, axis=-1, ddof=1)


EFFECT_COLUMNS = [
    "experiment",
    "model",
    "family",
    "kind",
    "effect",
    "metric",
    "estimate",
    "lo",
    "hi",
    "resolved",
    "se",
]


def effects(a: Analysis) -> pd.DataFrame:
    """Every IE and subgroup gap of the analysis with its interval, SE and whether the interval
    excludes zero (needs bootstrap replicates)."""
    if a.replicates is None or a.contrasts.ie_replicates is None:
        raise AnalysisError("effects and plans need bootstrap replicates (--bootstrap > 0 on a run with scores)")
    c, g = a.contrasts.contrasts, a.gaps.gaps
    rows = []
    for r, se in zip(c.itertuples(index=False), _sd(a.contrasts.ie_replicates).tolist(), strict=True):
        levels = ", ".join(v for v in (r.level_a, r.level_b, r.level_c) if v)
        rows.append(
            (r.experiment, r.model, r.family, "interaction", f"IE {r.contrast} at {levels}", r.ie, r.ie_lo, r.ie_hi, se)
        )
    if len(g) and a.gaps.gap_replicates is not None:
        for r, se in zip(g.itertuples(index=False), _sd(a.gaps.gap_replicates).tolist(), strict=True):
            name = f"gap {r.group_factor} {r.group_level} − {r.group_ref} at {r.condition}"
            rows.append((r.experiment, r.model, r.family, "gap", name, r.gap, r.gap_lo, r.gap_hi, se))
    out = pd.DataFrame(rows, columns=[c for c in EFFECT_COLUMNS if c not in ("metric", "resolved")])
    out.insert(5, "metric", a.options.metric)
    out.insert(9, "resolved", (out["lo"] > 0) | (out["hi"] < 0))
    return out


def plan(a: Analysis, settings: Settings) -> pd.DataFrame:
    """:func:`effects` plus, per effect, the MDE of the run as it is and the speakers (and
    trials) per stratum needed to detect ``settings.effect`` with ``settings.power``."""
    eff = effects(a)
    pilot = pilot_of(a.run.design())
    n0 = pilot.n_min
    st0 = min(pilot.speakers, key=lambda s: (pilot.speakers[s], s))
    out = eff.copy()
    out["speakers_per_stratum"] = n0
    out["mde"] = settings.z * out["se"]
    out["target_effect"] = settings.effect
    out["power"] = settings.power
    out["alpha"] = settings.alpha
    need = [speakers_needed(se, n0, settings) for se in out["se"].tolist()]
    out["speakers_per_stratum_needed"] = need
    out["target_trials_per_speaker"] = pilot.targets[st0] / n0
    out["nontarget_trials_per_speaker"] = pilot.nontargets[st0] / n0
    out["target_trials_per_stratum_needed"] = [
        math.ceil(n * pilot.targets[st0] / n0) if np.isfinite(n) else math.nan for n in need
    ]
    out["nontarget_trials_per_stratum_needed"] = [
        math.ceil(n * pilot.nontargets[st0] / n0) if np.isfinite(n) else math.nan for n in need
    ]
    out["note"] = np.where(np.isfinite(out["se"]) & (out["se"] > 0), "", "no bootstrap spread: cannot be planned")
    for k, v in a.replicates.stamp().items():
        out[k] = v
    return out


def recommendation(frame: pd.DataFrame) -> pd.DataFrame:
    """Per experiment × kind: the largest speakers-per-stratum need over models and effects
    (to resolve every effect of that kind) and the median need."""
    rows = []
    for (exp, kind), grp in frame.groupby(["experiment", "kind"], sort=False):
        need = grp["speakers_per_stratum_needed"].to_numpy(float)
        ok = need[np.isfinite(need)]
        rows.append(
            {
                "experiment": exp,
                "kind": kind,
                "n_effects": len(grp),
                "n_resolved": int(grp["resolved"].sum()),
                "speakers_per_stratum": int(grp["speakers_per_stratum"].iloc[0]),
                "median_mde": float(np.nanmedian(grp["mde"])) if len(grp) else math.nan,
                "median_speakers_needed": float(np.median(ok)) if len(ok) else math.nan,
                "max_speakers_needed": float(ok.max()) if len(ok) else math.nan,
            }
        )
    return pd.DataFrame(rows)
