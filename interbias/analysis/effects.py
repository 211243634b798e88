"""Every effect a run tests, in one table: main effects, interactions (IE), subgroup gaps and, on
request, simple effects; each with its interval, SE, p-value, adjusted p-value and resolved flag.

Every effect is a linear combination Σ coefficient·M(cell) of one experiment × model's cells:

* ``main``: factor F at level l against its reference, **averaged with equal weight over every
  setting of all the other factors** of the grid (the group factor included):
  mean_s [M(F = l, s) − M(F = ref, s)]. For the group factor itself this is the averaged gap
  (group level − reference group, averaged over every condition; a grid with the group factor
  alone has no main effect, its one gap is that effect). Label:
  "main F=l − F=ref (averaged over G, …)";
* ``simple``: F = l against F = ref at one setting s of the other factors (one term of the
  average above); not for the group factor (those are the gaps). Only with ``simple=True``;
  outside the confirmatory family (adjusted among the simple effects only);
* ``interaction`` and ``gap``: those of :mod:`interbias.analysis.contrasts` and
  :mod:`interbias.analysis.gaps`.

Family (``test_family``): ``confirmatory`` = every main effect, IE and gap of one experiment
(all models), adjusted together by :mod:`interbias.analysis.stats.multiplicity`; ``simple`` = the
simple effects, adjusted among themselves; ``left out`` = an effect of a DCF metric whose
operating point the run cannot support (n_nontarget·p_target < ``MIN_EVENTS`` in one of its
cells): shown, never tested. Resolved = adjusted p < α.

Standard error (``se``). Design ``corrected`` (default, speaker unit): the speaker bootstrap
counts the non-target pairs' own (residual) variance about three times; with V_S the speaker-
bootstrap variance and V_N the variance under resampling the non-target speaker pairs,
SE² = n/(n − 1)·V_S − c·V_N, c = 1 + max(0, 1 − 2/k)/(1 − 1/n), n the harmonic mean of speakers per
block and k the fewest distinct non-target pairs per speaker in a cell (docs/analysis.md derives
and measures it). Design
``speaker``: SE² = V_S. A non-positive SE² (or replicates that do not move) gives no interval:
NaN bounds, SE and p, and ``note`` says why. ``se_speaker`` = √V_S.

Interval and p (``interval``): ``wald`` for EER-like metrics, estimate ± q·SE, p = 2(1 − F(|θ̂|/SE)),
F Student's t with the corrected SE's Satterthwaite degrees of freedom (``df``; the normal for
the plain design);
``bc`` for DCF metrics (skewed, biased low), the bias-corrected percentile interval of the
replicates shrunk to the corrected SE and the p-value inverting it
(:func:`interbias.analysis.stats.multiplicity.bc_interval`). Either way the interval excludes 0 exactly
when p < 1 − level. ``lo_simultaneous``/``hi_simultaneous``: the same construction at the
Bonferroni level 1 − α/m over the effect's family.
"""

from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from interbias.analysis.contrasts import ContrastTables, Grid, grids, place
from interbias.analysis.gaps import GapTables
from interbias.analysis.stats import multiplicity
from interbias.analysis.stats.replicates import Replicates
from interbias.analysis.verdict import verdict_text
from interbias.metrics.registry import names

#: Order of kinds in the findings: the plain change a condition causes first.
KINDS = ("main", "simple", "interaction", "gap")
#: Kinds in the confirmatory family.
CONFIRMATORY = ("main", "interaction", "gap")
#: Metrics whose effects get the bias-corrected percentile interval (costs: skewed, biased low).
SKEWED = names(lambda s: s.skewed)
#: An operating point needs n_nontarget·p_target at least this in every cell of an effect.
MIN_EVENTS = 10
#: Bootstrap designs (``--bootstrap-design``).
DESIGNS = ("corrected", "speaker")
COLUMNS = [
    "experiment",
    "model",
    "family",
    "kind",
    "effect",
    "group",
    "condition",
    "reference",
    "metric",
    "value_from",
    "value_to",
    "estimate",
    "lo",
    "hi",
    "se",
    "p_value",
    "p_adjusted",
    "adjustment",
    "family_size",
    "lo_simultaneous",
    "hi_simultaneous",
    "resolved",
    "verdict",
    "test_family",
    "interval",
    "se_speaker",
    "df",
    "note",
]


