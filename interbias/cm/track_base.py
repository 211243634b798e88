"""What the ``tracks:`` task (:mod:`interbias.run.tasks.tracks`) and each track share: the
registry of tracks (:data:`TRACKS`: a :class:`Track` per number; Track 2 in
:mod:`interbias.cm.track2`, Track 3 in :mod:`interbias.cm.track3`), the context a track's
runner gets, the result it returns, the cell file names, and the per-cell completion records
(:func:`cell_rows`) that let a rerun reuse finished cells."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from interbias.utils import crashpoints

if TYPE_CHECKING:
    from interbias.experiments.schema import Experiment


@dataclass
class TrackContext:
    """What a track runner gets: the experiment, its CM manifest, cache, run folder, reporter."""

    exp: Experiment
    manifest: Any
    cache: Path
    folder: Path
    reporter: Any
    log: Callable[[str], None] = print
    #: Where finished cells are kept (a run directory, :class:`interbias.run.rundir.RunDir`:
    #: ``write_cell``, ``cell_record``, ``read_scores``); None: every cell is scored.
    cells: Any = None


@dataclass
class TrackResult:
    rows: list[dict[str, Any]] = field(default_factory=list)
    report: list[str] = field(default_factory=list)
    record: dict[str, Any] = field(default_factory=dict)
    #: (utterance, cell) items scored, and those a cell's chain or decoding failed on.
    n_scored: int = 0
    n_failed: int = 0


@dataclass(frozen=True)
class Track:
    """One ADD 2023 track: its number, its runner (context and the item's settings in, a
    :class:`TrackResult` out), the check of its settings (item, where), the default model and
    what it does to each eval utterance (``validate``'s line)."""

    number: int
    run: Callable[[TrackContext, dict[str, Any]], TrackResult]
    check: Callable[[dict[str, Any], str], None]
    model: str
    does: str


#: The tracks a ``tracks:`` experiment can name, by number (:func:`register_track`).
TRACKS: dict[int, Track] = {}


def register_track(track: Track) -> Track:
    """Add ``track`` to :data:`TRACKS` (a number is registered once)."""
    if track.number in TRACKS:
        raise ValueError(f"track {track.number} is registered twice")
    TRACKS[track.number] = track
    return track


def safe(cell_id: str) -> str:
    """A cell id as a file name: characters other than letters, digits and ``-_.=`` become ``_``."""
    return "".join(c if c.isalnum() or c in "-_.=" else "_" for c in cell_id)


def cell_rows(
    ctx: TrackContext, track: str, cell_id: str, key: dict[str, Any], score: Callable[[], tuple[list[dict], list[str]]]
) -> tuple[list[dict[str, Any]], list[str]]:
    """The result rows and failures of one cell of a track: read back when the cell's completion
    record was written under the same ``key`` (the detector's checkpoint and settings), else
    ``score()`` (which writes the cell's files), then its rows and record are written."""
    store = ctx.cells
    if store is not None:
        rec = store.cell_record(track, cell_id)
        if rec is not None and rec.get("key") == key:
            return store.read_scores(track, cell_id).to_dict("records"), list(rec.get("failed", []))
    rows, failed = score()
    if store is not None:
        store.write_cell(track, cell_id, pd.DataFrame(rows), {"cell": cell_id, "key": key, "failed": failed})
        crashpoints.reached("cell-done")
    return rows, failed
