"""Subgroup gaps under conditions (InterBias-SV's E16 analysis, Appendix D).

The group factor is a population factor (gender); the other factors set the condition. Per
model, condition and non-reference group level g:
gap = M(g, condition) − M(reference group, condition) (signed; for E16 with reference female,
EER_male − EER_female) and abs_gap = |gap|. Over models: mean and max of abs_gap, mean signed
gap, group means. Ratio amplification = gap(condition) / gap(reference condition), computed
only where the reference-condition gap is non-zero and always reported with ``ratio_flag``
when |gap(reference condition)| is below ``floor``: near-zero denominators make the ratio
unstable (the paper's −157.6 to +193.7). With bootstrap replicates every gap, abs_gap and
model mean gets a percentile interval from the same resample; with permutations each gap gets
a speaker-level permutation p-value (:mod:`interbias.analysis.stats.permutation`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from interbias.analysis.contrasts import SLOTS, Grid, grids, normalised, place
from interbias.analysis.stats.permutation import UNIT, RunPermutations
from interbias.analysis.stats.replicates import Replicates
from interbias.utils.errors import AnalysisError
from interbias.utils.numbers import require

#: Default floor on |reference-condition gap| below which a ratio is flagged unstable (EER).
DEFAULT_FLOOR = 0.01


@dataclass(frozen=True)
class GapTables:
    gaps: pd.DataFrame
    summary: pd.DataFrame
    group_factor: dict[str, str]  # experiment -> group factor name
    #: signed gap replicates aligned with ``gaps`` rows (n × B), when bootstrapped.
    gap_replicates: np.ndarray | None = None
    #: Per ``gaps`` row, the gap as {cell: coefficient} (group cell +1, reference-group cell −1).
    coefficients: tuple[dict[str, float], ...] = ()

    @property
    def abs_gap_replicates(self) -> np.ndarray | None:
        return None if self.gap_replicates is None else np.abs(self.gap_replicates)


def population_factors(results: pd.DataFrame, resolved: dict[str, Any] | None = None) -> dict[str, list[str]]:
    """Population factors per experiment: from the resolved experiment when given, else from
    the ``stratum`` column (population factors are the ones naming the stratum)."""
    frame = normalised(results)
    out: dict[str, list[str]] = {}
    for exp, grp in frame.groupby("experiment", sort=False):
        names = [n for s in SLOTS for n in sorted(set(grp[f"factor_{s}"])) if n]
        if resolved and resolved.get("name") == exp:
            pops = {f.get("name") for f in resolved.get("factors", []) if f.get("type") == "population"}
            out[exp] = [n for n in names if n in pops]
        elif "stratum" in grp.columns:
            parts = {p.split("=", 1)[0] for st in grp["stratum"] for p in str(st).split(",") if "=" in p}
            out[exp] = [n for n in names if n in parts]
        else:
            out[exp] = []
    return out


def _key(g: Grid, gi: int, level: str, others: list[int], cond: tuple[str, ...]) -> tuple[str, ...]:
    """The cell key with the group slot at ``level`` and the other slots at ``cond``."""
    return place(len(g.slots), {gi: level, **dict(zip(others, cond, strict=True))})


def _gap_columns(replicates: Replicates | None, permutations: RunPermutations | None) -> list[str]:
    cols = [
        "experiment",
        "dataset",
        "model",
        "family",
        "group_factor",
        "group_ref",
        "group_level",
        "condition",
        "is_reference_condition",
        "metric",
        "value_ref_group",
        "value_group",
        "gap",
        "abs_gap",
        "ref_condition_gap",
        "ratio",
        "ratio_floor",
        "ratio_flag",
    ]
    if replicates is not None:
        cols += ["gap_lo", "gap_hi", "abs_gap_lo", "abs_gap_hi", "n_boot_valid", *replicates.stamp()]
    if permutations is not None:
        cols += ["p_perm", "n_perm_valid", "perm_unit", "perm_seed", "perm_note"]
    return cols


def _group_name(exp: str, names: list[str], group_factor: str | None, pops: dict[str, list[str]]) -> str | None:
    """The factor compared as groups in ``exp``: ``group_factor``, else its first population
    factor; ``None`` (skipped) without one."""
    if group_factor is not None:
        if group_factor not in names:
            raise AnalysisError(f"--group-factor {group_factor!r} is not a factor of {exp}; valid: {', '.join(names)}")
        return group_factor
    return pops[exp][0] if pops.get(exp) else None


def _add_uncertainty(
    row: dict[str, Any],
    info: dict[str, Any],
    cells: tuple[str, str],
    replicates: Replicates | None,
    permutations: RunPermutations | None,
    signed_reps: list[np.ndarray],
) -> None:
    """Bootstrap intervals of the gap (reference-group cell, group cell) and its permutation
    p-value, when requested; the signed gap's replicates are appended to ``signed_reps``."""
    exp, model = info["experiment"], info["model"]
    ref_cell, cell = cells
    if replicates is not None:
        r = replicates.of(exp, model, cell) - replicates.of(exp, model, ref_cell)
        lo, hi, n_valid = replicates.ci(r)
        alo, ahi, _ = replicates.ci(np.abs(r))
        row.update(gap_lo=lo, gap_hi=hi, abs_gap_lo=alo, abs_gap_hi=ahi, n_boot_valid=int(n_valid))
        row.update(replicates.stamp())
        signed_reps.append(r)
    if permutations is not None:
        res = permutations.test(model, ref_cell, cell)
        row.update(
            p_perm=res.p_value,
            n_perm_valid=res.n_valid,
            perm_unit=UNIT,
            perm_seed=permutations.seed,
            perm_note=res.note,
        )


