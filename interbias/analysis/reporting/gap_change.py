"""An interaction of a population factor P with another factor F, written as the change of P's
gap it is: IE = [M(F=l, P=g) − M(F=l, P=ref)] − [M(F=ref, P=g) − M(F=ref, P=ref)], the g − ref
gap at F's level l minus the gap at F's reference, with every other factor held at the levels
the effect names. The answer (:mod:`interbias.analysis.reporting.answer`) words such rows so:
``with backend plda the male − female EER difference is higher than with cosine by 0.021``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from interbias.analysis.effect_names import effect_name
from interbias.analysis.reporting.headline import metric_name, num
from interbias.analysis.verdict import verdict_text
from interbias.experiments.question_spec import effect_levels


def factors_of(resolved: dict[str, Any]) -> list[dict[str, Any]]:
    """The resolved definition's factors (mappings), in order."""
    return [f for f in resolved.get("factors") or [] if isinstance(f, dict)]


@dataclass(frozen=True)
class GapChange:
    """The parts of one gap-change row: F and its level and reference, P's level and
    reference, and the other factors' levels (``held``: "noise amr_nb")."""

    other: str
    level: str
    other_ref: str
    group: str
    group_ref: str
    held: tuple[str, ...]
    #: Per held factor: whether its level is not the reference, its position among the levels.
    order: tuple[int, ...] = ()


def gap_parts(r: Any, resolved: dict[str, Any]) -> GapChange | None:
    """The gap change of findings row ``r``; None unless it is a two-factor interaction of one
    population factor with another factor (the factors' types and references from ``resolved``)."""
    if str(r.kind) != "interaction" or " at " not in str(r.effect):
        return None
    factors = factors_of(resolved)
    pair = str(r.effect).removeprefix("IE ").split(" at ")[0].split("×")
    at = dict(zip([str(f.get("name")) for f in factors], effect_levels(str(r.effect)), strict=False))
    types = {str(f.get("name")): f.get("type") for f in factors}
    refs = {str(f.get("name")): str(f.get("reference")) for f in factors}
    pops = [n for n in pair if types.get(n) == "population"]
    if len(pair) != 2 or len(pops) != 1 or len(at) != len(factors) or not all(n in at for n in pair):
        return None
    pop, other = pops[0], next(n for n in pair if n != pops[0])
    held = tuple(f"{n} {v}" for n, v in at.items() if n not in pair)
    levels = {str(f.get("name")): [str(k) for k in f.get("levels") or {}] for f in factors}
    # the reference level first (experiment.resolved.json keeps the levels sorted by name)
    order = tuple(
        i for n, v in at.items() if n not in pair for i in (v != refs[n], levels[n].index(v) if v in levels[n] else -1)
    )
    return GapChange(other, at[other], refs[other], at[pop], refs[pop], held, order)


def sized(r: Any, pct: str = "") -> str:
    """``by 0.021 (95% CI [0.004, 0.038])``: the size of an effect and its interval turned with
    it (a negative effect's size is ``-estimate``, its interval ``[-hi, -lo]``); without ``pct``
    the bare interval."""
    est, lo, hi = float(r.estimate), float(r.lo), float(r.hi)
    ends = (lo, hi) if est >= 0 else (-hi, -lo)
    ends_text = f"[{num(ends[0])}, {num(ends[1])}]" if lo == lo and hi == hi else "(no interval)"
    return f"by {num(abs(est))} " + (f"({pct} CI {ends_text})" if pct and lo == lo and hi == hi else ends_text)


def _word(r: Any) -> str:
    est = float(r.estimate)
    return "higher" if est > 0 else ("lower" if est < 0 else "no different")


def gap_change(r: Any, resolved: dict[str, Any], metric: str, pct: str = "") -> str | None:
    """``gender × backend at male, amr_nb, plda: with backend plda the male − female EER
    difference is higher than with cosine by 0.021 (95% CI [0.004, 0.038])`` (the effect's one
    name first, :func:`effect_name`); None for a row that is not a gap change."""
    g = gap_parts(r, resolved)
    if g is None:
        return None
    return (
        f"{effect_name(r)}: with {g.other} {g.level} the {g.group} − {g.group_ref} {metric_name(metric)} difference "
        f"is {_word(r)} than with {g.other_ref} {sized(r, pct)}"
    )


def gap_change_brief(rows: pd.DataFrame, resolved: dict[str, Any], metric: str) -> str | None:
    """One model's gap changes at one level of F in one short sentence, each setting of the
    other factors with its direction, size, interval and verdict: ``with backend plda against
    cosine, the male − female EER difference is at noise clean higher by 0.014 [-0.104, 0.132],
    not resolved after Holm over 30 (adjusted p 1.000); at noise amr_nb …`` (the held factor's reference level first,
    then its levels as the run's definition lists them); None unless every row is a gap change of the same F level and groups."""
    parts = [(r, gap_parts(r, resolved)) for r in rows.itertuples(index=False)]
    found = [g for _, g in parts if g is not None]
    if not found or len(found) < len(parts) or len({(g.other, g.level, g.group) for g in found}) > 1:
        return None
    g = found[0]
    ordered = sorted(((r, p) for r, p in parts if p is not None), key=lambda rp: rp[1].order)
    each = [
        f"{'at ' + ' '.join(p.held) + ' ' if p.held else ''}{_word(r)} {sized(r)}, {verdict_text(r)}"
        for r, p in ordered
    ]
    return f"with {g.other} {g.level} against {g.other_ref}, the {g.group} − {g.group_ref} {metric_name(metric)} " + (
        f"difference is {'; '.join(each)}"
    )