@dataclass(frozen=True)
class Effect:
    row: dict[str, Any]
    coef: dict[str, float]  # cell -> coefficient; empty when a cell of it is missing


def _label(names: list[str], idx: list[int], key: tuple[str, ...]) -> str:
    return ",".join(f"{names[i]}={key[i]}" for i in idx) or "(none)"


def _average(g: Grid, pairs: list[tuple[tuple[str, ...], tuple[str, ...]]]) -> tuple[dict[str, float], float, float]:
    """(coefficients, mean from, mean to) of mean_s [M(to_s) − M(from_s)]; empty when a cell is missing."""
    if any(k not in g.value for pair in pairs for k in pair):
        return {}, np.nan, np.nan
    w = 1.0 / len(pairs)
    coef: dict[str, float] = {}
    for k1, k0 in pairs:
        coef[g.cell[k1]] = coef.get(g.cell[k1], 0.0) + w
        coef[g.cell[k0]] = coef.get(g.cell[k0], 0.0) - w
    return coef, float(np.mean([g.value[k0] for _, k0 in pairs])), float(np.mean([g.value[k1] for k1, _ in pairs]))


def _one_factor(g: Grid, group: str | None, simple: bool) -> list[Effect]:
    """Main effects of every factor level (averaged over the other factors' settings) and,
    with ``simple``, the per-setting terms of the non-group factors."""
    n = len(g.slots)
    names = [g.factor[s] for s in g.slots]
    base = {c: g.info[c] for c in ("experiment", "model", "family")}
    out = []
    for i, slot in enumerate(g.slots):
        others = [j for j in range(n) if j != i]
        settings = list(itertools.product(*[g.levels[g.slots[j]] for j in others]))
        ref = g.ref[slot]
        over = ", ".join(names[j] for j in others if len(g.levels[g.slots[j]]) > 1)
        # a factor with one level in the results is not averaged over: say which level it is
        single = [f"{names[j]}={g.levels[g.slots[j]][0]}" for j in others if len(g.levels[g.slots[j]]) == 1]
        scope = (f" (averaged over {over})" if over else "") + (
            f" (at {', '.join(single)}: the only level in the results)" if single else ""
        )
        if names[i] == group and not others:
            continue  # the group factor alone: its main effect is the gap
        for lv in [v for v in g.levels[slot] if v != ref]:
            pairs = [
                (
                    place(n, {i: lv, **dict(zip(others, s, strict=True))}),
                    place(n, {i: ref, **dict(zip(others, s, strict=True))}),
                )
                for s in settings
            ]
            coef, v0, v1 = _average(g, pairs)
            cond, refl = f"{names[i]}={lv}", f"{names[i]}={ref}"
            row = {**base, "kind": "main", "group": "", "condition": cond, "reference": refl}
            row.update(effect=f"main {cond} − {refl}{scope}")
            row.update(
                value_from=v0, value_to=v1, note="" if coef else "not estimable: a cell of the average is missing"
            )
            out.append(Effect(row, coef))
            if not simple or names[i] == group or not others:
                continue
            for k1, k0 in pairs:
                if k1 not in g.value or k0 not in g.value:
                    continue
                at = _label(names, others, k1)
                row = {**base, "kind": "simple", "group": at, "condition": cond, "reference": refl}
                row.update(
                    effect=f"simple {cond} − {refl} at {at}", value_from=g.value[k0], value_to=g.value[k1], note=""
                )
                out.append(Effect(row, {g.cell[k1]: 1.0, g.cell[k0]: -1.0}))
    return out


