"""The one display name of an effect, from a findings row: the answer, the forest plot, the
report's tables, findings.csv's ``label`` column, the LaTeX findings table and the heatmap titles
all write an effect with :func:`effect_name` (findings.csv's ``effect`` column keeps its long
form, ``IE gender×noise at male, gaussian_5``, which the key-effect matching and older readers
parse)."""

from __future__ import annotations

import re
from typing import Any


def _values(pairs: str) -> list[str]:
    """``["male", "gaussian_5"]`` of ``gender=male,noise=gaussian_5``; a bare value as itself."""
    return [p.split("=", 1)[-1].strip() for p in pairs.split(",") if p.strip()]


def _change(condition: str, reference: str) -> str:
    """``noise gaussian_5 − clean`` of ``noise=gaussian_5`` and ``noise=clean``."""
    factor, _, level = condition.partition("=")
    return f"{factor} {level} − {reference.partition('=')[2] or reference}" if level else f"{condition} − {reference}"


def contrast_name(factors: list[str]) -> str:
    """``gender × noise``: the interaction of ``factors`` as every name of one writes it."""
    return " × ".join(f.strip() for f in factors)


def effect_name(r: Any) -> str:
    """An effect's one display name, ``WHAT [at LEVELS] [over FACTORS]``: WHAT is
    ``factor level − reference`` (main, simple, gap) or ``factor × factor`` (interaction); ``at``
    the levels it holds the other factors at; ``over`` the factors a main effect averages over.
    ``noise gaussian_5 − clean over gender``, ``noise gaussian_5 − clean at male``,
    ``gender male − female at gaussian_5``, ``gender × noise at male, gaussian_5``. ``r``: a
    findings row (``kind``, ``effect``, ``group``, ``condition``, ``reference``); another kind is
    its effect text without the kind word."""
    kind, effect = str(getattr(r, "kind", "")), str(getattr(r, "effect", ""))
    group, cond, ref = (str(getattr(r, c, "") or "") for c in ("group", "condition", "reference"))
    at: list[str] = []
    over = ""
    match kind:
        case "interaction" if " at " in effect:
            what, levels = effect.split(" ", 1)[-1].split(" at ", 1)
            what, at = contrast_name(what.split("×")), [v.strip() for v in levels.split(",")]
        case "main" | "simple" if cond and ref:
            what = _change(cond, ref)
            if kind != "main":  # a simple effect: at the group's levels
                at = _values(group)
            if m := re.search(r"\(averaged over ([^)]*)\)", effect):
                over = m.group(1)
            if m := re.search(r"\(at ([^:]*): the only level", effect):
                at = _values(m.group(1))
        case "gap" if group and ref:
            what = _change(group, ref)
            at = _values(cond)
        case _:
            head, _, rest = effect.partition(" ")
            what = rest if head in ("main", "IE", "gap", "simple") and rest else effect
    return what + (f" at {', '.join(at)}" if at else "") + (f" over {over}" if over else "")
