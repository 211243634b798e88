"""Back-end factors (``type: backend``): levels that change the scoring back-end of a cell, not
who is in its trials or what is done to its audio.

Each level names a back-end of :data:`interbias.metrics.backends.BACKENDS`::

    - name: backend
      type: backend
      reference: cosine
      levels: {cosine: cosine, lda: lda+cosine, plda: plda, plda_adapted: plda+adapt}

A cell is then (chain, back-end): the levels share every chain, so every embedding is computed
once per (utterance, chain, encoder) and each level re-scores the same cached vectors of the
same trials. Each fitted back-end is fitted per encoder on the dev split's reference-condition
embeddings (:mod:`interbias.run.backend_stage`); an ``+adapt`` level is then adapted to each
condition's unlabelled dev embeddings. One back-end factor per experiment; it replaces
``scoring.backend`` (which must stay ``cosine``), needs a dev split, and is refused with score
normalisation or attacks (both score by cosine), as ``scoring.backend`` is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from interbias.metrics.backends import BACKENDS
from interbias.utils.errors import ConfigError


@dataclass(frozen=True)
class BackendLevel:
    """A back-end factor's level: its name and the back-end it scores with."""

    name: str
    backend: str


def parse_backend_levels(levels_raw: dict[Any, Any], where: str, here: str) -> list[BackendLevel]:
    """The levels of a back-end factor (``here``: its position for messages): level name ->
    back-end name; no back-end twice."""
    out = []
    for lname, ldef in levels_raw.items():
        value = lname if ldef is None else ldef
        if value not in BACKENDS:
            raise ConfigError(
                f"{where}: {here}.levels.{lname}: {value!r} is not a back-end; one of {', '.join(BACKENDS)}"
            )
        out.append(BackendLevel(str(lname), str(value)))
    kinds = [lv.backend for lv in out]
    twice = sorted({k for k in kinds if kinds.count(k) > 1})
    if twice:
        raise ConfigError(f"{where}: {here}.levels: back-end {twice[0]} is named by two levels")
    return out


def backend_levels(factors: Any) -> list[BackendLevel]:
    """The levels of the experiment's back-end factor (empty without one)."""
    return [lv for f in factors if f.type == "backend" for lv in f.levels]
