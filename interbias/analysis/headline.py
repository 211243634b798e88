"""What a run found, before the tables: per model, the interactions and subgroup gaps whose
speaker-bootstrap interval excludes zero (sign, size, interval), the ones whose interval does
not, each with the smallest effect the run could have detected (the planner's MDE at power
0.8 and the intervals' level), and the cells as a conditions × models pivot with intervals.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from interbias.analysis import planner
from interbias.analysis.contrasts import prepare
from interbias.analysis.suite import Analysis

#: Power at which the headline states each unresolved effect's minimum detectable effect.
HEADLINE_POWER = 0.8


@dataclass(frozen=True)
class Headline:
    """The findings table (one row per effect; empty without bootstrap) and what to say."""

    findings: pd.DataFrame | None
    lines: list[str]


def _fmt(v: float) -> str:
    return f"{v:+.4f}"


def _interval(r: object) -> str:
    return f"{_fmt(r.estimate)} [{_fmt(r.lo)}, {_fmt(r.hi)}]"  # type: ignore[attr-defined]


def headline(a: Analysis) -> Headline:
    """Findings per model; without replicates one line saying why nothing is sorted."""
    metric = a.options.metric
    if a.replicates is None:
        why = "bootstrap not requested (--bootstrap N)" if a.run.has_scores else "the run has no per-trial scores"
        return Headline(None, [f"No intervals, so no effect is declared resolved or unresolved: {why}."])
    settings = planner.Settings(effect=0.01, power=HEADLINE_POWER, alpha=1 - a.replicates.level)
    frame = planner.plan(a, settings)
    lines = [
        f"Effects in {metric} (fractions; 0.01 = one point). Resolved: the {a.replicates.pct} speaker-bootstrap "
        f"interval excludes zero. MDE: the smallest effect this run detects with power {HEADLINE_POWER:g} "
        f"({planner.MODEL})."
    ]
    if frame.empty:
        lines.append("No interaction or subgroup gap to test (the experiment has one factor and no group factor).")
    for model, grp in frame.groupby("model", sort=False):
        res, unres = grp[grp["resolved"]], grp[~grp["resolved"]]
        lines.append(f"{model}: {len(res)} of {len(grp)} effect(s) resolved.")
        for r in res.itertuples(index=False):
            word = "higher" if r.estimate > 0 else "lower"
            than = "the additive prediction" if r.kind == "interaction" else "in the reference group"
            lines.append(f"  resolved: {r.effect}: {_interval(r)} ({metric} {word} than {than})")
        for r in unres.itertuples(index=False):
            lines.append(f"  unresolved: {r.effect}: {_interval(r)}, MDE {r.mde:.4f}")
    return Headline(frame, lines)


def cell_pivot(a: Analysis) -> pd.DataFrame:
    """Conditions × models: ``value [lo, hi]`` per cell (``value`` alone without intervals)."""
    frame = prepare(a.results)
    metric = a.options.metric
    ci = a.cells.set_index(["experiment", "model", "cell"]) if a.cells is not None else None
    rows: dict[tuple[str, str], dict[str, str]] = {}
    for r in frame.itertuples(index=False):
        v = float(getattr(r, metric))
        text = f"{v:.4f}"
        if ci is not None:
            c = ci.loc[(r.experiment, r.model, r.cell)]
            text += f" [{float(c['lo']):.4f}, {float(c['hi']):.4f}]"
        rows.setdefault((r.experiment, r.cell), {})[r.model] = text
    models = list(dict.fromkeys(frame["model"]))
    out = [{"experiment": e, "cell": c, **{m: vals.get(m, "missing") for m in models}} for (e, c), vals in rows.items()]
    return pd.DataFrame(out, columns=["experiment", "cell", *models])
