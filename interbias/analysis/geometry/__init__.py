"""Geometry audit of an embedding on a text × voice × style grid (TRIAD/ORCA, Section III).

Pure functions on an ``(n, d)`` embedding matrix and per-row label arrays. All covariances are
population (1/n) covariances with class priors ``π_c = n_c / n``, so ``Σ_T = Σ_B + Σ_W`` holds exactly for every axis.

- Axis fidelity ``F_a = (1/r_a) Σ_{j≤r_a} λ_j / (1 + λ_j)`` over the top ``r_a = min(C_a − 1, d)``
  generalised eigenvalues of ``(Σ_B^a, Σ_W^a + τI)``; ``τ = tau_rel · tr(Σ_W^a) / d`` with
  ``tau_rel = 1e-3`` unless an absolute ``tau`` is given. ``F_a ∈ [0, 1)``.
- Balanced-grid decomposition ``Σ_T = Σ_B^sem + Σ_B^voice + Σ_B^expr + Σ_int + mean Σ_W``
  (within-cell scatter); refused on an unbalanced grid, never rebalanced.
- Leakage between axes ``a, b``: ``U_a`` = span of the top ``m`` generalised eigenvectors of
  axis ``a`` mapped by ``(Σ_T + τ_T I)^{1/2}`` (whitened probe space, ``τ_T = tau_rel ·
  tr(Σ_T)/d`` shared by all axes); with principal-angle cosines ``cos θ_i`` between ``U_a`` and
  ``U_b``: aggregate ``Λ = (1/m) Σ cos² θ_i`` and peak ``ℓ = max cos θ_i`` (``ℓ² ≥ Λ`` checked).
  Two random ``m``-dim subspaces of ``R^d`` give ``E[Λ] = m/d`` (reported as ``chance``).
- Group-conditional fidelity ``F_{a|g}``: ``F_a`` on the rows whose voice belongs to group
  ``g``; spread ``Γ_a = max_g F_{a|g} − min_g F_{a|g}`` per grouping attribute.
- Speaker-level permutation p-values for ``Γ_a`` (voices' group labels shuffled, group sizes
  kept; exact enumeration when the distinct arrangements number at most ``n_perm``); every draw
  comes from ``derive_rng`` and the seed is written into the output rows.
- 95 % half-widths ``1.96·√(V_text + V_voice)`` from a two-way delete-one-cluster jackknife
  (``V_text = (T−1)/T Σ_t (θ_(t) − θ̄)²`` over the T texts left out one at a time, likewise
  voices; styles fixed). Not a bootstrap: a bootstrap draw of texts with replacement holds about
  63 % distinct texts (5 of 8), which collapses class means, changes ``r_sem`` and leaves the
  rank-``m`` semantic subspace undefined in most replicates; leaving one text out keeps every
  statistic defined and needs no random draws. A statistic undefined in some replicate (Λ when
  ``m`` exceeds ``C_a − 1`` there, a group left with one voice) gets no half-width (``nan``) and
  ``n_resamples`` counts its finite replicates. Leaving out a text (voice) also lowers ``r_sem`` (``r_voice``) by one,
  and that shift enters the half-widths of F_sem, F_voice, their group values and spreads: they
  are conservative (wide) for Γ, whose test is the permutation p-value.
"""

# ruff: noqa: F401  (re-exports: the audit's public names, as before the split)
from __future__ import annotations

from interbias.analysis.geometry.linalg import (
    AXES,
    AXIS_COLUMN,
    PAIRS,
    TAU_REL,
    Decomposition,
    EmbeddingGrid,
    Fidelity,
    Leakage,
    Scatter,
    UnbalancedGridError,
    axis_fidelity,
    axis_subspaces,
    check_balance,
    class_scatter,
    fidelities,
    generalized_eigh,
    grid_decomposition,
    group_fidelities,
    leakage,
    ridge,
    spreads,
)
from interbias.analysis.geometry.schema import AUDIT_KEY, COLUMNS, merge, read_geometry, summary, to_frame
from interbias.analysis.geometry.section import GeometrySection, report_section
from interbias.analysis.geometry.stats import (
    CI_METHOD,
    DEFAULT_ATTRIBUTES,
    Z95,
    Audit,
    Key,
    PermutationTest,
    audit,
    default_m,
    distinct_arrangements,
    jackknife_half_widths,
    n_arrangements,
    permutation_test,
    statistics,
    work_units,
)