def _tabled(contrasts: ContrastTables, gaps: GapTables) -> list[Effect]:
    """Interactions and gaps, from their tables and coefficients."""
    out = []
    for r, coef in zip(contrasts.contrasts.itertuples(index=False), contrasts.coefficients, strict=True):
        levels = ", ".join(v for v in (r.level_a, r.level_b, r.level_c) if v)
        row = {k: getattr(r, k) for k in ("experiment", "model", "family")}
        row.update(kind="interaction", effect=f"IE {r.contrast} at {levels}", group="", condition=levels)
        row.update(reference="additive prediction", value_from=float(r.predicted))
        row.update(value_to=float(r.ie) + float(r.predicted), note="")
        out.append(Effect(row, coef))
    for r, coef in zip(gaps.gaps.itertuples(index=False), gaps.coefficients, strict=True):
        row = {k: getattr(r, k) for k in ("experiment", "model", "family")}
        row.update(kind="gap", effect=f"gap {r.group_factor} {r.group_level} − {r.group_ref} at {r.condition}")
        row.update(group=f"{r.group_factor}={r.group_level}", condition=r.condition)
        row.update(reference=f"{r.group_factor}={r.group_ref}", value_from=float(r.value_ref_group))
        row.update(value_to=float(r.value_group), note="")
        out.append(Effect(row, coef))
    return out


def enumerate_effects(
    results: pd.DataFrame, metric: str, contrasts: ContrastTables, gaps: GapTables, *, simple: bool = False
) -> list[Effect]:
    """Every effect of the results (main, then simple with ``simple``, interactions, gaps)."""
    out = []
    for g in grids(results, metric):
        out += _one_factor(g, gaps.group_factor.get(g.info["experiment"]), simple)
    return out + _tabled(contrasts, gaps)


@dataclass(frozen=True)
class Correction:
    """The non-target-trial replicates and the design constants of the corrected SE."""

    replicates: Replicates
    n: float  # harmonic mean of speakers per block
    k: float  # distinct non-target speaker pairs per speaker (fewest over cells)
    nu_speakers: float = np.inf  # Σ (speakers − 1) over blocks
    nu_pairs: float = np.inf  # distinct non-target pairs − 1 (fewest over cells)

    @property
    def factors(self) -> tuple[float, float]:
        """(a, c) of SE² = a·V_S − c·V_N (NaN with one speaker per block; c = 1 when k ≤ 2)."""
        if self.n <= 1 or self.k <= 0:
            return np.nan, np.nan
        return self.n / (self.n - 1), 1 + max(0.0, 1 - 2 / self.k) / (1 - 1 / self.n)

    def df(self, v_s: np.ndarray, v_n: np.ndarray, n_boot: int) -> np.ndarray:
        """Satterthwaite degrees of freedom of SE² = a·V_S − c·V_N split by where its noise comes
        from: the speaker part a·V_S − (c − 1)·V_N (speaker effects and the pair terms they carry,
        ν_S) and the pair part V_N (ν_N): SE⁴ / ((a·V_S − (c − 1)·V_N)²/ν_S + V_N²/ν_N), each ν
        combining its clusters with the B − 1 of the replicates. NaN where a part has no
        clusters to vary over (one speaker per block, one distinct non-target pair)."""
        a, c = self.factors
        if not (self.nu_speakers > 0 and self.nu_pairs > 0 and n_boot > 1):
            return np.full(np.shape(v_s), np.nan)
        nu_s = 1 / (1 / self.nu_speakers + 1 / (n_boot - 1))
        nu_n = 1 / (1 / self.nu_pairs + 1 / (n_boot - 1))
        with np.errstate(divide="ignore", invalid="ignore"):
            return (a * v_s - c * v_n) ** 2 / ((a * v_s - (c - 1) * v_n) ** 2 / nu_s + v_n**2 / nu_n)


