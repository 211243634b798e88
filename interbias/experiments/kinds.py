"""The kind of an experiment and the records of the two kind sections.

An experiment is of one kind (:data:`KINDS`): ``verification`` (speaker verification, the
default), ``countermeasure`` (a ``countermeasures:`` section: score a CM manifest with CMs) or
``tracks`` (a ``tracks:`` section: ADD 2023 tracks). ``interbias run`` runs each kind through
its task (:mod:`interbias.run.tasks`).

- ``countermeasures:`` → :class:`CountermeasureSpec`: ``models`` (CM labels, checked against
  the CM registry when the run starts), ``bootstrap`` (speaker-bootstrap replicates, default
  200), ``threshold`` (the dev threshold rule, default ``eer``);
- ``tracks:`` → :class:`TracksSpec`: a list of items, each ``{track: N, ...}`` with that track's
  settings (checked by the track's runner, :mod:`interbias.run.tasks.tracks`).

Both kinds need two acoustic factors applied to the test side (checked when the run starts).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from interbias.utils.errors import ConfigError

Kind = Literal["verification", "countermeasure", "tracks"]
KINDS: tuple[Kind, ...] = ("verification", "countermeasure", "tracks")
CM_KEYS = ("models", "bootstrap", "threshold")


@dataclass(frozen=True)
class CountermeasureSpec:
    """The ``countermeasures:`` section (module docstring)."""

    models: tuple[str, ...]
    bootstrap: int = 200
    threshold: str = "eer"


@dataclass(frozen=True)
class TrackItem:
    """One ``tracks:`` item: the track number and the item as written (``track`` included)."""

    track: int
    settings: tuple[tuple[str, Any], ...]

    def as_dict(self) -> dict[str, Any]:
        """The item as written in the YAML (a fresh dict)."""
        return dict(self.settings)


@dataclass(frozen=True)
class TracksSpec:
    """The ``tracks:`` section: its items in order."""

    items: tuple[TrackItem, ...]


def parse_countermeasures(raw: Any, where: str) -> CountermeasureSpec | None:
    """The ``countermeasures:`` section, or None when absent."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or not raw.get("models") or not isinstance(raw["models"], list):
        raise ConfigError(f"{where}: countermeasures: needs models: [label, ...]")
    unknown = sorted(set(raw) - set(CM_KEYS))
    if unknown:
        raise ConfigError(f"{where}: countermeasures: unknown key {unknown[0]!r}; valid: {', '.join(CM_KEYS)}")
    try:
        bootstrap = int(raw.get("bootstrap", 200))
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: countermeasures: bootstrap: an integer, got {raw['bootstrap']!r}") from exc
    return CountermeasureSpec(tuple(str(m) for m in raw["models"]), bootstrap, str(raw.get("threshold", "eer")))


def parse_tracks(raw: Any, where: str) -> TracksSpec | None:
    """The ``tracks:`` section, or None when absent."""
    if raw is None:
        return None
    if not isinstance(raw, list) or not raw or not all(isinstance(t, dict) and "track" in t for t in raw):
        raise ConfigError(f"{where}: tracks: needs a list of {{track: N, ...}} items")
    items = []
    for t in raw:
        try:
            number = int(t["track"])
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{where}: tracks: track: a number, got {t['track']!r}") from exc
        items.append(TrackItem(number, tuple(t.items())))
    return TracksSpec(tuple(items))


def kind_sections(raw: dict[str, Any], where: str) -> dict[str, Any]:
    """The ``Experiment`` fields of the kind: ``countermeasures``, ``tracks`` and ``kind``."""
    countermeasures = parse_countermeasures(raw.get("countermeasures"), where)
    tracks = parse_tracks(raw.get("tracks"), where)
    return {"countermeasures": countermeasures, "tracks": tracks, "kind": kind_of(countermeasures, tracks, where)}


def kind_of(countermeasures: CountermeasureSpec | None, tracks: TracksSpec | None, where: str) -> Kind:
    """The experiment's kind from its sections; both sections at once is refused."""
    if countermeasures is not None and tracks is not None:
        raise ConfigError(f"{where}: countermeasures and tracks: an experiment is one kind; keep one of them")
    if tracks is not None:
        return "tracks"
    return "countermeasure" if countermeasures is not None else "verification"
