"""Cells embedded under their own front ends.

A protocol factor that sets ``vad`` (:mod:`interbias.experiments.protocol`) gives cells
different front ends. :class:`CellEmbedders` runs one :class:`~interbias.embedding.stage.Embedder`
per front end (cells grouped by :meth:`Experiment.frontend_for`), each keying the embedding cache
by its own front end's fingerprint, and hands each cell the embedder of its front end. A run whose
cells share one front end has exactly one group, and embeds as it always did. The operations
record of an experiment whose cells differ in front end has a ``vad`` column (the rows' VAD),
part of its row key, whichever of its cells an invocation scores.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from interbias.embedding.stage import ChainItems, Embedder, chains_for_cells
from interbias.run.operations import operations_frame

if TYPE_CHECKING:
    from interbias.audio.frontend import FrontEnd
    from interbias.experiments.schema import Cell, Experiment


def frontend_groups(exp: Experiment, cells: Sequence[Cell]) -> dict[FrontEnd, list[Cell]]:
    """The cells per front end, in the order their front ends first appear (the experiment's
    own front end first when no cell is given)."""
    out: dict[FrontEnd, list[Cell]] = {}
    for cell in cells:
        out.setdefault(exp.frontend_for(cell), []).append(cell)
    return out or {exp.frontend: []}


class CellEmbedders:
    """One :class:`Embedder` per front end; ``make(frontend, cells)`` builds the group's embedder."""

    def __init__(
        self, exp: Experiment, cells: Sequence[Cell], make: Callable[[FrontEnd, list[Cell]], Embedder]
    ) -> None:
        self.exp = exp
        #: whether the experiment's cells (not only these) differ in front end
        self.per_cell = len({exp.frontend_for(c) for c in exp.cells()}) > 1
        self.groups = {fe: (group, make(fe, group)) for fe, group in frontend_groups(exp, cells).items()}

    def run(self, items: ChainItems, trials_by_stratum: Any, run: Callable[[Embedder, ChainItems], None]) -> None:
        """Fill each group's vectors: ``items`` for a single group, else each group's own items."""
        for group, emb in self.groups.values():
            run(emb, items if len(self.groups) == 1 else chains_for_cells(group, trials_by_stratum))

    def label(self, emb: Embedder) -> str:
        """What sets ``emb``'s group apart, for its line of work ahead: ``4 cells with VAD energy``."""
        for fe, (group, e) in self.groups.items():
            if e is emb:
                return f"{len(group)} cell{'' if len(group) == 1 else 's'} with VAD {fe.vad}"
        raise KeyError("not an embedder of these cells")

    def for_cell(self, cell: Cell) -> Embedder:
        return self.groups[self.exp.frontend_for(cell)][1]

    @property
    def n_embedded(self) -> int:
        return sum(emb.n_embedded for _, emb in self.groups.values())

    @property
    def n_cached(self) -> int:
        return sum(emb.n_cached for _, emb in self.groups.values())

    @property
    def cache_write_s(self) -> float:
        return sum(emb.cache_write_s for _, emb in self.groups.values())

    @property
    def cache_wait_s(self) -> float:
        return sum(emb.cache_wait_s for _, emb in self.groups.values())

    @property
    def n_failures(self) -> int:
        return sum(len(emb.failures) for _, emb in self.groups.values())

    def operations(self, trials_by_stratum: Any, speakers: dict[str, str]) -> pd.DataFrame:
        """The operations rows of every group (see the module docs for the ``vad`` column)."""
        frames = []
        for fe, (group, emb) in self.groups.items():
            frame = operations_frame(group, trials_by_stratum, emb.realised, speakers)
            frames.append(frame.assign(vad=fe.vad) if self.per_cell else frame)
        if len(frames) == 1:
            return frames[0]
        keys = ["vad", "side", "chain_fp", "draw", "utterance"]
        return pd.concat(frames, ignore_index=True).sort_values(keys, kind="stable").reset_index(drop=True)
