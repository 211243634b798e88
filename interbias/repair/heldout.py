"""What a repair is judged by on held-out voices: the mean leakage and its paired change, and the
clean-pair equal error rate.

- ``Λ̄`` is the mean of the audit's aggregate leakage Λ over the three axis pairs (sem–voice,
  sem–expr, voice–expr) at the audit's ``m`` and ridge. Its 95 % half-width, and that of the
  change ``Λ̄(variant) − Λ̄(raw)``, come from the audit's two-way delete-one-cluster jackknife
  (texts, then voices, left out one at a time; :func:`interbias.analysis.geometry.jackknife_half_widths`)
  with the raw and repaired embeddings left out together (paired), so the change's half-width
  says whether a repair moves Λ̄ beyond resampling noise.
- ``EER_clean``: cosine scores of every pair of held-out rows with different texts, a target
  when both rows share the voice; the EER of :func:`interbias.metrics.verification.eer`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from interbias.analysis import geometry as geo
from interbias.metrics.verification import eer


@dataclass(frozen=True)
class HeldoutFigures:
    """One variant's mean leakage (± half-width), its paired change from raw (± half-width) and clean EER."""

    lambda_mean: float
    lambda_mean_hw: float
    delta: float
    delta_hw: float
    eer_clean: float


def mean_leakage(grid: geo.EmbeddingGrid, x: np.ndarray, m: int) -> float:
    """Mean over the axis pairs of the aggregate leakage Λ of rows ``x`` labelled as ``grid``;
    ``nan`` when ``m`` exceeds some axis's ``C_a − 1`` (a jackknife replicate of a small grid)."""
    if m > min(len(set(grid.labels(a))) for a in geo.AXES) - 1:
        return math.nan
    bases = geo.axis_subspaces(x, {a: grid.labels(a) for a in geo.AXES}, m)
    return float(np.mean([geo.leakage(bases[a], bases[b]).aggregate for a, b in geo.PAIRS]))


#: Rows per block of the pair scores in :func:`clean_eer` (a block × n float64 matrix at a time).
PAIR_BLOCK = 1024


def clean_eer(grid: geo.EmbeddingGrid, x: np.ndarray) -> float:
    """EER of cosine scores over all row pairs with different texts (target: same voice).

    The scores are gathered ``PAIR_BLOCK`` rows at a time into one float64 array (8 bytes per
    pair, in ``i < j`` row-major order), never as an n × n matrix or pair-index arrays, so
    26,880 held-out rows (192 voices) take ~3 GB for the scores rather than ~20 GB."""
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    text = np.unique(grid.text, return_inverse=True)[1]
    voice = np.unique(grid.voice, return_inverse=True)[1]
    n = len(unit)

    def block(start: int) -> tuple[slice, np.ndarray]:
        rows = slice(start, min(n, start + PAIR_BLOCK))
        upper = np.arange(start, n)[None, :] > np.arange(rows.start, rows.stop)[:, None]
        return rows, upper & (text[rows, None] != text[None, start:])

    total = sum(int(block(s)[1].sum()) for s in range(0, n, PAIR_BLOCK))
    scores = np.empty(total)
    labels = np.empty(total, dtype=np.int8)
    filled = 0
    for start in range(0, n, PAIR_BLOCK):
        rows, keep = block(start)
        k = int(keep.sum())
        scores[filled : filled + k] = (unit[rows] @ unit[start:].T)[keep]
        labels[filled : filled + k] = (voice[rows, None] == voice[None, start:])[keep]
        filled += k
    return eer(scores, labels)


def heldout_figures(grid: geo.EmbeddingGrid, variants: Mapping[str, np.ndarray]) -> dict[str, HeldoutFigures]:
    """:class:`HeldoutFigures` of each variant's rows (``variants["raw"]`` is the base encoder's)."""
    m = geo.default_m(grid)
    names = list(variants)
    point = {n: mean_leakage(grid, x, m) for n, x in variants.items()}
    families = []
    for col in (grid.text, grid.voice):
        reps = []
        for unit in sorted(set(col)):
            rows = col != unit
            sub = grid.subset(rows)
            vals = {n: mean_leakage(sub, x[rows], m) for n, x in variants.items()}
            reps.append({**{(n,): v for n, v in vals.items()}, **{(n, "d"): vals[n] - vals["raw"] for n in names}})
        families.append(reps)
    keys = [(n,) for n in names] + [(n, "d") for n in names]
    half = geo.jackknife_half_widths(families[0], families[1], keys)
    return {
        n: HeldoutFigures(
            point[n], half[(n,)][0], point[n] - point["raw"], half[(n, "d")][0], clean_eer(grid, variants[n])
        )
        for n in names
    }
