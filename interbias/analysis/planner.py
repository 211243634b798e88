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
for an effect δ: n = ceil(n_pilot · ((z_{1−α/2} + z_power) · SE_pilot / δ)²) (at least 2), with
n_pilot the pilot's LARGEST stratum. The plan states equal strata: the follow-up run
(``run --plan``) draws n speakers in every stratum, so no stratum has fewer speakers than the
scaling assumed (an effect's variance is a sum of per-stratum terms, each ∝ 1/speakers: with
unequal pilot strata the plan is conservative). Trials: the follow-up draws
n · t target and n · u non-target trials per stratum, t and u the pilot's largest target and
non-target trials per speaker over strata (``*_trials_per_stratum_needed``), so trials per
speaker never fall below the pilot's.

The test planned for is the per-effect one at level α; the findings resolve an effect on its
p-value adjusted over the experiment's family (Holm by default), so plan with ``--alpha α/m``
for a family of m effects when every effect must survive the adjustment.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import pandas as pd

from interbias.analysis.bootstrap import TrialDesign
from interbias.analysis.suite import Analysis, findings
from interbias.utils.errors import AnalysisError

MODEL = (
    "SE(n) = SE_pilot * sqrt(n_pilot / n) with n speakers in every stratum, n_pilot the pilot's largest stratum "
    "(speaker-cluster bootstrap SE of the pilot; trials per speaker held at the pilot's largest level); MDE = (z_{1-alpha/2} + z_power) * SE; "
    "speakers needed = ceil(n_pilot * ((z_{1-alpha/2} + z_power) * SE_pilot / effect)^2), at least 2"
)
ASSUMPTIONS = (
    "Speakers are the independent units and the variance of an effect scales as 1/speakers once trials per "
    "speaker saturate; the follow-up run keeps the pilot's design (same conditions, same trials per speaker, "
    "speakers from the same population) with equal strata (run --plan draws n speakers and n x trials-per-speaker "
    "trials in every stratum); the estimate is roughly "
    "normal; the test is two-sided at level alpha for one effect (the findings adjust over the "
    "experiment's family: use --alpha alpha/m to plan for a family of m). Effects whose "
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

    @property
    def n_max(self) -> int:
        return max(self.speakers.values())

    def trials_per_speaker(self) -> tuple[float, float]:
        """(target, non-target) trials per speaker: the largest over strata."""
        t = max(self.targets[s] / n for s, n in self.speakers.items())
        return t, max(self.nontargets[s] / n for s, n in self.speakers.items())

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
    """Speakers per stratum (scaled from ``n_pilot``) to detect ``settings.effect``; NaN when SE is 0/NaN."""
    if not np.isfinite(se) or se <= 0:
        return math.nan
    return float(max(2, math.ceil(n_pilot * (settings.z * se / settings.effect) ** 2)))


def effects(a: Analysis) -> pd.DataFrame:
    """Every main effect, IE and subgroup gap of the analysis with its interval, SE, p-value,
    adjusted p-value (``a.options.adjust`` over each experiment's family) and resolved flag
    (:mod:`interbias.analysis.effects`; needs bootstrap replicates)."""
    if a.replicates is None:
        raise AnalysisError("effects and plans need bootstrap replicates (--bootstrap > 0 on a run with scores)")
    return findings(a)


def plan(a: Analysis, settings: Settings) -> pd.DataFrame:
    """:func:`effects` plus, per effect, the MDE of the run as it is and the speakers (and
    trials) per stratum needed to detect ``settings.effect`` with ``settings.power``: every
    stratum gets that many speakers (equal strata), scaled from the pilot's largest stratum,
    and ``*_trials_per_stratum_needed`` keep the pilot's largest trials per speaker."""
    eff = effects(a)
    pilot = pilot_of(a.run.design())
    n0 = pilot.n_max
    out = eff.copy()
    se = out["se"].astype(float)
    out["speakers_per_stratum"] = n0
    out["mde"] = settings.z * se
    out["target_effect"] = settings.effect
    out["power"] = settings.power
    out["alpha"] = settings.alpha
    need = [speakers_needed(v, n0, settings) for v in se.tolist()]
    out["speakers_per_stratum_needed"] = pd.Series(need, index=out.index, dtype=float)
    t_per, n_per = pilot.trials_per_speaker()
    out["target_trials_per_speaker"] = t_per
    out["nontarget_trials_per_speaker"] = n_per
    out["target_trials_per_stratum_needed"] = pd.Series(
        [math.ceil(n * t_per) if np.isfinite(n) else math.nan for n in need], index=out.index, dtype=float
    )
    out["nontarget_trials_per_stratum_needed"] = pd.Series(
        [math.ceil(n * n_per) if np.isfinite(n) else math.nan for n in need], index=out.index, dtype=float
    )
    ok = np.isfinite(se.to_numpy()) & (se.to_numpy() > 0)
    why = out["note"].where(out["note"] != "", "no bootstrap spread")
    out["note"] = np.where(ok, out["note"], why + ": cannot be planned")
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
