"""An experiment's ``question``: one line of text, or ``{text, effects: [...]}`` naming the key
effects the question is about, which the answer states first with their intervals.

Key effect grammar (factor names of the experiment):

* ``A × B`` (also ``A x B``, ``A * B``; three factors likewise): the interactions of those factors;
* ``A``: the main effects of factor A;
* ``A gap``: the subgroup gaps between the levels of population factor A;
* ``A=l × B``: the interactions of A and B with A at its level l only (``backend=plda × gender``:
  how PLDA, against A's reference, changes the gender gap at every setting of the other
  factors). An interaction of one population factor with another factor is a change of that
  population's gap, and the answer words it so.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from interbias.utils.errors import ConfigError

_CROSS = re.compile(r"\s*(?:×|\*|\sx\s)\s*")


@dataclass(frozen=True)
class KeyEffect:
    """One key effect: its ``kind`` (interaction, main, gap), the ``factors`` it is about and
    the ``text`` as the YAML writes it."""

    kind: str
    factors: tuple[str, ...]
    text: str
    #: ``A=l``: the levels the effect is restricted to, (factor, level) pairs.
    levels: tuple[tuple[str, str], ...] = ()

    def matches(self, kind: str, effect: str, condition: str, group: str, order: Sequence[str] = ()) -> bool:
        """Whether a findings row (its kind, effect label, condition and group) is this effect;
        ``order``: the experiment's factor names in order (an interaction's ``at`` levels follow
        it), needed to match a level restriction."""
        if kind != self.kind:
            return False
        match kind:
            case "interaction":
                contrast = effect.removeprefix("IE ").split(" at ")[0]
                if set(contrast.split("×")) != set(self.factors):
                    return False
                at = dict(zip(order, effect_levels(effect), strict=False))
                return all(at.get(f) == lv for f, lv in self.levels)
            case "gap":
                return group.split("=")[0] == self.factors[0]
            case _:
                return condition.split("=")[0] == self.factors[0]


@dataclass(frozen=True)
class QuestionSpec:
    """The question's text and its key effects (none when the YAML gives a plain string)."""

    text: str
    effects: tuple[KeyEffect, ...] = ()


def effect_levels(effect: str) -> list[str]:
    """The levels an interaction's label holds every factor at (``IE a×b at male, n10``: male, n10)."""
    return [v.strip() for v in effect.split(" at ", 1)[1].split(",")] if " at " in effect else []


def parse_key_effect(text: Any, where: str, factors: Sequence[str] | Mapping[str, str] | None = None) -> KeyEffect:
    """One entry of ``question.effects`` (``factors``: the experiment's factor names, or names
    and types, checked when given). Effects no run can report are refused with the reason: a
    factor named twice in an interaction, a gap of a factor that is not a population factor."""
    if not isinstance(text, str) or not text.strip():
        raise ConfigError(f"{where}: question.effects: each entry is text such as 'noise × vad', got {text!r}")
    raw = text.strip()
    levels: tuple[tuple[str, str], ...] = ()
    if raw.endswith(" gap"):
        kind, names = "gap", (raw[: -len(" gap")].strip(),)
    else:
        parts = tuple(n.strip() for n in _CROSS.split(f" {raw} ".replace(" x ", " × ")) if n.strip())
        names = tuple(p.split("=", 1)[0].strip() for p in parts)
        levels = tuple((n, p.split("=", 1)[1].strip()) for n, p in zip(names, parts, strict=True) if "=" in p)
        kind = "interaction" if len(names) > 1 else "main"
        if levels and kind != "interaction":
            raise ConfigError(f"{where}: question.effects: {raw!r}: a level (A=l) restricts an interaction, A=l × B")
    unknown = [n for n in names if factors is not None and n not in factors]
    if unknown:
        raise ConfigError(
            f"{where}: question.effects: {raw!r} names {', '.join(map(repr, unknown))}, not a factor; "
            f"factors: {', '.join(factors or [])}"
        )
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConfigError(
            f"{where}: question.effects: {raw!r} names {twice[0]!r} twice; an interaction is between different factors"
        )
    gap = raw.endswith(" gap")
    if gap and isinstance(factors, Mapping) and factors.get(names[0]) != "population":
        pops = [n for n, t in factors.items() if t == "population"]
        raise ConfigError(
            f"{where}: question.effects: {raw!r}: a gap is between the levels of a population factor and "
            f"{names[0]!r} is {factors.get(names[0])}; population factors: {', '.join(pops) or 'none'}"
        )
    return KeyEffect(kind, names, raw, levels if not gap else ())


def parse_question(value: Any, where: str, factors: Sequence[str] | Mapping[str, str] | None = None) -> QuestionSpec:
    """``question``: one line of text or ``{text, effects}`` (see the module doc)."""
    if isinstance(value, dict):
        unknown = sorted(set(value) - {"text", "effects"})
        if unknown:
            raise ConfigError(f"{where}: unknown key {unknown[0]!r} at question; valid: text, effects")
        effects = value.get("effects") or []
        if not isinstance(effects, list):
            raise ConfigError(f"{where}: question.effects: a list such as ['noise × vad'], got {effects!r}")
        text = _line(value.get("text", ""), where)
        return QuestionSpec(text, tuple(parse_key_effect(e, where, factors) for e in effects))
    return QuestionSpec(_line(value, where))


def _line(value: Any, where: str) -> str:
    if not isinstance(value, str) or "\n" in value.strip():
        raise ConfigError(f"{where}: question: one line of text, got {value!r}")
    return value.strip()
