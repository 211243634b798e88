"""Crossed (intersectional) fairness groups: ``gender×age_band`` is one grouping whose groups
are the crossed cells (``female×young``, ``male×elderly`` …).

A trial belongs to a crossed cell when it belongs to a pure group of every component attribute
(both sides carry the same value of each); a trial that is ``missing`` in any component is
``missing``, else one that is ``mixed`` in any component is ``mixed`` — neither is compared.
The crossed grouping then goes through the report like any attribute: every cell gets its own
row (with its speaker count), every pair of cells is compared under the clustered test's
minimum-speakers rule (a cell with too few speakers is reported, never tested), and the p-values
join the report's one Holm family (:mod:`interbias.analysis.groups.fairness_stats`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from interbias.analysis.groups.fairness_stats import MISSING, MIXED
from interbias.utils.errors import AnalysisError

#: Joins the attributes of a crossing (``--group gender×age_band``) and the values of a cell.
CROSS = "×"


def components(name: str) -> tuple[str, ...]:
    """The attributes of a grouping name: ``("gender", "age_band")`` for ``gender×age_band``,
    ``("gender",)`` for a plain attribute."""
    parts = tuple(p.strip() for p in name.split(CROSS))
    if any(not p for p in parts) or len(set(parts)) != len(parts):
        raise AnalysisError(f"group {name!r}: a crossing names distinct attributes joined by {CROSS}")
    return parts


def crossed(groups: Sequence[str]) -> list[str]:
    """``--cross``: the ``--group`` attributes as one crossing (at least two)."""
    if len(groups) < 2:
        raise AnalysisError(f"--cross crosses two or more --group attributes (got {len(groups)})")
    return [CROSS.join(g for name in groups for g in components(name))]


def attribute_columns(names: Sequence[str]) -> list[str]:
    """Every attribute the groupings ``names`` read, once each, in order."""
    return list(dict.fromkeys(a for n in names for a in components(n)))


def cross_labels(parts: Sequence[np.ndarray]) -> np.ndarray:
    """Per trial, its crossed cell from its group in each component (see the module doc)."""
    stacked = np.stack([np.asarray(p, dtype=object) for p in parts])
    out = np.array([CROSS.join(str(v) for v in col) for col in stacked.T], dtype=object)
    out[(stacked == MIXED).any(axis=0)] = MIXED
    out[(stacked == MISSING).any(axis=0)] = MISSING
    return out


def grouping(name: str, labels_of: Callable[[str], np.ndarray]) -> np.ndarray:
    """The group labels of grouping ``name`` from ``labels_of(attribute)``."""
    parts = components(name)
    if len(parts) == 1:
        return labels_of(parts[0])
    return cross_labels([labels_of(a) for a in parts])
