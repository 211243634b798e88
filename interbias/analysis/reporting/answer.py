"""The answer a report opens with: the experiment's question, then per model one line per
effect kind (how many resolved, the largest resolved harm as a sentence, and for the
unresolved the median minimum detectable effect and the speakers per stratum a run would need
to detect :data:`~interbias.analysis.reporting.headline.HEADLINE_EFFECT`), and a plain statement on the
experiment's central effect: the interaction for ``use: contrast``, the subgroup gap for
``use: gap``. Kinds are read from the findings (``main``, ``simple``, ``interaction``, ``gap``,
or any other), so a new kind gets its line without a change here.

Harm: every analysis metric is an error or a cost (lower is better), so the largest harm is the
largest estimate; for a gap (its sign is which group is worse) the largest absolute estimate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from interbias.analysis.effect_names import effect_name
from interbias.analysis.planner import median_need
from interbias.analysis.reporting.gap_change import factors_of, gap_change, gap_change_brief, sized
from interbias.analysis.reporting.headline import (
    HEADLINE_EFFECT,
    HEADLINE_POWER,
    count,
    kinds_of,
    metric_name,
    num,
    resolved_mask,
    sentence,
)
from interbias.analysis.verdict import verdict_text
from interbias.experiments.question_spec import KeyEffect, parse_question

#: The effect kind that answers an experiment of each ``use``.
CENTRAL = {"contrast": "interaction", "gap": "gap"}
#: Plural of each kind as the answer writes it.
WORDS = {"main": "main effects", "simple": "simple effects", "interaction": "interactions", "gap": "subgroup gaps"}
#: The central kinds in the singular.
ONE = {"interaction": "an interaction", "gap": "a subgroup gap"}


@dataclass(frozen=True)
class Answer:
    question: str
    #: (model, kind, line) per model and kind present.
    lines: list[tuple[str, str, str]]
    #: The statement on the central effect ("" when the experiment has none).
    central: str
    #: One line per key effect the question names and model, stated first (none when it names none).
    key: list[str] = field(default_factory=list)


#: Rows of one key effect and model stated one by one; more are summarised.
KEY_ROWS = 3


def key_effects(resolved: dict[str, Any]) -> tuple[KeyEffect, ...]:
    """The key effects the resolved definition's ``question`` names (none for a plain string)."""
    asked = resolved.get("question")
    if not isinstance(asked, dict):
        return ()
    return parse_question(asked, "experiment.resolved.json").effects


def key_hits(findings: pd.DataFrame, resolved: dict[str, Any]) -> list[tuple[KeyEffect, pd.DataFrame]]:
    """Per key effect the question names, its rows of ``findings`` (empty when none matches)."""
    out = []
    order = [str(f.get("name")) for f in factors_of(resolved)]
    for key in key_effects(resolved):
        mask = [
            key.matches(str(r.kind), str(r.effect), str(r.condition), str(r.group), order)
            for r in findings.itertuples(index=False)
        ]
        out.append((key, findings[pd.Series(mask, index=findings.index, dtype=bool)]))
    return out


def key_lines(findings: pd.DataFrame, resolved: dict[str, Any], metric: str, pct: str) -> list[str]:
    """Per key effect and model: its effects with estimate, interval and adjusted p (the
    :data:`KEY_ROWS` largest; the rest counted, with their simultaneous bound)."""
    out = []
    for key, hits in key_hits(findings, resolved):
        if hits.empty:
            out.append(f"{key.text}: not in the findings (no complete setting of its factors).")
            continue
        for model, grp in hits.groupby("model", sort=False):
            top = grp.loc[grp["estimate"].astype(float).abs().sort_values(ascending=False, kind="stable").index]
            parts = [_key_row(r, pct, metric, resolved) for r in top.head(KEY_ROWS).itertuples(index=False)]
            if len(grp) > KEY_ROWS:
                parts.append(
                    f"{len(grp) - KEY_ROWS} more; {int(resolved_mask(grp).sum())} of {len(grp)} resolved; "
                    + bound_text(grp, key.kind, pct)
                )
            out.append(f"{key.text}, {model}: " + "; ".join(parts) + ".")
    return out


def _key_row(r: Any, pct: str, metric: str = "eer", resolved: dict[str, Any] | None = None) -> str:
    said = gap_change(r, resolved or {}, metric, pct) or direction(r, metric, pct)
    return f"{said}; {verdict_text(r)}"


def _level(text: Any) -> str:
    return str(text).split("=", 1)[-1]


def direction(r: Any, metric: str, pct: str = "") -> str:
    """One effect by its name (:func:`effect_name`) with its direction and size in words, its
    interval turned with it (the size of a negative effect is ``-estimate``, its interval
    ``[-hi, -lo]``): ``gender male − female at n10: EER for male is lower than for female by
    0.031 [0.012, 0.050]`` (``pct``: written before the interval)."""
    return f"{effect_name(r)}: {_words(r, metric, pct)}"