def _matrix(effects: list[Effect], reps: Replicates) -> np.ndarray:
    out = np.full((len(effects), reps.n_boot), np.nan)
    for i, e in enumerate(effects):
        if e.coef:
            out[i] = reps.combine(e.row["experiment"], e.row["model"], e.coef)
    return out


def _spread(frame: pd.DataFrame, matrix: np.ndarray, correction: Correction | None, effects: list[Effect]) -> None:
    """``se_speaker``, ``se`` (corrected when asked) and notes for effects without a spread."""
    se_s = multiplicity.bootstrap_se(matrix)
    frame["se_speaker"] = se_s
    frame["df"] = np.nan
    se = se_s.copy()
    if correction is not None and len(effects):
        a, c = correction.factors
        with warnings.catch_warnings():  # an effect with under two valid replicates: NaN, said below
            warnings.simplefilter("ignore", RuntimeWarning)
            v_n = np.nanvar(_matrix(effects, correction.replicates), axis=1, ddof=1)
        var = a * se_s**2 - c * v_n
        se = np.where(var > 0, np.sqrt(np.where(var > 0, var, 0.0)), np.nan)
        frame["df"] = correction.df(se_s**2, v_n, correction.replicates.n_boot)
        bad = np.isfinite(se_s) & (se_s > 0) & ~(var > 0)
        frame.loc[bad, "note"] = "no interval: the corrected variance is not positive (too few speakers or trials)"
        no_df = (var > 0) & ~np.isfinite(frame["df"].to_numpy(float))
        se = np.where(no_df, np.nan, se)
        frame.loc[no_df, "note"] = (
            "no interval: the corrected SE has no degrees of freedom (one speaker per block or one distinct "
            "non-target speaker pair)"
        )
    flat = ~(np.isfinite(se_s) & (se_s > 0)) & frame["estimate"].notna().to_numpy()
    frame.loc[flat, "note"] = "no interval: the bootstrap replicates do not vary (too few speakers per stratum)"
    frame["se"] = np.where(np.isfinite(se) & (se > 0), se, np.nan)


def collect(
    results: pd.DataFrame,
    metric: str,
    contrasts: ContrastTables,
    gaps: GapTables,
    replicates: Replicates,
    *,
    correction: Correction | None = None,
    simple: bool = False,
    support: dict[tuple[str, str, str], float] | None = None,
) -> tuple[pd.DataFrame, np.ndarray]:
    """(effects, replicates) before any adjustment: one row per effect with estimate, SE,
    interval and p-value, and its ``B`` speaker-bootstrap replicates aligned with the rows.
    ``support``: n_nontarget·p_target per (experiment, model, cell), for DCF metrics."""
    effects = enumerate_effects(results, metric, contrasts, gaps, simple=simple)
    frame = (
        pd.DataFrame([e.row for e in effects]).reindex(columns=COLUMNS) if effects else pd.DataFrame(columns=COLUMNS)
    )
    frame["metric"] = metric
    for col in ("value_from", "value_to"):
        frame[col] = frame[col].astype(float)
    frame["estimate"] = frame["value_to"] - frame["value_from"]
    frame["note"] = frame["note"].fillna("").astype(object)
    matrix = _matrix(effects, replicates)
    _spread(frame, matrix, correction, effects)
    frame["interval"] = "bc" if metric in SKEWED else "wald"
    frame["test_family"] = ["confirmatory" if e.row["kind"] in CONFIRMATORY else "simple" for e in effects]
    if support is not None and metric in SKEWED:
        for i, e in enumerate(effects):
            low = min((support.get((e.row["experiment"], e.row["model"], c), np.inf) for c in e.coef), default=np.inf)
            if low < MIN_EVENTS:
                frame.loc[i, "test_family"] = "left out"
                frame.loc[i, "note"] = (
                    f"left out of the family: n_nontarget x p_target = {low:.3g} < {MIN_EVENTS} in a cell "
                    "(too few non-target trials for this operating point)"
                )
    frame["p_value"] = np.nan
    _intervals(frame, matrix, replicates.level, {})
    return frame, matrix


