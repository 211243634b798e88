"""What a run found, before the tables: the declared family and its adjustment, then per model
the resolved effects as sentences (main effects first, largest harm first; then interactions
and subgroup gaps), then the unresolved ones with the smallest effect the run could have
detected (the planner's MDE at power 0.8 and the per-effect level), and the cells as a
conditions × models pivot with intervals. Effects, p-values and the family:
:mod:`interbias.analysis.effects`, :mod:`interbias.analysis.multiplicity`.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from interbias.analysis import planner
from interbias.analysis.effects import KINDS, MIN_EVENTS, SKEWED, order
from interbias.analysis.multiplicity import BC_RULE, DESCRIPTION, P_VALUE_RULE
from interbias.analysis.suite import Analysis

#: Power at which the headline states each unresolved effect's minimum detectable effect.
HEADLINE_POWER = 0.8


@dataclass(frozen=True)
class Headline:
    """The findings table (one row per effect; empty without bootstrap) and what to say."""

    findings: pd.DataFrame | None
    lines: list[str]


#: Metrics read as rates and written in percent (points of difference).
PERCENT = ("eer", "eer_legacy")


def _value(v: float, metric: str) -> str:
    return f"{100 * v:.1f} %" if metric in PERCENT else f"{v:.3f}"


def _diff(v: float, metric: str) -> str:
    return f"{100 * v:+.1f} points" if metric in PERCENT else f"{v:+.3f}"


def _span(lo: float, hi: float, metric: str) -> str:
    k, d = (100, 1) if metric in PERCENT else (1, 3)
    return f"[{k * lo:+.{d}f}, {k * hi:+.{d}f}]"


def _p(v: float) -> str:
    return "n/a" if v != v else ("< 0.0001" if v < 1e-4 else f"{v:.4f}")


def sentence(r: object, metric: str, pct: str) -> str:
    """One effect as a sentence: what changed, from what to what, by how much, how sure."""
    g = r.__getattribute__
    m, est = g("model"), float(g("estimate"))
    where = f" at {g('group')}" if g("kind") in ("main", "simple") and g("group") else ""
    ci = f"{pct} CI {_span(g('lo'), g('hi'), metric)}; simultaneous {_span(g('lo_simultaneous'), g('hi_simultaneous'), metric)}"
    tail = f"({_diff(est, metric)}, {ci}; adjusted p {_p(float(g('p_adjusted')))})"
    a, b = _value(float(g("value_from")), metric), _value(float(g("value_to")), metric)
    verb = "raises" if est > 0 else ("lowers" if est < 0 else "leaves")
    name = metric.upper() if metric in PERCENT else metric
    if g("kind") in ("main", "simple"):
        return f"{g('condition')}{where} {verb} {m} {name} from {a} to {b} {tail}."
    if g("kind") == "gap":
        word = "higher" if est > 0 else "lower"
        return f"{m}: {name} of {g('group')} is {word} than of {g('reference')} at {g('condition')}: {b} against {a} {tail}."
    word = "above" if est > 0 else "below"
    return f"{m}: {g('effect')}: observed {name} {b} is {word} the additive prediction {a} {tail}."


def family_line(frame: pd.DataFrame, metric: str, pct: str, adjustment: str, alpha: float) -> str:
    """The declared family per experiment, the p-value, the adjustment and what resolved means."""
    parts = []
    for exp, grp in frame.groupby("experiment", sort=False):
        fam = grp[grp["test_family"] == "confirmatory"]
        kinds = ", ".join(f"{int((fam['kind'] == k).sum())} {k}" for k in KINDS if (fam["kind"] == k).any())
        extra = [
            f"{int((grp['test_family'] == 'simple').sum())} simple effect(s) outside it, adjusted among themselves"
        ]
        out = grp[grp["test_family"] == "left out"]
        extra.append(
            f"{len(out)} left out of it: n_nontarget x p_target < {MIN_EVENTS} in a cell (too few non-target trials "
            "for the operating point)"
            if len(out)
            else ""
        )
        tail = "".join(f"; {e}" for e in extra if e and not e.startswith("0 "))
        parts.append(f"{exp}: {len(fam)} effects ({kinds}) over {grp['model'].nunique()} model(s){tail}")
    rule = P_VALUE_RULE if metric not in SKEWED else BC_RULE
    return (
        f"Family: every effect of one experiment ({'; '.join(parts) or 'no effects'}); a main effect is averaged over "
        f"the other factors' levels with equal weight per setting. p-values: {rule}; "
        f"adjustment: {DESCRIPTION[adjustment]} over the family; resolved: adjusted p < {alpha:g}. Effects in "
        f"{metric}; {pct} intervals, with Bonferroni-level simultaneous intervals beside. "
        f"MDE: the smallest effect this run detects with power {HEADLINE_POWER:g} at the per-effect level (see interbias plan)."
    )


def headline(a: Analysis) -> Headline:
    """Findings per model (main effects first, as sentences); without replicates one line
    saying why nothing is sorted."""
    metric = a.options.metric
    if a.replicates is None:
        why = "bootstrap not requested (--bootstrap N)" if a.run.has_scores else "the run has no per-trial scores"
        return Headline(None, [f"No intervals, so no effect is declared resolved or unresolved: {why}."])
    alpha = round(1 - a.replicates.level, 12)
    settings = planner.Settings(effect=0.01, power=HEADLINE_POWER, alpha=alpha)
    frame = order(planner.plan(a, settings))
    pct = a.replicates.pct
    lines = [family_line(frame, metric, pct, a.options.adjust, alpha)]
    if frame.empty:
        lines.append("No effect to test (no condition away from the reference and no group factor).")
    for model, grp in frame.groupby("model", sort=False):
        counts = ", ".join(
            f"{k} {int(grp[grp['kind'] == k]['resolved'].sum())} of {int((grp['kind'] == k).sum())}"
            for k in KINDS
            if (grp["kind"] == k).any()
        )
        lines.append(f"{model}: {int(grp['resolved'].sum())} of {len(grp)} effect(s) resolved ({counts}).")
        for r in grp[grp["resolved"]].itertuples(index=False):
            lines.append("  " + sentence(r, metric, pct))
        for r in grp[~grp["resolved"]].itertuples(index=False):
            if not (r.se == r.se and r.lo == r.lo):  # NaN: no interval, never a number in its place
                lines.append(f"  unresolved: {r.effect}: {_fmt(r.estimate)}, no interval ({r.note})")
                continue
            lines.append(
                f"  unresolved: {r.effect}: {_fmt(r.estimate)} [{_fmt(r.lo)}, {_fmt(r.hi)}], "
                f"adjusted p {_p(r.p_adjusted)}, MDE {r.mde:.4f}"
            )
    return Headline(frame, lines)


def _fmt(v: float) -> str:
    return f"{v:+.4f}"


def cell_pivot(a: Analysis) -> pd.DataFrame:
    """Conditions × models: ``value [lo, hi]`` per cell (``value`` alone without intervals)."""
    frame = a.results
    metric = a.options.metric
    ci = a.cells.set_index(["experiment", "model", "cell"]) if a.cells is not None else None
    rows: dict[tuple[str, str], dict[str, str]] = {}
    for r in frame.itertuples(index=False):
        v = float(getattr(r, metric))
        text = f"{v:.4f}"
        if ci is not None:
            c = ci.loc[(r.experiment, r.model, r.cell)]
            lo, hi = float(c["lo"]), float(c["hi"])
            text += f" [{lo:.4f}, {hi:.4f}]" if hi > lo else " (no interval: the replicates do not vary)"
        rows.setdefault((r.experiment, r.cell), {})[r.model] = text
    models = list(dict.fromkeys(frame["model"]))
    out = [{"experiment": e, "cell": c, **{m: vals.get(m, "missing") for m in models}} for (e, c), vals in rows.items()]
    return pd.DataFrame(out, columns=["experiment", "cell", *models])