def _words(r: Any, metric: str, pct: str) -> str:
    est = float(r.estimate)
    size = sized(r, pct)
    name = metric_name(metric)
    match r.kind:
        case "gap":
            word = "higher" if est > 0 else ("lower" if est < 0 else "no different")
            return f"{name} for {_level(r.group)} is {word} than for {_level(r.reference)} {size}"
        case "interaction":
            word = "above" if est > 0 else ("below" if est < 0 else "at")
            return f"{name} is {word} the additive prediction {size}"
    verb = "raises" if est > 0 else ("lowers" if est < 0 else "leaves")
    return f"{verb} {name} {size}"


def key_brief(findings: pd.DataFrame, resolved: dict[str, Any], metric: str, pct: str = "") -> list[str]:
    """Per key effect and model one short line for the terminal's last lines: how many of its
    effects are resolved and the largest (the largest resolved when any) in words; an effect
    restricted to a level (``A=l × B``) with at most :data:`KEY_ROWS` rows, every row."""
    out = []
    for key, hits in key_hits(findings, resolved):
        if hits.empty:
            out.append(f"{key.text}: not in the findings (no complete setting of its factors).")
        for model, grp in hits.groupby("model", sort=False):
            res = resolved_mask(grp)
            if key.levels and len(grp) <= KEY_ROWS:
                rows = gap_change_brief(grp, resolved, metric) or "; ".join(
                    _key_row(r, pct, metric, resolved) for r in grp.itertuples(index=False)
                )
                out.append(f"{key.text}, {model}: {int(res.sum())} of {len(grp)} resolved: {rows}.")
                continue
            pool = grp[res] if res.any() else grp
            top = next(pool.loc[[pool["estimate"].astype(float).abs().idxmax()]].itertuples(index=False))
            out.append(
                f"{key.text}, {model}: {int(res.sum())} of {len(grp)} resolved; largest: "
                f"{gap_change(top, resolved, metric) or direction(top, metric)}, {verdict_text(top)}."
            )
    return out


def question(resolved: dict[str, Any], metric: str) -> str:
    """The YAML's ``question``, else one derived from its factors and ``use``."""
    asked = resolved.get("question")
    text = asked.get("text") if isinstance(asked, dict) else asked
    if str(text or "").strip():
        return str(text).strip()
    names = [str(f.get("name")) for f in resolved.get("factors") or [] if isinstance(f, dict)]
    use, name = resolved.get("use"), metric_name(metric)
    pops = [str(f.get("name")) for f in resolved.get("factors") or [] if f.get("type") == "population"]
    if use == "contrast" and len(names) >= 2:
        return f"Do {' and '.join(names)} interact: is their joint effect on {name} more than the sum of their effects?"
    if use == "gap" and pops:
        return f"How large is the {name} gap between levels of {pops[0]}, and do the other factors change it?"
    return f"How does {name} change across {', '.join(names) or 'the conditions'}?"


def benefit(part: pd.DataFrame) -> pd.Series | None:
    """The row of the largest benefit among ``part``: the most negative estimate (lower error);
    None when no estimate is below zero or for gaps (their sign says which group is worse)."""
    if part.empty or (part["kind"] == "gap").all():
        return None
    est = part["estimate"].astype(float)
    return part.loc[est.idxmin()] if (est < 0).any() else None


def bound(part: pd.DataFrame) -> float:
    """The simultaneous bound on |effect| over ``part``: the largest |bound| of the simultaneous
    intervals (Bonferroni over the family, so every effect lies within ± it at the family's
    level); NaN when an effect has no interval."""
    if part.empty or not {"lo_simultaneous", "hi_simultaneous"} <= set(part.columns):
        return float("nan")
    ends = part[["lo_simultaneous", "hi_simultaneous"]].astype(float).abs()
    return float(ends.to_numpy().max()) if ends.notna().all().all() else float("nan")


def bound_text(part: pd.DataFrame, kind: str, pct: str) -> str:
    """``all 30 interactions within ±0.047 (simultaneous 95%: larger effects ruled out)``, or ""."""
    b = bound(part)
    if not np.isfinite(b):
        return ""
    word = WORDS.get(kind, kind)
    said = f"within ±{num(b)} (simultaneous {pct}: larger effects ruled out)"
    if len(part) == 1:
        return f"the {word.removesuffix('s')} lies {said}"
    every = "both" if len(part) == 2 else f"all {len(part)}"
    return f"{every} {word} {said}"


def harm(part: pd.DataFrame) -> pd.Series | None:
    """The row of the largest harm among ``part`` (None when empty)."""
    if part.empty:
        return None
    est = part["estimate"].astype(float)
    key = est.abs() if (part["kind"] == "gap").all() else est
    return part.loc[key.idxmax()]


def median_mde(part: pd.DataFrame) -> float:
    """The median minimum detectable effect over ``part`` (NaN when none has one)."""
    mde = part["mde"].astype(float).to_numpy() if "mde" in part else np.array([])
    mde = mde[np.isfinite(mde)]
    return float(np.median(mde)) if len(mde) else float("nan")