def _intervals(frame: pd.DataFrame, matrix: np.ndarray, level: float, sizes: dict[int, int]) -> None:
    """Per-effect interval and p (``sizes`` empty) or the simultaneous interval at the
    Bonferroni level over each row's family size (``sizes``: row position -> m)."""
    est = frame["estimate"].to_numpy(float)
    se = frame["se"].to_numpy(float)
    ok = np.isfinite(se) & np.isfinite(est)
    lo, hi = np.full(len(frame), np.nan), np.full(len(frame), np.nan)
    levels = np.array([1 - (1 - level) / sizes.get(i, 1) if sizes else level for i in range(len(frame))])
    if len(frame) and frame["interval"].iloc[0] == "bc":
        p = np.full(len(frame), np.nan)
        se_s = frame["se_speaker"].to_numpy(float)
        for i in np.flatnonzero(ok):
            (b,), p[i] = multiplicity.bc_interval(est[i], matrix[i], se[i] / se_s[i], (levels[i],))
            lo[i], hi[i] = b
    else:
        df = frame["df"].to_numpy(float)
        lo, hi = multiplicity.wald_interval(est, np.where(ok, se, np.nan), levels, df)
        p = multiplicity.wald_p(est, np.where(ok, se, np.nan), df)
    if sizes:
        frame["lo_simultaneous"], frame["hi_simultaneous"] = lo, hi
    else:
        frame["lo"], frame["hi"], frame["p_value"] = lo, hi, np.where(ok, p, np.nan)


def decide(frame: pd.DataFrame, alpha: float, method: str, matrix: np.ndarray | None = None) -> pd.DataFrame:
    """Add the adjustment per experiment and test family, simultaneous intervals and
    ``resolved`` (adjusted p < ``alpha``) to a :func:`collect` table (``matrix``: its replicates,
    needed for the simultaneous intervals of DCF metrics)."""
    multiplicity.check_method(method)
    out = frame.copy().reset_index(drop=True)
    for col in ("estimate", "se", "lo", "hi", "value_from", "value_to", "p_value", "se_speaker"):
        out[col] = out[col].astype(float)
    out["p_adjusted"] = np.nan
    out["family_size"] = 0
    sizes: dict[int, int] = {}
    tested = out[out["test_family"] != "left out"]
    for _, idx in tested.groupby(["experiment", "test_family"], sort=False).groups.items():
        pos = out.index.get_indexer(idx)
        out.loc[idx, "p_adjusted"] = multiplicity.adjust(out.loc[idx, "p_value"].to_numpy(), method)
        out.loc[idx, "family_size"] = len(idx)
        sizes.update(dict.fromkeys(pos.tolist(), len(idx)))
    if len(out):
        reps = matrix if matrix is not None else np.full((len(out), 1), np.nan)
        _intervals(out, reps, 1 - alpha, {i: sizes.get(i, 1) for i in range(len(out))})
    out["adjustment"] = method
    out["family_size"] = out["family_size"].astype(int)
    out["resolved"] = (out["p_adjusted"] < alpha).astype(bool)
    out["verdict"] = [verdict_text(r) for r in out.itertuples(index=False)]
    return out[COLUMNS]


def order(frame: pd.DataFrame) -> pd.DataFrame:
    """Per model (first-seen order): main effects, simple effects, interactions, gaps; resolved
    first, then by estimate descending (the largest harm to an error metric first)."""
    models = {m: i for i, m in enumerate(dict.fromkeys(frame["model"]))}
    key = pd.DataFrame(
        {
            "m": frame["model"].map(models),
            "k": frame["kind"].map({k: i for i, k in enumerate(KINDS)}),
            "r": ~frame["resolved"].astype(bool),
            "e": -frame["estimate"].astype(float),
        },
        index=frame.index,
    )
    return frame.loc[key.sort_values(["m", "k", "r", "e"], kind="stable").index].reset_index(drop=True)
