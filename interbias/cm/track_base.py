"""What the ``tracks:`` conductor (:mod:`interbias.run.tasks.tracks`) and each track's runner share:
the context a runner gets, the result it returns, and the cell file names."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class TrackContext:
    """What a track runner gets: the experiment, its CM manifest, cache, run folder, reporter."""

    exp: Any
    manifest: Any
    cache: Path
    folder: Path
    reporter: Any
    log: Callable[[str], None] = print


@dataclass
class TrackResult:
    rows: list[dict[str, Any]] = field(default_factory=list)
    report: list[str] = field(default_factory=list)
    record: dict[str, Any] = field(default_factory=dict)
    #: (utterance, cell) items scored, and those a cell's chain or decoding failed on.
    n_scored: int = 0
    n_failed: int = 0


def safe(cell_id: str) -> str:
    """A cell id as a file name: characters other than letters, digits and ``-_.=`` become ``_``."""
    return "".join(c if c.isalnum() or c in "-_.=" else "_" for c in cell_id)