def _unresolved(part: pd.DataFrame, n_pilot: int) -> str:
    """Median MDE and median speakers per stratum needed, over ``part``'s unresolved rows."""
    need = part["speakers_per_stratum_needed"].astype(float).to_numpy()
    need = need[np.isfinite(need)]
    mde = median_mde(part)
    if not np.isfinite(mde):
        return f"{len(part)} unresolved, none can be planned (no bootstrap spread)"
    text = f"{len(part)} unresolved, median MDE {num(mde)} (a true effect this large is resolved in 80 % of runs this size)"
    if len(need):
        text += (
            f"; detecting {num(HEADLINE_EFFECT)} would need a median {count(median_need(need))} speakers per stratum "
            f"(this run: {n_pilot})"
        )
    return text


#: Kinds whose largest harm is named whatever the sign of its estimate (a gap).
SIGNLESS = ("gap",)


def kind_line(grp: pd.DataFrame, kind: str, metric: str, pct: str) -> str:
    """One model's line for one kind."""
    part = grp[grp["kind"] == kind]
    res = part[resolved_mask(part)]
    word = WORDS.get(kind, kind)
    text = f"{word}: {len(res)} of {len(part)} resolved"
    top = harm(res)
    if top is not None and (float(top["estimate"]) > 0 or kind in SIGNLESS):
        text += f"; largest harm: {_short(top, metric, pct)}"
    good = benefit(res)
    if good is not None:
        text += f"; largest benefit: {_short(good, metric, pct)}"
    unres = part[~resolved_mask(part)]
    if len(unres):
        n_pilot = int(unres["speakers_per_stratum"].iloc[0]) if "speakers_per_stratum" in unres else 0
        text += "; " + _unresolved(unres, n_pilot)
    within = bound_text(part, kind, pct)
    if within:
        text += "; " + within
        mde = median_mde(unres) if len(unres) else float("nan")
        if np.isfinite(mde) and mde > bound(part):
            # both hold: larger effects are ruled out, yet one at the bound is resolved less often than 80 %
            b = num(bound(part))
            text += (
                f"; the median MDE {num(mde)} exceeds ±{b}: for a typical effect here, one of ±{b} is resolved in fewer than 80 % "
                f"of runs this size, so this run cannot reliably tell 0 from ±{b}"
            )
    return text + ("" if text.endswith(".") else ".")


def _short(row: pd.Series, metric: str, pct: str) -> str:
    return sentence(next(pd.DataFrame([row]).itertuples(index=False)), metric, pct, short=True).rstrip(".")


def central_line(frame: pd.DataFrame, use: str | None, run: str = "<run>", pct: str = "95%") -> str:
    """Whether the central effect of the experiment was resolved, and what would resolve it."""
    kind = CENTRAL.get(str(use))
    if kind is None:
        return ""
    word = WORDS[kind]
    part = frame[frame["kind"] == kind]
    if part.empty:
        return f"This {use} experiment has no {word} to test (no complete setting of its factors)."
    res = part[resolved_mask(part)]
    if len(res):
        by = ", ".join(f"{m} {int(resolved_mask(g).sum())} of {len(g)}" for m, g in part.groupby("model", sort=False))
        return f"Answer: {len(res)} of {len(part)} {word} resolved ({by})."
    need = part["speakers_per_stratum_needed"].astype(float)
    n_pilot = int(part["speakers_per_stratum"].iloc[0])
    ok = need[np.isfinite(need)]
    fix = (
        f" To resolve {ONE[kind]} of {num(HEADLINE_EFFECT)} at power {HEADLINE_POWER:g}, a run would need a median "
        f"{count(median_need(ok))} speakers per stratum (at most {count(ok.max())}; this run had {n_pilot}): "
        f"interbias plan {run} writes the plan, interbias run --plan draws it."
        if len(ok)
        else " No bootstrap spread: more speakers per stratum are needed before a plan can be made."
    )
    mde = part["mde"].astype(float)
    within = "; ".join(
        f"{m}: {bound_text(g, kind, pct)}" for m, g in part.groupby("model", sort=False) if bound_text(g, kind, pct)
    )
    return (
        f"Not resolved: none of the {len(part)} {word} is resolved for any model; the smallest this run "
        f"could detect is a median {num(mde.median())}.{fix}" + (f" Bounds: {within}." if within else "")
    )


def answer(findings: pd.DataFrame, resolved: dict[str, Any], metric: str, pct: str, run: str = "<run>") -> Answer:
    """The question, the per-model kind lines and the central statement of one run's findings
    (``run``: the run folder, as the plan hint names it)."""
    lines = []
    for model, grp in findings.groupby("model", sort=False):
        for kind in kinds_of(grp):
            lines.append((str(model), kind, kind_line(grp, kind, metric, pct)))
    central = central_line(findings, resolved.get("use"), run, pct)
    return Answer(question(resolved, metric), lines, central, key_lines(findings, resolved, metric, pct))
