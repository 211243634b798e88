"""Protocol factors (``type: protocol``): levels that change how a cell's trials are scored, not
who is in them or what is done to the audio.

A level sets overrides of the experiment's own settings; the keys allowed are
:data:`PROTOCOL_KEYS`:

- ``enrol_utterances`` (K >= 1): the cell's trial models are the first K enrolment utterances
  of each trial (``enrol``, ``enrol_2`` … ``enrol_K``). The trial list is drawn once, with the
  largest K of the factor's levels (``trials.enrol_utterances`` is then that K and may not be
  set too), so every cell scores the same trial identities (trial ids, test utterances, labels,
  speakers) and a K = 1 cell's model is the first enrolment utterance of the K = 3 cell's model:
  the cells are paired;
- ``vad`` (``none``, ``energy``, ``webrtc``, ``silero``): the cell's front end applies that voice
  activity detection (:mod:`interbias.audio.vad`) instead of ``frontend.vad``; its embeddings are
  cached under that front end's fingerprint.

Every level of a protocol factor sets the same keys, and no two protocol factors set the same
key. Score normalisation (``scoring.norm``) and the embedding export are not defined for a run
whose cells differ in front end or K, and are refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from interbias.audio.vad import VADS, check_vad
from interbias.utils.errors import ConfigError

#: The settings a protocol level may override.
PROTOCOL_KEYS = ("enrol_utterances", "vad")


@dataclass(frozen=True)
class ProtocolLevel:
    """A protocol factor's level: the settings it overrides (``None``: not set by this level)."""

    name: str
    enrol_utterances: int | None = None
    vad: str | None = None

    def keys(self) -> tuple[str, ...]:
        return tuple(k for k in PROTOCOL_KEYS if getattr(self, k) is not None)


def parse_protocol_levels(levels_raw: dict[Any, Any], where: str, here: str) -> list[ProtocolLevel]:
    """The levels of a protocol factor (``here``: its position for messages), each a mapping of
    :data:`PROTOCOL_KEYS` to values; every level sets the same keys."""
    out = []
    for lname, ldef in levels_raw.items():
        lw = f"{where}: {here}.levels.{lname}"
        if not isinstance(ldef, dict) or not ldef:
            raise ConfigError(f"{lw}: a protocol level maps settings to values ({', '.join(PROTOCOL_KEYS)})")
        bad = [str(k) for k in ldef if k not in PROTOCOL_KEYS]
        if bad:
            raise ConfigError(
                f"{lw}: {', '.join(bad)} cannot be set by a protocol level; allowed: {', '.join(PROTOCOL_KEYS)}"
            )
        k = ldef.get("enrol_utterances")
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
            raise ConfigError(f"{lw}.enrol_utterances: must be an integer >= 1, got {k!r}")
        vad = ldef.get("vad")
        if "vad" in ldef and vad not in VADS:
            raise ConfigError(f"{lw}.vad: {vad!r} is not one of {', '.join(VADS)}")
        out.append(ProtocolLevel(str(lname), k, None if vad is None else str(vad)))
    keys = {lv.keys() for lv in out}
    if len(keys) > 1:
        raise ConfigError(
            f"{where}: {here}.levels: every level of a protocol factor sets the same keys, got "
            + "; ".join(f"{lv.name}: {', '.join(lv.keys())}" for lv in out)
        )
    return out


def protocol_levels(factors: Any) -> dict[str, list[ProtocolLevel]]:
    """Protocol factor name -> its levels."""
    return {f.name: list(f.levels) for f in factors if f.type == "protocol"}


def largest_enrolment(factors: Any, trials_raw: dict[str, Any], where: str) -> int | None:
    """The K the trial list is drawn with when a protocol factor sets ``enrol_utterances`` (the
    largest of its levels), else ``None``; refused when ``trials.enrol_utterances`` is set too, or
    two protocol factors set the same key."""
    setters: dict[str, str] = {}
    for name, levels in protocol_levels(factors).items():
        for key in levels[0].keys():
            if key in setters:
                raise ConfigError(f"{where}: factors: {setters[key]} and {name} both set {key}; one factor per setting")
            setters[key] = name
    if "enrol_utterances" not in setters:
        return None
    if "enrol_utterances" in trials_raw:
        raise ConfigError(
            f"{where}: trials.enrol_utterances: set by the protocol factor {setters['enrol_utterances']}; "
            "remove it from trials"
        )
    levels = protocol_levels(factors)[setters["enrol_utterances"]]
    return max(int(lv.enrol_utterances) for lv in levels if lv.enrol_utterances is not None)


def with_protocol_k(factors: Any, trials_raw: Any, where: str) -> Any:
    """The ``trials`` section to parse: with ``enrol_utterances`` the largest K of a protocol
    factor (:func:`largest_enrolment`), else as given."""
    k = largest_enrolment(factors, trials_raw if isinstance(trials_raw, dict) else {}, where)
    return trials_raw if k is None else {**trials_raw, "enrol_utterances": k}


def check_protocol_vads(factors: Any, sample_rate_hz: int, where: str) -> None:
    """A :class:`ConfigError` for a protocol level's VAD that does not take ``sample_rate_hz``."""
    for name, levels in protocol_levels(factors).items():
        for lv in levels:
            if lv.vad is not None:
                check_vad(lv.vad, sample_rate_hz, f"{where}: factors ({name}).levels.{lv.name}")


def varies_frontend(factors: Any) -> bool:
    """Whether a protocol factor sets the front end (``vad``) per cell."""
    return any(lv.vad is not None for levels in protocol_levels(factors).values() for lv in levels)
