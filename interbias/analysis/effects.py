"""Every effect a run tests, in one table: main effects, interactions (IE) and subgroup gaps,
each with its speaker-bootstrap interval, SE, p-value, adjusted p-value and resolved flag.

Main effect (``kind`` = ``main``), per experiment × model, for every condition (a setting of the
non-group factors) other than the reference condition, within each level of the group factor
when the experiment has one: M(group level, condition) − M(group level, reference condition),
the change the condition causes against the reference cell. Interactions and gaps are those of
:mod:`interbias.analysis.contrasts` and :mod:`interbias.analysis.gaps`.

The family is one experiment (all its effects, all models); p-values and the adjustment are
those of :mod:`interbias.analysis.multiplicity`; resolved = adjusted p < α = 1 − the interval
level. ``lo``/``hi``: the per-effect percentile interval; ``lo_simultaneous``/``hi_simultaneous``:
the Bonferroni-level interval over the family.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pandas as pd

from interbias.analysis import multiplicity
from interbias.analysis.contrasts import ContrastTables, Grid, grids, place
from interbias.analysis.gaps import GapTables
from interbias.analysis.replicates import Replicates

#: Order of kinds in the findings: the plain change a condition causes first.
KINDS = ("main", "interaction", "gap")
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
]


def _label(g: Grid, idx: list[int], key: tuple[str, ...]) -> str:
    return ",".join(f"{g.factor[g.slots[i]]}={key[i]}" for i in idx) or "(none)"


def _main_rows(g: Grid, group: str | None, replicates: Replicates) -> list[tuple[dict[str, Any], np.ndarray]]:
    """Main effects of one grid: every non-reference condition against the reference one."""
    names = [g.factor[s] for s in g.slots]
    gi = names.index(group) if group in names else None
    others = [i for i in range(len(g.slots)) if i != gi]
    ref_cond = tuple(g.ref[g.slots[i]] for i in others)
    glevels = g.levels[g.slots[gi]] if gi is not None else [None]
    out = []
    for glv in glevels:
        fixed = {} if gi is None else {gi: glv}
        k0 = place(len(g.slots), {**fixed, **dict(zip(others, ref_cond, strict=True))})
        for cond in itertools.product(*[g.levels[g.slots[i]] for i in others]):
            k = place(len(g.slots), {**fixed, **dict(zip(others, cond, strict=True))})
            if cond == ref_cond or k not in g.value or k0 not in g.value:
                continue
            r0 = replicates.of(g.info["experiment"], g.info["model"], g.cell[k0])
            r1 = replicates.of(g.info["experiment"], g.info["model"], g.cell[k])
            row = {
                **{c: g.info[c] for c in ("experiment", "model", "family")},
                "kind": "main",
                "group": "" if gi is None else f"{names[gi]}={glv}",
                "condition": _label(g, others, k),
                "reference": _label(g, others, k0),
                "value_from": g.value[k0],
                "value_to": g.value[k],
            }
            row["effect"] = f"main {row['condition']} − {row['reference']}" + (
                f" in {row['group']}" if row["group"] else ""
            )
            out.append((row, np.asarray(r1, float) - np.asarray(r0, float)))
    return out


def collect(
    results: pd.DataFrame,
    metric: str,
    contrasts: ContrastTables,
    gaps: GapTables,
    replicates: Replicates,
) -> tuple[pd.DataFrame, np.ndarray]:
    """(effects, replicates) before any test: one row per effect with estimate and percentile
    interval, and its ``B`` replicates aligned with the rows."""
    rows: list[dict[str, Any]] = []
    reps: list[np.ndarray] = []
    for g in grids(results, metric):
        for row, r in _main_rows(g, gaps.group_factor.get(g.info["experiment"]), replicates):
            row["estimate"] = row["value_to"] - row["value_from"]
            rows.append(row)
            reps.append(r)
    c = contrasts.contrasts
    if len(c) and contrasts.ie_replicates is not None:
        for r, rep in zip(c.itertuples(index=False), contrasts.ie_replicates, strict=True):
            levels = ", ".join(v for v in (r.level_a, r.level_b, r.level_c) if v)
            predicted, observed = float(r.predicted), float(r.ie) + float(r.predicted)
            rows.append(
                {
                    **{k: getattr(r, k) for k in ("experiment", "model", "family")},
                    "kind": "interaction",
                    "effect": f"IE {r.contrast} at {levels}",
                    "group": "",
                    "condition": levels,
                    "reference": "additive prediction",
                    "value_from": predicted,
                    "value_to": observed,
                    "estimate": float(r.ie),
                }
            )
            reps.append(np.asarray(rep, float))
    g = gaps.gaps
    if len(g) and gaps.gap_replicates is not None:
        for r, rep in zip(g.itertuples(index=False), gaps.gap_replicates, strict=True):
            rows.append(
                {
                    **{k: getattr(r, k) for k in ("experiment", "model", "family")},
                    "kind": "gap",
                    "effect": f"gap {r.group_factor} {r.group_level} − {r.group_ref} at {r.condition}",
                    "group": f"{r.group_factor}={r.group_level}",
                    "condition": r.condition,
                    "reference": f"{r.group_factor}={r.group_ref}",
                    "value_from": float(r.value_ref_group),
                    "value_to": float(r.value_group),
                    "estimate": float(r.gap),
                }
            )
            reps.append(np.asarray(rep, float))
    matrix = np.array(reps, dtype=np.float64).reshape(len(rows), replicates.n_boot)
    frame = pd.DataFrame(rows).reindex(columns=COLUMNS) if rows else pd.DataFrame(columns=COLUMNS)
    frame["metric"] = metric
    lo, hi, _ = replicates.ci(matrix)
    frame["lo"], frame["hi"] = np.asarray(lo, float), np.asarray(hi, float)
    frame["se"] = multiplicity.bootstrap_se(matrix).astype(float)
    return frame, matrix


def decide(frame: pd.DataFrame, alpha: float, method: str) -> pd.DataFrame:
    """Add p-values, the adjustment per experiment family, simultaneous intervals and
    ``resolved`` (adjusted p < ``alpha``) to a :func:`collect` table."""
    multiplicity.check_method(method)
    out = frame.copy()
    for col in ("estimate", "se", "lo", "hi", "value_from", "value_to"):
        out[col] = out[col].astype(float)
    out["p_value"] = multiplicity.wald_p(out["estimate"].to_numpy(), out["se"].to_numpy())
    out["p_adjusted"] = np.nan
    out["family_size"] = 0
    out["lo_simultaneous"] = np.nan
    out["hi_simultaneous"] = np.nan
    for _, idx in out.groupby("experiment", sort=False).groups.items():
        part = out.loc[idx]
        m = len(part)
        out.loc[idx, "p_adjusted"] = multiplicity.adjust(part["p_value"].to_numpy(), method)
        out.loc[idx, "family_size"] = m
        half = multiplicity.simultaneous_halfwidth(part["se"].to_numpy(), alpha, m)
        out.loc[idx, "lo_simultaneous"] = part["estimate"].to_numpy() - half
        out.loc[idx, "hi_simultaneous"] = part["estimate"].to_numpy() + half
    out["adjustment"] = method
    out["family_size"] = out["family_size"].astype(int)
    out["resolved"] = (out["p_adjusted"] < alpha).astype(bool)
    return out[COLUMNS]


def order(frame: pd.DataFrame) -> pd.DataFrame:
    """Per model (first-seen order): main effects, interactions, gaps; resolved first, then by
    estimate descending (the largest harm to an error metric first)."""
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
