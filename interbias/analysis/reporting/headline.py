"""What a run found, before the tables: the declared family and its adjustment, then per model
the resolved effects as sentences (largest harm first) and the unresolved ones with the
smallest effect the run could have detected (the planner's MDE at power 0.8 and alpha/m, the
level resolved needs: the same figures as ``interbias plan``), and the cells as a conditions × models pivot with intervals. Effects, p-values and the
family: :mod:`interbias.analysis.effects`, :mod:`interbias.analysis.stats.multiplicity`; the answer
lines that open the report: :mod:`interbias.analysis.reporting.answer`.

One unit everywhere: metric values and their differences are fractions of the metric's own
scale, three decimals (EER 0.050 = 5 %; a difference of 0.010 = one percentage point); p-values
as ``< 0.001`` or three decimals (four where three would round onto 0.05 or 0.01); counts as integers; never a negative zero.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from interbias.analysis import planner
from interbias.analysis.effect_names import effect_name
from interbias.analysis.effects import KINDS, MIN_EVENTS, SKEWED, order
from interbias.analysis.reporting.numbers import p_text
from interbias.analysis.stats.multiplicity import BC_RULE, DESCRIPTION, P_VALUE_RULE
from interbias.analysis.suite import Analysis
from interbias.analysis.verdict import verdict_text
from interbias.metrics.registry import names

#: Power at which the headline states each unresolved effect's minimum detectable effect.
HEADLINE_POWER = 0.8
#: Effect size the headline plans for (metric units): speakers a run needs to detect it.
HEADLINE_EFFECT = 0.01
#: The level every MDE and speakers-needed figure is planned at, in one phrase.
PLAN_LEVEL = "at alpha/m, Holm's worst case over the family of m, the level 'resolved' needs"
#: Decimals of every metric value and difference in the report, the findings and the terminal.
DIGITS = 3
#: Metrics whose name is written in capitals in sentences.
PERCENT = names(lambda s: s.rate)


@dataclass(frozen=True)
class Headline:
    """The findings table (one row per effect; empty without bootstrap) and what to say."""

    findings: pd.DataFrame | None
    lines: list[str]


def num(v: float, *, sign: bool = False, digits: int = DIGITS) -> str:
    """``v`` with ``digits`` decimals (``+`` shown when ``sign``), ``n/a`` for NaN, never ``-0.000``."""
    v = float(v)
    if math.isnan(v):
        return "n/a"
    text = f"{v:+.{digits}f}" if sign else f"{v:.{digits}f}"
    if float(text) == 0:
        text = ("+" if sign else "") + f"{0:.{digits}f}"
    return text


def count(v: float) -> str:
    """A count as an integer (``n/a`` for NaN)."""
    return "n/a" if v != v else f"{int(round(float(v)))}"


def pval(v: float) -> str:
    return "n/a" if v != v else p_text(float(v))


def span(lo: float, hi: float) -> str:
    return f"[{num(lo, sign=True)}, {num(hi, sign=True)}]"


def metric_name(metric: str) -> str:
    return metric.upper() if metric in PERCENT else metric


def sentence(r: object, metric: str, pct: str, *, short: bool = False) -> str:
    """One effect as a sentence: what changed, from what to what, by how much, how sure
    (``short``: the per-effect interval only)."""
    g = r.__getattribute__
    m, est = g("model"), float(g("estimate"))
    ci = f"{pct} CI {span(g('lo'), g('hi'))}"
    if not short:
        ci += f"; simultaneous {span(g('lo_simultaneous'), g('hi_simultaneous'))}; adjusted p {pval(float(g('p_adjusted')))}"
    tail = f"({num(est, sign=True)}, {ci})"
    a, b = num(g("value_from")), num(g("value_to"))
    verb = "raises" if est > 0 else ("lowers" if est < 0 else "leaves")
    name = metric_name(metric)
    if g("kind") in ("main", "simple"):
        return f"{effect_name(r)}: {verb} {m} {name} from {a} to {b} {tail}."
    who = "" if short else f"{m}: "  # a short sentence sits on its model's line
    if g("kind") == "gap":
        word = "higher" if est > 0 else "lower"
        low, ref = (str(g(c)).split("=", 1)[-1] for c in ("group", "reference"))
        return f"{who}{effect_name(r)}: {name} for {low} is {word} than for {ref}: {b} against {a} {tail}."
    word = "above" if est > 0 else "below"
    return f"{who}{effect_name(r)}: observed {name} {b} is {word} the additive prediction {a} {tail}."


def family_line(frame: pd.DataFrame, metric: str, pct: str, adjustment: str, alpha: float) -> str:
    """The declared family per experiment, the p-value, the adjustment and what resolved means."""
    parts = []
    for exp, grp in frame.groupby("experiment", sort=False):
        fam = grp[grp["test_family"] == "confirmatory"] if "test_family" in grp else grp
        kinds = ", ".join(f"{int((fam['kind'] == k).sum())} {k}" for k in kinds_of(fam))
        extra = []
        if "test_family" in grp:
            extra.append(
                f"{int((grp['test_family'] == 'simple').sum())} simple effect(s) outside it, adjusted among themselves"
            )
            out = grp[grp["test_family"] == "left out"]
            if len(out):
                extra.append(
                    f"{len(out)} left out of it: n_nontarget x p_target < {MIN_EVENTS} in a cell (too few "
                    "non-target trials for the operating point)"
                )
        tail = "".join(f"; {e}" for e in extra if not e.startswith("0 "))
        parts.append(f"{exp}: {len(fam)} effects ({kinds}) over {grp['model'].nunique()} model(s){tail}")
    rule = P_VALUE_RULE if metric not in SKEWED else BC_RULE
    return (
        f"Family: every effect of one experiment ({'; '.join(parts) or 'no effects'}); a main effect is averaged over "
        f"the other factors' levels with equal weight per setting. p-values: {rule}; "
        f"adjustment: {DESCRIPTION[adjustment]} over the family; resolved: adjusted p < {alpha:g}. Effects in "
        f"{metric}; {pct} intervals, with Bonferroni-level simultaneous intervals beside. "
        f"MDE and speakers needed: with power {HEADLINE_POWER:g} {PLAN_LEVEL} (as interbias plan)."
    )


def resolved_mask(frame: pd.DataFrame) -> pd.Series:
    """``resolved`` as booleans; a row without a decision (NaN) is not resolved."""
    return frame["resolved"].map(lambda v: (isinstance(v, (bool, np.bool_)) and bool(v)) or str(v) == "True")


def kinds_of(frame: pd.DataFrame) -> list[str]:
    """The effect kinds present, known kinds first in :data:`KINDS` order (``simple`` after
    ``main``), then any other in first-seen order."""
    known = list(dict.fromkeys([*KINDS[:1], "simple", *KINDS[1:]]))
    present = list(dict.fromkeys(frame["kind"].astype(str)))
    return [k for k in known if k in present] + [k for k in present if k not in known]


def headline(a: Analysis) -> Headline:
    """Findings per model (largest harm first, as sentences); without replicates one line
    saying why nothing is sorted."""
    metric = a.options.metric
    if a.replicates is None:
        why = "bootstrap not requested (--bootstrap N)" if a.run.has_scores else "the run has no per-trial scores"
        return Headline(None, [f"No intervals, so no effect is declared resolved or unresolved: {why}."])
    alpha = round(1 - a.replicates.level, 12)
    settings = planner.Settings(effect=HEADLINE_EFFECT, power=HEADLINE_POWER, alpha=alpha, family=True)
    frame = order(planner.plan(a, settings))
    pct = a.replicates.pct
    lines = [family_line(frame, metric, pct, a.options.adjust, alpha)]
    if frame.empty:
        lines.append("No effect to test (no condition away from the reference and no group factor).")
    for model, grp in frame.groupby("model", sort=False):
        counts = ", ".join(
            f"{k} {int(resolved_mask(grp[grp['kind'] == k]).sum())} of {int((grp['kind'] == k).sum())}"
            for k in kinds_of(grp)
        )
        mask = resolved_mask(grp)
        lines.append(f"{model}: {int(mask.sum())} of {len(grp)} effect(s) resolved ({counts}).")
        for r in grp[mask].itertuples(index=False):
            lines.append("  " + sentence(r, metric, pct))
        for r in grp[~mask].itertuples(index=False):
            if not (r.se == r.se and r.lo == r.lo):  # NaN: no interval, never a number in its place
                lines.append(f"  unresolved: {effect_name(r)}: {num(r.estimate, sign=True)}, no interval ({r.note})")
                continue
            lines.append(
                f"  unresolved: {effect_name(r)}: {num(r.estimate, sign=True)} {span(r.lo, r.hi)}, "
                f"{verdict_text(r)}, MDE {num(r.mde)}"
            )
    return Headline(frame, lines)


def cell_pivot(a: Analysis) -> pd.DataFrame:
    """Conditions × models: ``value [lo, hi]`` per cell (``value`` alone without intervals)."""
    frame = a.results
    metric = a.options.metric
    ci = a.cells.set_index(["experiment", "model", "cell"]) if a.cells is not None else None
    rows: dict[tuple[str, str], dict[str, str]] = {}
    for r in frame.itertuples(index=False):
        text = num(getattr(r, metric))
        if ci is not None:
            c = ci.loc[(r.experiment, r.model, r.cell)]
            lo, hi = float(c["lo"]), float(c["hi"])
            text += f" [{num(lo)}, {num(hi)}]" if hi > lo else " (no interval: the replicates do not vary)"
        rows.setdefault((r.experiment, r.cell), {})[r.model] = text
    models = list(dict.fromkeys(frame["model"]))
    out = [{"experiment": e, "cell": c, **{m: vals.get(m, "missing") for m in models}} for (e, c), vals in rows.items()]
    return pd.DataFrame(out, columns=["experiment", "cell", *models])