def compute_gaps(
    results: pd.DataFrame,
    metric: str = "eer",
    *,
    group_factor: str | None = None,
    resolved: dict[str, Any] | None = None,
    floor: float = DEFAULT_FLOOR,
    replicates: Replicates | None = None,
    permutations: RunPermutations | None = None,
) -> GapTables:
    """Gaps for every experiment that has a group factor (``group_factor`` by name, else its
    first population factor); experiments without one are skipped."""
    require("--gap-floor", floor, low=0.0, error=AnalysisError)
    pops = population_factors(results, resolved)
    rows: list[dict[str, Any]] = []
    signed_reps: list[np.ndarray] = []
    coefs: list[dict[str, float]] = []
    chosen: dict[str, str] = {}
    for g in grids(results, metric):
        exp = g.info["experiment"]
        names = [g.factor[s] for s in g.slots]
        gname = _group_name(exp, names, group_factor, pops)
        if gname is None:
            continue
        chosen[exp] = gname
        gi = names.index(gname)
        gslot = g.slots[gi]
        others = [i for i in range(len(g.slots)) if i != gi]
        conds = list(dict.fromkeys(tuple(k[i] for i in others) for k in g.value))
        ref_cond = tuple(g.ref[g.slots[i]] for i in others)

        rg = g.ref[gslot]
        for level in [v for v in g.levels[gslot] if v != rg]:
            k0 = (_key(g, gi, rg, others, ref_cond), _key(g, gi, level, others, ref_cond))
            clean = g.value[k0[1]] - g.value[k0[0]] if all(k in g.value for k in k0) else np.nan
            for cond in conds:
                kr, kg = _key(g, gi, rg, others, cond), _key(g, gi, level, others, cond)
                if kr not in g.value or kg not in g.value:
                    continue
                gap = g.value[kg] - g.value[kr]
                is_ref = cond == ref_cond
                ratio = gap / clean if (not is_ref and np.isfinite(clean) and clean != 0) else np.nan
                flag = ""
                if not is_ref and np.isfinite(clean) and abs(clean) < floor:
                    flag = f"unstable: |reference-condition gap| {abs(clean):.4f} < floor {floor:g}"
                row: dict[str, Any] = {
                    **g.info,
                    "group_factor": gname,
                    "group_ref": rg,
                    "group_level": level,
                    "condition": ",".join(f"{g.factor[g.slots[i]]}={v}" for i, v in zip(others, cond, strict=True))
                    or "(none)",
                    "is_reference_condition": is_ref,
                    "metric": metric,
                    "value_ref_group": g.value[kr],
                    "value_group": g.value[kg],
                    "gap": gap,
                    "abs_gap": abs(gap),
                    "ref_condition_gap": clean,
                    "ratio": ratio,
                    "ratio_floor": floor,
                    "ratio_flag": flag,
                }
                _add_uncertainty(row, g.info, (g.cell[kr], g.cell[kg]), replicates, permutations, signed_reps)
                rows.append(row)
                coefs.append({g.cell[kg]: 1.0, g.cell[kr]: -1.0})
    gaps = pd.DataFrame(rows, columns=_gap_columns(replicates, permutations))
    reps = np.array(signed_reps).reshape(len(rows), replicates.n_boot) if replicates is not None else None
    summary = summarize_gaps(gaps, None if reps is None else np.abs(reps), replicates)
    return GapTables(gaps, summary, chosen, reps, tuple(coefs))


def summarize_gaps(
    gaps: pd.DataFrame, abs_gap_replicates: np.ndarray | None = None, replicates: Replicates | None = None
) -> pd.DataFrame:
    """Per experiment × group level × condition, over models: mean of each group's metric,
    mean signed gap, mean and max |gap|, count of positive gaps, the ratio range and how many
    ratios are flagged; with replicates, the interval of the mean |gap| over models."""
    by = ["experiment", "group_factor", "group_ref", "group_level", "condition", "is_reference_condition"]
    cols = by + [
        "n_models",
        "mean_value_ref_group",
        "mean_value_group",
        "mean_gap",
        "mean_abs_gap",
        "max_abs_gap",
        "n_positive_gap",
        "ratio_min",
        "ratio_max",
        "n_ratio_flagged",
    ]
    if replicates is not None:
        cols += ["mean_abs_gap_lo", "mean_abs_gap_hi", *replicates.stamp()]
    out = []
    for key, grp in gaps.groupby(by, sort=False):
        ratio = grp["ratio"].to_numpy(float)
        row = {
            **dict(zip(by, key, strict=True)),
            "n_models": len(grp),
            "mean_value_ref_group": grp["value_ref_group"].mean(),
            "mean_value_group": grp["value_group"].mean(),
            "mean_gap": grp["gap"].mean(),
            "mean_abs_gap": grp["abs_gap"].mean(),
            "max_abs_gap": grp["abs_gap"].max(),
            "n_positive_gap": int((grp["gap"] > 0).sum()),
            "ratio_min": np.nanmin(ratio) if np.isfinite(ratio).any() else np.nan,
            "ratio_max": np.nanmax(ratio) if np.isfinite(ratio).any() else np.nan,
            "n_ratio_flagged": int((grp["ratio_flag"] != "").sum()),
        }
        if replicates is not None and abs_gap_replicates is not None:
            pos = gaps.index.get_indexer(grp.index)
            lo, hi, _ = replicates.ci(abs_gap_replicates[pos].mean(axis=0))
            row.update(mean_abs_gap_lo=float(lo), mean_abs_gap_hi=float(hi), **replicates.stamp())
        out.append(row)
    return pd.DataFrame(out, columns=cols)
