"""The size of a run's grid, counted and refused before any work.

A run scores every cell (one level per factor: the product of the factors' level counts) with
every encoder; each cell × encoder is one results row, one scores file and one completion
record, and its trials, chains and embeddings are planned up front. :data:`DEFAULT_MAX_ROWS`
(10,000 rows) is 125 times the largest experiment in the catalogue (E14: 80 cells) and keeps
the run directory to some 20,000 files; a grid of ~200,000 cells was seen to spend minutes and
over a gigabyte before its first line of progress. A larger grid is almost always a factor
given levels it should not have (a continuous attribute, one level per speaker); a deliberate
one raises the limit with ``INTERBIAS_MAX_CELLS``.
"""

from __future__ import annotations

import math
import os
from typing import Any

from interbias.utils.errors import ConfigError

#: Cells × encoders a run accepts unless ``INTERBIAS_MAX_CELLS`` says otherwise.
DEFAULT_MAX_ROWS = 10_000
ENV = "INTERBIAS_MAX_CELLS"


def n_cells(exp: Any) -> int:
    """Cells of ``exp``'s grid: the product of its factors' level counts (no cell is built)."""
    return math.prod(len(f.levels) for f in exp.factors)


def max_rows() -> int:
    """The limit on cells × encoders: ``$INTERBIAS_MAX_CELLS`` (a positive integer) or the default."""
    raw = os.environ.get(ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_ROWS
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        raise ConfigError(f"{ENV}={raw!r}: expected a positive whole number of cells × encoders")
    return value


def check_grid_size(exp: Any, n_encoders: int) -> int:
    """The number of results rows (cells × encoders) ``exp`` would write; a :class:`ConfigError`
    with the count and how to raise the limit when it exceeds :func:`max_rows`."""
    cells = n_cells(exp)
    rows = cells * max(1, n_encoders)
    limit = max_rows()
    if rows > limit:
        sizes = " × ".join(f"{f.name} {len(f.levels)}" for f in exp.factors)
        raise ConfigError(
            f"{exp.name}: the grid has {cells:,} cells ({sizes}) × {n_encoders} encoder(s) = {rows:,} results rows, "
            f"over the limit of {limit:,}; check the factors' levels, or raise the limit with {ENV}={rows}"
        )
    return rows
