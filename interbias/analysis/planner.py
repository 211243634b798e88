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
* the estimate over its SE follows the findings' test: Student's t with the effect's
  Satterthwaite degrees of freedom ν (the findings' ``df``; the corrected design's) where the
  findings give one, else the normal, and the effect is declared when a two-sided interval at
  level 1 − α excludes zero. ν is the pilot's: it grows with speakers, so the follow-up's is
  about as large or larger (on the E16-like check ≈ 45 at 60 and at 105 speakers): taking the
  pilot's ν for the follow-up's test is conservative.

Minimum detectable effect: MDE(n) = λ · SE(n). λ is chosen so that the stated power is the
power of the whole procedure, pilot included: a plan scales the *pilot's* SE, which is itself an
estimate, so the SE a follow-up of n speakers really has is SE(n) / √X with X ~ χ²_ν / ν (ν the
pilot's df: what the findings' t test already assumes of an SE). The follow-up's estimate over its
SE is then a noncentral t_ν with noncentrality λ·√X, and λ solves
E_X[P(|t_ν(λ√X)| > t_{ν,1−α/2})] = power (:func:`planned_ncp`). The textbook
λ = t_{1−α/2} + t_power (the pilot's SE taken as the truth) states a power that is not true:
averaged over the pilot's SE it gives 0.78 at ν = 45, α = 0.01, 0.75 at ν = 20 for a stated 0.80
(:func:`textbook_ncp`, kept for comparison). Without ν (the normal) λ = z_{1−α/2} + z_power.
Speakers per stratum needed for an effect δ: n = ceil(n_pilot · (λ · SE_pilot / δ)²) (at least 2),
with n_pilot the pilot's LARGEST stratum. The plan states equal strata: the follow-up run
(``run --plan``) draws n speakers in every stratum, so no stratum has fewer speakers than the
scaling assumed (an effect's variance is a sum of per-stratum terms, each ∝ 1/speakers: with
unequal pilot strata the plan is conservative). Trials: the follow-up draws
n · t target and n · u non-target trials per stratum, t and u the pilot's largest target and
non-target trials per speaker over strata (``*_trials_per_stratum_needed``), so trials per
speaker never fall below the pilot's.

The level planned for. The findings resolve an effect on its p-value adjusted over the
experiment's family of m effects (Holm by default). With ``Settings(family=True)`` (what
``interbias plan`` does) each effect is planned at α/m, Holm's worst case (the level the
smallest p-value of the family must reach), so the planned power is the power to be *resolved*
in the findings; with ``family=False`` one effect is planned alone at α. m is the effect's
``family_size`` in :func:`effects` (the confirmatory family: main effects averaged over the
other factors' levels, interactions, gaps); effects outside the family are not planned.

What the experiment would refuse is never proposed: a need below the experiment's
``trials.min_speakers`` is raised to it, and an effect whose pilot replicates have no spread
(SE 0 or undefined) gets no plan, with the reason. A run with a dev split (``trials.dev_share``
s) draws ``speakers_per_stratum`` speakers per stratum in eval and
:func:`interbias.trials.speaker_budget.dev_speakers` in dev; the plan states both.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np
import pandas as pd
from scipy import optimize, stats

from interbias.analysis.groups.fairness_cluster import MIN_SPEAKERS
from interbias.analysis.stats.bootstrap import TrialDesign
from interbias.analysis.suite import Analysis, findings
from interbias.utils.errors import AnalysisError

MODEL = (
    "SE(n) = SE_pilot * sqrt(n_pilot / n) with n speakers in every stratum, n_pilot the pilot's largest stratum "
    "(speaker-cluster bootstrap SE of the pilot; trials per speaker held at the pilot's largest level); MDE = lambda * SE, "
    "lambda the noncentrality at which the findings' t test (the effect's df; the normal without df) has the "
    "power averaged over the pilot SE's own uncertainty (chi-square on df); "
    "speakers needed = ceil(n_pilot * (lambda * SE_pilot / effect)^2), at least the "
    "experiment's min_speakers; alpha per effect = alpha / m (Holm's worst case over a family of m) unless "
    "--per-effect"
)
ASSUMPTIONS = (
    "Speakers are the independent units and the variance of an effect scales as 1/speakers once trials per "
    "speaker saturate; the follow-up run keeps the pilot's design (same conditions, same trials per speaker, "
    "speakers from the same population) with equal strata (run --plan draws n speakers and n x trials-per-speaker "
    "trials in every stratum); the estimate over its SE follows the findings' test (Student's t with the "
    "pilot's Satterthwaite df, which grows with speakers); the pilot's SE is an estimate on that df, and the "
    "stated power is averaged over it (the power of pilot + plan + follow-up, not of a follow-up whose SE "
    "is exactly the pilot's); each effect is tested two-sided at alpha/m, the level the first Holm step needs in a family "
    "of m, so the planned power is a lower bound on the power to be resolved in the findings. Effects whose "
    "terms do not move under resampling (SE 0) cannot be planned."
)


@dataclass(frozen=True)
class Settings:
    effect: float = 0.01
    power: float = 0.8
    alpha: float = 0.05
    #: Plan each effect at alpha / family_size (Holm's worst case) instead of alpha alone.
    family: bool = False

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
        return self.z_at(self.alpha)

    def z_at(self, alpha: float, df: float = math.inf) -> float:
        """λ at a per-effect level ``alpha``: :func:`planned_ncp` with ``df`` degrees of freedom
        (the findings' t test) rounded down to two significant digits (fewer df: a slightly
        larger λ, never a smaller one), z_{1−alpha/2} + z_power where ``df`` is not finite;
        infinite (no plan) below :data:`MIN_DF`."""
        return planned_ncp(alpha, self.power, df_floor(float(df)))

    def effect_alpha(self, family_size: int) -> float:
        """The per-effect level: alpha / family_size with ``family``, else alpha."""
        return self.alpha / max(1, family_size) if self.family else self.alpha


#: The fewest degrees of freedom a pilot's SE may have to be planned from: below, its own
#: uncertainty is so wide that no follow-up size has the power averaged over it (no plan).
MIN_DF = 2.0
#: Quantile nodes of X ~ χ²_ν/ν the expected power is averaged over (midpoint rule; the power
#: it states is within 1e-3 of the integral's).
NODES = 64


def textbook_ncp(alpha: float, power: float, df: float) -> float:
    """t_{ν,1−α/2} + t_{ν,power} (z's where ``df`` is not finite): the noncentrality that takes
    the pilot's SE as the truth (module doc; not what the plan uses)."""
    if np.isfinite(df) and df > 0:
        return float(stats.t.ppf(1 - alpha / 2, df) + stats.t.ppf(power, df))
    nd = NormalDist()
    return nd.inv_cdf(1 - alpha / 2) + nd.inv_cdf(power)


def expected_power(ncp: float, alpha: float, df: float) -> float:
    """The power of a two-sided t test at level ``alpha`` on ``df`` degrees of freedom when the
    effect is ``ncp`` times the SE *planned* from a pilot whose SE has ``df`` degrees of freedom:
    E_X[P(|t_df(ncp·√X)| > t_{df,1−α/2})], X ~ χ²_df/df (module doc)."""
    crit = stats.t.ppf(1 - alpha / 2, df)
    x = stats.chi2.ppf((np.arange(NODES) + 0.5) / NODES, df) / df
    lam = ncp * np.sqrt(x)
    with np.errstate(all="ignore"):
        up, down = stats.nct.sf(crit, df, lam), stats.nct.cdf(-crit, df, lam)
    # scipy's noncentral t returns NaN far in its tails (λ√X ≫ the critical value): 1 above, 0 below
    up = np.where(np.isnan(up) & (lam > crit), 1.0, up)
    return float(np.mean(up + np.nan_to_num(down, nan=0.0)))


def df_floor(df: float) -> float:
    """``df`` rounded down to two significant digits (45.37 → 45, 7.38 → 7.3, 234 → 230)."""
    if not (np.isfinite(df) and df > 0):
        return df
    step = 10.0 ** (math.floor(math.log10(df)) - 1)
    return math.floor(df / step + 1e-9) * step


@functools.lru_cache(maxsize=4096)
def planned_ncp(alpha: float, power: float, df: float) -> float:
    """λ with :func:`expected_power` (λ, alpha, df) = ``power``: the plan's multiplier of SE
    (module doc); :func:`textbook_ncp` for an infinite ``df`` (the normal, SE known)."""
    start = textbook_ncp(alpha, power, df)
    if not (np.isfinite(df) and df > 0):
        return start
    if df < MIN_DF or expected_power(20 * start, alpha, df) < power:  # a pilot SE on so few df cannot promise the power
        return math.inf
    return float(optimize.brentq(lambda v: expected_power(v, alpha, df) - power, start / 2, 20 * start, xtol=1e-7))


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


def speakers_needed(se: float, n_pilot: int, settings: Settings, *, z: float | None = None, floor: int = 2) -> float:
    """Speakers per stratum (scaled from ``n_pilot``) to detect ``settings.effect`` (``z``:
    λ (:meth:`Settings.z_at`), default ``settings.z``), at least ``floor``; NaN when SE is 0/NaN
    or λ infinite (a pilot SE on fewer than :data:`MIN_DF` df)."""
    z = settings.z if z is None else z
    if not np.isfinite(se) or se <= 0 or not np.isfinite(z):
        return math.nan
    return float(max(floor, 2, math.ceil(n_pilot * (z * se / settings.effect) ** 2)))


def effects(a: Analysis) -> pd.DataFrame:
    """Every main effect, IE and subgroup gap of the analysis with its interval, SE, p-value,
    adjusted p-value (``a.options.adjust`` over each experiment's family) and resolved flag
    (:mod:`interbias.analysis.effects`; needs bootstrap replicates)."""
    if a.replicates is None:
        raise AnalysisError("effects and plans need bootstrap replicates (--bootstrap > 0 on a run with scores)")
    return findings(a)


def plan(a: Analysis, settings: Settings) -> pd.DataFrame:
    """:func:`effects` plus, per effect, the MDE of the run as it is and the speakers (and
    trials) per stratum needed to detect ``settings.effect`` with ``settings.power`` at the
    per-effect level (``alpha_effect``): every stratum gets that many speakers (equal strata),
    scaled from the pilot's largest stratum, never fewer than the experiment's
    ``min_speakers``; ``*_trials_per_stratum_needed`` keep the pilot's largest trials per
    speaker; ``dev_speakers_per_stratum_needed`` is what the dev split then draws."""
    from interbias.trials.speaker_budget import dev_speakers

    eff = effects(a)
    pilot = pilot_of(a.run.design())
    exp = a.run.experiment(AnalysisError)
    floor = exp.trials.min_speakers if exp is not None else 2
    hint = spread_hint(pilot, floor)
    dev_share = exp.trials.dev_share if exp is not None else None
    n0 = pilot.n_max
    out = eff.copy()
    se = out["se"].astype(float)
    sizes = out["family_size"] if "family_size" in out.columns else pd.Series(1, index=out.index)
    in_family = family_members(out)
    alphas = pd.Series([settings.effect_alpha(int(m)) for m in sizes], index=out.index, dtype=float)
    df = findings_df(out)
    z = pd.Series([settings.z_at(al, d) for al, d in zip(alphas, df, strict=True)], index=out.index, dtype=float)
    out["speakers_per_stratum"] = n0
    out["mde"] = (z * se).where(np.isfinite(z))
    out["target_effect"] = settings.effect
    out["power"] = settings.power
    out["alpha"] = settings.alpha
    out["alpha_effect"] = alphas
    need = [
        speakers_needed(v, n0, settings, z=zz, floor=floor) if fam else math.nan
        for v, zz, fam in zip(se.tolist(), z.tolist(), in_family.tolist(), strict=True)
    ]
    out["speakers_per_stratum_needed"] = pd.Series(need, index=out.index, dtype=float)
    out["dev_speakers_per_stratum_needed"] = pd.Series(
        [dev_speakers(int(n), dev_share, floor) if np.isfinite(n) and dev_share else 0 for n in need],
        index=out.index,
        dtype=float,
    )
    t_per, n_per = pilot.trials_per_speaker()
    out["target_trials_per_speaker"] = t_per
    out["nontarget_trials_per_speaker"] = n_per
    out["target_trials_per_stratum_needed"] = pd.Series(
        [math.ceil(n * t_per) if np.isfinite(n) else math.nan for n in need], index=out.index, dtype=float
    )
    out["nontarget_trials_per_stratum_needed"] = pd.Series(
        [math.ceil(n * n_per) if np.isfinite(n) else math.nan for n in need], index=out.index, dtype=float
    )
    before = out["note"].astype(str) if "note" in out.columns else pd.Series("", index=out.index)
    out["note"] = [
        _note(v, n, fam, floor, n0, settings, zz, was, hint)
        for v, n, fam, zz, was in zip(se, need, in_family, z, before, strict=True)
    ]
    for k, v in a.replicates.stamp().items():  # type: ignore[union-attr]
        out[k] = v
    return out


def findings_df(frame: pd.DataFrame) -> pd.Series:
    """Degrees of freedom of each effect's test in the findings: ``df`` where its p-value is
    Student's t (``interval`` wald), else infinite (the normal; the bias-corrected interval)."""
    df = frame["df"].astype(float) if "df" in frame.columns else pd.Series(np.inf, index=frame.index)
    wald = frame["interval"].astype(str) == "wald" if "interval" in frame.columns else True
    return df.where(wald & np.isfinite(df) & (df > 0), np.inf)


def family_members(frame: pd.DataFrame) -> pd.Series:
    """Effects of the confirmatory family: ``test_family`` confirmatory where the findings say,
    else every effect but ``simple`` ones."""
    if "test_family" in frame.columns:
        return frame["test_family"].astype(str) == "confirmatory"
    if "kind" in frame.columns:
        return frame["kind"].astype(str) != "simple"
    return pd.Series(True, index=frame.index)


def _note(
    se: float,
    need: float,
    in_family: bool,
    floor: int,
    n0: int,
    settings: Settings,
    z: float,
    before: str = "",
    hint: str = "",
) -> str:
    """Why an effect has no plan (``before``: the findings' own note, e.g. why it is left out
    of the family, kept in front), or why its plan is larger than its SE asks."""
    prior = before if before and before != "nan" else ""
    if not in_family:
        return f"no plan ({prior})" if prior else "outside the family: not planned"
    mine = ""
    if not (np.isfinite(se) and se > 0):
        mine = f"no plan (no bootstrap spread in the pilot: SE 0 or undefined{'; ' + hint if hint else ''})"
    elif not np.isfinite(z):
        mine = f"no plan (the pilot's SE has under {MIN_DF:g} degrees of freedom: no size promises the power)"
    elif need == floor and math.ceil(n0 * (z * se / settings.effect) ** 2) < floor:
        mine = f"raised to the experiment's min_speakers {floor}"
    return "; ".join(x for x in (prior, mine) if x)


def spread_hint(pilot: Pilot, floor: int = 2) -> str:
    """Where a pilot without bootstrap spread falls short: its smallest stratum and the speakers
    per stratum a speaker bootstrap needs (the clustered test's minimum
    :data:`~interbias.analysis.groups.fairness_cluster.MIN_SPEAKERS`, or the experiment's
    ``min_speakers`` ``floor`` when larger), or, when every stratum has them, that the metric
    itself does not move."""
    need = max(MIN_SPEAKERS, floor)
    stratum, n = min(pilot.speakers.items(), key=lambda kv: (kv[1], kv[0]))
    if n < need:
        return (
            f"stratum {stratum} has {n} speaker(s), the fewest of the pilot's {len(pilot.speakers)} strata; "
            f"a pilot needs at least {need} speakers in every stratum: trials: {{speakers_per_stratum: {need}}}"
        )
    return (
        f"every stratum has at least {need} speakers (fewest: {stratum}, {n}), so the metric itself does not "
        "move under resampling (e.g. EER 0 in every replicate): a harder condition or more trials per speaker"
    )


def no_plan_reason(frame: pd.DataFrame) -> str | None:
    """``None`` when some effect has a plan, else why none has (with the pilot's shortfall
    that the rows' notes carry, :func:`spread_hint`)."""
    if frame["speakers_per_stratum_needed"].notna().any():
        return None
    if frame.empty:
        return "no plan (the run has no effect to plan)"
    notes = [str(n) for n in frame.get("note", pd.Series(dtype=str)) if "SE 0 or undefined; " in str(n)]
    hint = notes[0].split("SE 0 or undefined; ", 1)[1].rstrip(")") if notes else ""
    return "no plan (no effect of the family has bootstrap spread in the pilot: every SE is 0 or undefined" + (
        f"; {hint})" if hint else ")"
    )


#: Kinds ``interbias plan --kind`` selects.
PLAN_KINDS = ("main", "interaction", "gap")
#: The kind that answers an experiment of each ``use``: listed first in the plan.
CENTRAL_KIND = {"contrast": "interaction", "gap": "gap"}


def select(frame: pd.DataFrame, model: str | None = None, kind: str | None = None) -> pd.DataFrame:
    """The plan's rows of one ``model`` and/or one ``kind`` (all when None); an unknown name is
    refused with the valid ones."""
    out = frame
    if kind is not None:
        if kind not in PLAN_KINDS:
            raise AnalysisError(f"--kind {kind!r}: valid: {', '.join(PLAN_KINDS)}")
        out = out[out["kind"].astype(str) == kind]
    if model is not None:
        models = list(dict.fromkeys(frame["model"].astype(str)))
        if model not in models:
            raise AnalysisError(f"--model {model!r}: the run's models are {', '.join(models) or '(none)'}")
        out = out[out["model"].astype(str) == model]
    return out.reset_index(drop=True)


def mde_at(frame: pd.DataFrame, speakers: int) -> pd.Series:
    """The MDE each effect would have with ``speakers`` per stratum (every stratum):
    MDE · sqrt(n_pilot / speakers), the plan's SE(n) scaling at the same level and power."""
    if speakers < 2:
        raise AnalysisError(f"--speakers must be at least 2, got {speakers}")
    n0 = frame["speakers_per_stratum"].astype(float)
    return frame["mde"].astype(float) * np.sqrt(n0 / speakers)


def central_first(frame: pd.DataFrame, use: str | None) -> pd.DataFrame:
    """``frame`` (rows with a ``kind``) with the experiment's central kind first, the others
    in their order."""
    first = CENTRAL_KIND.get(str(use))
    if first is None or frame.empty:
        return frame
    key = (frame["kind"].astype(str) != first).astype(int)
    return frame.loc[key.sort_values(kind="stable").index].reset_index(drop=True)


def corpus_capacity(run: Any) -> int | None:
    """The most speakers per stratum the pilot's corpus holds: the fewest speakers over the
    pilot's strata (trials.json) when the pilot drew every speaker (no
    ``trials.speakers_per_stratum``); None when the pilot drew a subset, so the corpus may hold more."""
    from interbias.run.rundir import TRIALS_META

    exp = run.experiment(AnalysisError)
    if exp is None or exp.trials.speakers_per_stratum is not None:
        return None
    meta = run.read_json(TRIALS_META, AnalysisError) or {}
    counts = [int(v.get("n_speakers", 0)) for v in (meta.get("strata") or {}).values() if isinstance(v, dict)]
    return min(counts) if counts and all(counts) else None


def voice_groups(trials: pd.DataFrame) -> int:
    """How many disjoint sets of voices the pilot's strata draw from: the strata times the
    distinct voices over the voices summed over strata (2 for strata by gender, each with voices
    of its own; 1 for six strata by emotion that all share one set of voices)."""
    per = [
        set(grp["enrol_speaker"].astype(str)) | set(grp["test_speaker"].astype(str))
        for _, grp in trials.groupby("stratum", sort=False)
    ]
    union = set().union(*per) if per else set()
    return max(1, round(len(per) * len(union) / sum(len(v) for v in per))) if union else 1


def pilot_voice_groups(run: Any) -> int:
    """:func:`voice_groups` of the pilot's trials.parquet (1 when the run has none)."""
    from interbias.run.rundir import TRIALS

    path = run.file(TRIALS)
    if not path.is_file():
        return 1
    return voice_groups(pd.read_parquet(path, columns=["stratum", "enrol_speaker", "test_speaker"]))


def build_command(per_stratum: int, groups: int) -> str:
    """The ``data build`` command whose synthetic corpus holds ``per_stratum`` voices in each of
    ``groups`` voice-disjoint strata: the total rounded up to a multiple of the corpus's cells
    (gender × age band × accent), so ``data build`` accepts it and every stratum stays balanced."""
    from interbias.corpora.synthetic import SyntheticSpec

    cells = SyntheticSpec().n_cells()
    total = max(cells, math.ceil(groups * per_stratum / cells) * cells)
    return f"interbias data build synthetic --speakers {total}"


def beyond_corpus(need: float, capacity: int | None, corpus: str, groups: int = 1, dev: int = 0) -> str:
    """What to do when a follow-up needs more speakers per stratum than the corpus holds ("" when
    it does not, or when the capacity is unknown). ``groups``: the pilot's voice-disjoint strata
    (:func:`voice_groups`); ``dev``: dev speakers per stratum on top of the evaluation's."""
    if capacity is None or not np.isfinite(need) or need <= capacity:
        return ""
    n = int(need)
    each = n + dev
    shared = "strata with voices of their own" if groups > 1 else "set of voices shared by every stratum"
    dev_text = f" (+ {dev} dev)" if dev else ""
    return (
        f"the follow-up needs {n}{dev_text} speakers per stratum, the {corpus} corpus holds {capacity}: "
        f"build a larger corpus ({groups} {shared} × {each} voices): {build_command(each, groups)}; "
        f"or use a real corpus with at least {each} speakers per stratum, or plan narrower "
        "(--kind, --model, a larger --effect)"
    )


def median_need(need: Any) -> float:
    """The median of speakers-per-stratum needs, rounded up to a whole speaker (NaN when none):
    the one figure the headline, the answer and ``plan`` state."""
    ok = np.asarray(need, dtype=float)
    ok = ok[np.isfinite(ok)]
    return float(math.ceil(np.median(ok))) if len(ok) else math.nan


def recommendation(frame: pd.DataFrame) -> pd.DataFrame:
    """Per experiment × kind: the largest speakers-per-stratum need over models and effects
    (to resolve every effect of that kind) and the median need (rounded up: a whole speaker)."""
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
                "median_mde": float(np.nanmedian(grp["mde"])) if grp["mde"].notna().any() else math.nan,
                "median_speakers_needed": median_need(ok),
                "max_speakers_needed": float(ok.max()) if len(ok) else math.nan,
            }
        )
    return pd.DataFrame(rows)
