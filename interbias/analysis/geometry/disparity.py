"""Probe disparity between demographic groups (TRIAD/ORCA, Proposition 2 and Corollary 1).

Everything lives in the audit's whitened probe space ``W = (Σ_T + τ_T I)^{-1/2}`` (the space of
:func:`interbias.analysis.geometry.linalg.axis_subspaces`, same ``τ_T``). For a grouping attribute
with group means ``μ_g``, the whitened displacement of two groups is ``Δ_gh = W (μ_g − μ_h)``;
``U_a`` is the rank-``m`` probe subspace of axis ``a``. A unit probe ``w`` shows the disparity
``D(w) = |wᵀ Δ|``.

- **Mean-square probe disparity** ``D̄_a``: ``w`` drawn uniformly from the unit sphere of ``U_a``
  and the pair ``(g, h)`` uniformly from the attribute's unordered group pairs, ``D̄_a² =
  E_{w,(g,h)} (wᵀΔ_gh)² = mean_gh ‖U_aᵀ Δ_gh‖² / m`` (exact: ``E[wwᵀ] = U_a U_aᵀ / m``).
- **Group displacement** ``δ``: the root-mean-square over pairs of ``‖U_voiceᵀ Δ_gh‖``, the
  part of the group difference that lies in the voice subspace.
- **Proposition 2 value** ``D̄_a^model = δ · √(Λ_{a,voice} / m)``: the mean-square disparity when
  the displacement is isotropic in ``U_voice`` with norm ``δ`` (``E‖U_aᵀΔ‖² = δ² Λ``). It grows
  with the aggregate leakage ``Λ``; ``D̄_a`` is measured, the model value predicted.
- **Worst-case floor** (Corollary 1): with peak leakage ``ℓ = ℓ_{a,voice}`` and a probe of
  accuracy ``ρ`` on the axis direction (``wᵀa ≥ ρ``), ``t₋ = ρℓ − √(1−ℓ²)√(1−ρ²)`` and every such
  probe shows ``D(w) ≥ δ · max(0, t₋)`` when the displacement is ``δ`` along the voice direction
  closest to ``U_a``. The floor is positive exactly in the **active region** ``ρ² + ℓ² > 1``;
  ``active_margin = ρ² + ℓ² − 1`` is reported (positive: active). Default ``ρ = 0.9``.

Probe axes: ``sem`` and ``expr`` (the displacement is a voice-level difference, so the voice axis
itself is not a probe axis here). ``nan`` where an attribute has fewer than 2 groups.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from itertools import combinations

import numpy as np

from interbias.analysis.geometry.linalg import TAU_REL, EmbeddingGrid, ridge
from interbias.utils.errors import AnalysisError

#: The probe axes whose disparity is measured against the voice-level group displacement.
PROBE_AXES = ("sem", "expr")
#: Probe accuracy ρ of Corollary 1.
RHO = 0.9
#: The metrics this module adds to an audit, keyed ``(metric, attribute, axis)``.
METRICS = ("Dbar", "Dbar_model", "delta", "floor", "active_margin")


def whitening(x: np.ndarray, *, tau: float | None = None, tau_rel: float = TAU_REL) -> np.ndarray:
    """``(Σ_T + τ_T I)^{-1/2}`` with ``τ_T = tau_rel·tr(Σ_T)/d`` (the audit's probe space)."""
    centred = x - x.mean(axis=0)
    total = centred.T @ centred / len(x)
    total = (total + total.T) / 2
    vals, vecs = np.linalg.eigh(total + ridge(total, tau, tau_rel) * np.eye(len(total)))
    return (vecs / np.sqrt(vals)) @ vecs.T


def displacements(grid: EmbeddingGrid, attribute: str, white: np.ndarray) -> np.ndarray:
    """``(pairs, d)`` whitened group-mean differences ``Δ_gh`` over unordered group pairs."""
    labels = grid.groups[attribute]
    means = [grid.x[labels == g].mean(axis=0) for g in sorted(set(labels))]
    diffs = [means[i] - means[j] for i, j in combinations(range(len(means)), 2)]
    return np.asarray(diffs).reshape(len(diffs), grid.x.shape[1]) @ white


def floor_t(rho: float, ell: float) -> float:
    """``t₋ = ρℓ − √(1−ℓ²)√(1−ρ²)`` (Corollary 1), ``ℓ`` and ``ρ`` clipped to [0, 1]."""
    rho, ell = min(max(rho, 0.0), 1.0), min(max(ell, 0.0), 1.0)
    return rho * ell - math.sqrt(1 - ell**2) * math.sqrt(1 - rho**2)


def disparity_statistics(
    grid: EmbeddingGrid,
    bases: Mapping[str, np.ndarray],
    leak: Mapping[tuple[str, str], tuple[float, float]],
    attributes: Sequence[str],
    *,
    rho: float = RHO,
    tau: float | None = None,
    tau_rel: float = TAU_REL,
) -> dict[tuple[str, ...], float]:
    """Every disparity statistic, keyed ``(metric, attribute, axis)`` for :data:`METRICS`.

    ``bases``: the audit's ``U_a`` (d × m); ``leak[(a, "voice")] = (Λ, ℓ)`` for each probe axis."""
    if not 0 < rho < 1:
        raise AnalysisError(f"probe accuracy rho must be in (0, 1); got {rho}")
    white = whitening(grid.x, tau=tau, tau_rel=tau_rel)
    m = bases["voice"].shape[1]
    out: dict[tuple[str, ...], float] = {}
    for attr in attributes:
        delta_pairs = displacements(grid, attr, white)
        defined = len(delta_pairs) > 0
        delta = math.sqrt(float(np.mean(np.sum((delta_pairs @ bases["voice"]) ** 2, axis=1)))) if defined else math.nan
        out[("delta", attr, "voice")] = delta
        for a in PROBE_AXES:
            lam, ell = leak[(a, "voice")]
            dbar = math.sqrt(float(np.mean(np.sum((delta_pairs @ bases[a]) ** 2, axis=1))) / m) if defined else math.nan
            out[("Dbar", attr, a)] = dbar
            out[("Dbar_model", attr, a)] = delta * math.sqrt(lam / m)
            out[("floor", attr, a)] = delta * max(0.0, floor_t(rho, ell))
            out[("active_margin", attr, a)] = rho**2 + ell**2 - 1
    return out
