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

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.linalg import solve_triangular

from interbias.errors import AnalysisError
from interbias.seeding import derive_rng

AXES = ("sem", "voice", "expr")
#: The label column that partitions the grid into classes along each axis.
AXIS_COLUMN = {"sem": "text", "voice": "voice", "expr": "style"}
PAIRS = (("sem", "voice"), ("sem", "expr"), ("voice", "expr"))
DEFAULT_ATTRIBUTES = ("gender", "age_band", "accent")
TAU_REL = 1e-3
Z95 = 1.959963984540054
CI_METHOD = "jackknife-2way"
#: Columns of geometry.csv, in order.
COLUMNS = (
    "encoder",
    "encoder_fingerprint",
    "source",
    "subset",
    "layer",
    "metric",
    "axis",
    "axis_b",
    "attribute",
    "group",
    "value",
    "ci_half_width",
    "ci_method",
    "n_resamples",
    "p_value",
    "p_method",
    "n_perm",
    "n_classes",
    "m",
    "chance",
    "tau",
    "d",
    "n_rows",
    "n_texts",
    "n_voices",
    "n_styles",
    "n_failed",
    "seed",
    "note",
)


class UnbalancedGridError(AnalysisError):
    """The (text, voice, style) cells do not all hold the same number of rows."""


# ---- scatter matrices and the generalised eigenproblem ---------------------------------------


@dataclass(frozen=True)
class Scatter:
    """Between-, within-class and total scatter (population covariances, class priors)."""

    between: np.ndarray
    within: np.ndarray
    total: np.ndarray
    n_classes: int


def _as_matrix(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] == 0 or x.shape[1] == 0:
        raise AnalysisError(f"embeddings must be a non-empty (n, d) matrix; got shape {x.shape}")
    if not np.isfinite(x).all():
        raise AnalysisError(f"embeddings hold {int((~np.isfinite(x)).sum())} non-finite value(s)")
    return x


def _class_index(labels: Sequence[Any], n: int) -> tuple[np.ndarray, int]:
    arr = np.asarray(labels)
    if arr.shape != (n,):
        raise AnalysisError(f"labels must have one entry per row ({n}); got shape {arr.shape}")
    _, idx = np.unique(arr, return_inverse=True)
    return idx, int(idx.max()) + 1


def _class_means(x: np.ndarray, idx: np.ndarray, n_cls: int) -> np.ndarray:
    """(C, d) class means; every class index in ``0..C−1`` occurs (``idx`` from ``np.unique``)."""
    counts = np.bincount(idx, minlength=n_cls)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    return np.add.reduceat(x[np.argsort(idx, kind="stable")], starts, axis=0) / counts[:, None]


def _between_factor(x: np.ndarray, mu: np.ndarray, idx: np.ndarray, n_cls: int) -> tuple[np.ndarray, np.ndarray]:
    """``(D, means)`` with ``D = [√π_c (μ_c − μ)]_c`` (d × C), so that ``Σ_B = D Dᵀ``."""
    means = _class_means(x, idx, n_cls)
    priors = np.bincount(idx, minlength=n_cls) / len(x)
    return ((means - mu) * np.sqrt(priors)[:, None]).T, means


def _cov(a: np.ndarray) -> np.ndarray:
    c = a.T @ a / len(a)
    return (c + c.T) / 2


def class_scatter(x: np.ndarray, labels: Sequence[Any]) -> Scatter:
    """``Σ_B = Σ_c π_c (μ_c − μ)(μ_c − μ)ᵀ``, ``Σ_W = Σ_c π_c Σ_c`` and ``Σ_T`` (all 1/n)."""
    x = _as_matrix(x)
    idx, n_cls = _class_index(labels, len(x))
    mu = x.mean(axis=0)
    dmat, means = _between_factor(x, mu, idx, n_cls)
    between = dmat @ dmat.T
    return Scatter((between + between.T) / 2, _cov(x - means[idx]), _cov(x - mu), n_cls)


def ridge(scatter: np.ndarray, tau: float | None = None, tau_rel: float = TAU_REL) -> float:
    """``tau`` when given, else ``tau_rel · tr(scatter) / d``."""
    if tau is not None:
        if not tau > 0:
            raise AnalysisError(f"tau must be > 0; got {tau}")
        return float(tau)
    value = tau_rel * float(np.trace(scatter)) / scatter.shape[0]
    if not value > 0:
        raise AnalysisError(
            "the scatter has zero trace (every class holds identical vectors), so the default ridge "
            "τ = tau_rel·tr/d is 0; pass an absolute tau"
        )
    return value


def generalized_eigh(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Solve ``a v = λ b v`` for symmetric ``a`` and symmetric positive-definite ``b``.

    Cholesky ``b = L Lᵀ``, symmetric eigenproblem of ``L⁻¹ a L⁻ᵀ``, ``v = L⁻ᵀ u``. Returns the
    eigenvalues in descending order and ``b``-orthonormal eigenvectors (``Vᵀ b V = I``) as columns.
    """
    try:
        low = np.linalg.cholesky(b)
    except np.linalg.LinAlgError as exc:
        raise AnalysisError("the regularised within-class scatter is not positive definite") from exc
    half = solve_triangular(low, a, lower=True)
    c = solve_triangular(low, half.T, lower=True)
    vals, u = np.linalg.eigh((c + c.T) / 2)
    vecs = solve_triangular(low.T, u, lower=False)
    order = np.argsort(vals)[::-1]
    return vals[order], vecs[:, order]


@dataclass(frozen=True)
class Fidelity:
    """``F_a`` with the ``rank`` eigenvalues it averages, the ridge and the class count."""

    value: float
    eigenvalues: np.ndarray
    rank: int
    tau: float
    n_classes: int


def _within_cholesky(
    within: np.ndarray,
    total: np.ndarray,
    direct: Callable[[], np.ndarray],
    tau: float | None,
    tau_rel: float,
) -> tuple[np.ndarray, float]:
    """Cholesky factor of ``Σ_W + τI`` and ``τ``; ``within`` came from ``Σ_T − Σ_B`` and is
    replaced by ``direct()`` where that subtraction lost the matrix to rounding."""
    eye = np.eye(len(within))
    if np.trace(within) > 1e-6 * np.trace(total):
        t = ridge(within, tau, tau_rel)
        try:
            return np.linalg.cholesky(within + t * eye), t
        except np.linalg.LinAlgError:
            pass
    within = direct()
    t = ridge(within, tau, tau_rel)
    try:
        return np.linalg.cholesky(within + t * eye), t
    except np.linalg.LinAlgError:
        raise AnalysisError("the regularised within-class scatter is not positive definite") from None


def fidelities(
    x: np.ndarray, labels: Mapping[str, Sequence[Any]], *, tau: float | None = None, tau_rel: float = TAU_REL
) -> dict[str, Fidelity]:
    """:func:`axis_fidelity` for several labellings of the same rows (``Σ_T`` computed once).

    With ``Σ_B = D Dᵀ`` (``D`` = prior-scaled centred class means, d × C), ``Σ_W = Σ_T − Σ_B``
    and ``Σ_W + τI = L Lᵀ``, the nonzero generalised eigenvalues are those of ``(L⁻¹D)ᵀ(L⁻¹D)``
    (C × C): the same values as the d × d problem at a fraction of the cost. Where the
    subtraction is unreliable (``tr Σ_W ≤ 1e-6 tr Σ_T``, or ``Σ_W + τI`` numerically indefinite),
    ``Σ_W`` is recomputed from the within-class residuals (the same matrix in exact arithmetic)."""
    x = _as_matrix(x)
    n, d = x.shape
    mu = x.mean(axis=0)
    total = _cov(x - mu)
    out = {}
    for axis, lab in labels.items():
        idx, n_cls = _class_index(lab, n)
        if n_cls < 2:
            raise AnalysisError(f"fidelity ({axis}) needs at least 2 classes; got {n_cls}")
        dmat, means = _between_factor(x, mu, idx, n_cls)
        within = total - dmat @ dmat.T
        low, t = _within_cholesky(
            (within + within.T) / 2, total, lambda means=means, idx=idx: _cov(x - means[idx]), tau, tau_rel
        )
        mmat = solve_triangular(low, dmat, lower=True)
        small = mmat.T @ mmat if n_cls <= d else mmat @ mmat.T
        vals = np.linalg.eigvalsh((small + small.T) / 2)[::-1]
        r = min(n_cls - 1, d)
        top = np.clip(vals[:r], 0.0, None)  # Σ_B is PSD: a negative is rounding (|λ| ~ 1e-16)
        out[axis] = Fidelity(float(np.mean(top / (1.0 + top))), top, r, t, n_cls)
    return out


def axis_fidelity(
    x: np.ndarray, labels: Sequence[Any], *, tau: float | None = None, tau_rel: float = TAU_REL
) -> Fidelity:
    """``F = (1/r) Σ_{j≤r} λ_j/(1+λ_j)`` over the top ``r = min(C − 1, d)`` eigenvalues of
    ``(Σ_B, Σ_W + τI)``: the mean squared regularised canonical correlation with one-hot labels."""
    return fidelities(x, {"axis": labels}, tau=tau, tau_rel=tau_rel)["axis"]


# ---- the balanced-grid decomposition -------------------------------------------------------


@dataclass(frozen=True)
class Decomposition:
    """``Σ_T`` and its five parts; ``residual`` = ‖Σ_T − Σ parts‖_F / ‖Σ_T‖_F."""

    total: np.ndarray
    between: dict[str, np.ndarray]
    interaction: np.ndarray
    within: np.ndarray
    residual: float
    rows_per_cell: int

    def shares(self) -> dict[str, float]:
        """Each part's share of ``tr(Σ_T)``: sem, voice, expr, int, within."""
        tr = float(np.trace(self.total))
        parts = {**self.between, "int": self.interaction, "within": self.within}
        return {k: float(np.trace(v)) / tr if tr > 0 else math.nan for k, v in parts.items()}


def check_balance(text: Sequence[Any], voice: Sequence[Any], style: Sequence[Any]) -> int:
    """Rows per (text, voice, style) cell when every cell of the full cross holds the same
    number; raises :class:`UnbalancedGridError` saying what is missing otherwise."""
    cells = Counter(zip(text, voice, style, strict=True))
    full = len(set(text)) * len(set(voice)) * len(set(style))
    counts = sorted(set(cells.values()))
    if len(cells) == full and len(counts) == 1:
        return counts[0]
    raise UnbalancedGridError(
        f"unbalanced grid: {full - len(cells)} of {full} (text, voice, style) cells missing and rows per "
        f"cell range {counts[0]}..{counts[-1]}; the decomposition check is refused (no rebalancing)"
    )


def grid_decomposition(x: np.ndarray, text: Sequence[Any], voice: Sequence[Any], style: Sequence[Any]) -> Decomposition:
    """Split ``z − μ = e_sem + e_voice + e_expr + e_int + e_w`` (main-effect means, interaction =
    cell mean minus the additive fit, within-cell residual) and check the covariance identity
    against the ``Σ_B`` of :func:`class_scatter`."""
    x = _as_matrix(x)
    per_cell = check_balance(text, voice, style)
    mu = x.mean(axis=0)
    between, additive = {}, np.zeros_like(x)
    for axis, lab in zip(AXES, (text, voice, style), strict=True):
        between[axis] = class_scatter(x, lab).between
        idx, n_cls = _class_index(lab, len(x))
        additive += _class_means(x, idx, n_cls)[idx] - mu
    cidx, n_cells = _class_index(
        np.array([f"{t}\x1f{v}\x1f{s}" for t, v, s in zip(text, voice, style, strict=True)]), len(x)
    )
    cell_means = _class_means(x, cidx, n_cells)[cidx]
    total, interaction, within = _cov(x - mu), _cov(cell_means - mu - additive), _cov(x - cell_means)
    diff = total - (sum(between.values()) + interaction + within)
    scale = float(np.linalg.norm(total)) or 1.0
    return Decomposition(total, between, interaction, within, float(np.linalg.norm(diff)) / scale, per_cell)


# ---- subspace leakage ------------------------------------------------------------------------


def axis_subspaces(
    x: np.ndarray,
    labels: Mapping[str, Sequence[Any]],
    m: int,
    *,
    tau: float | None = None,
    tau_rel: float = TAU_REL,
) -> dict[str, np.ndarray]:
    """Orthonormal ``(d, m)`` bases of ``U_a``: the top ``m`` generalised eigenvectors of
    ``(Σ_B^a, Σ_W^a + τ_T I)`` mapped by ``(Σ_T + τ_T I)^{1/2}``, ``τ_T = tau_rel·tr(Σ_T)/d``.

    A probe ``w`` on ``z`` is the probe ``(Σ_T + τ_T I)^{1/2} w`` on the whitened representation,
    so these are the axes' probe subspaces in one whitened space (one ridge ``τ_T`` for all axes).
    Computed as the top ``m`` left singular vectors of ``(Σ_T + τ_T I)^{-1/2} D_a`` (``Σ_B^a = D_a
    D_aᵀ``): ``(Σ_B, Σ_W + τI)`` and ``(Σ_B, Σ_T + τI)`` share eigenvectors (``λ ↦ λ/(1+λ)``)."""
    x = _as_matrix(x)
    n, d = x.shape
    mu = x.mean(axis=0)
    total = _cov(x - mu)
    tau_t = ridge(total, tau, tau_rel)
    vals, vecs = np.linalg.eigh(total + tau_t * np.eye(d))
    inv_half = (vecs / np.sqrt(vals)) @ vecs.T
    out: dict[str, np.ndarray] = {}
    for axis, lab in labels.items():
        idx, n_cls = _class_index(lab, n)
        if not 1 <= m <= min(n_cls - 1, d):
            raise AnalysisError(f"leakage: m={m} must be in 1..min(C_{axis} − 1, d) = 1..{min(n_cls - 1, d)}")
        dmat, _ = _between_factor(x, mu, idx, n_cls)
        out[axis] = np.linalg.svd(inv_half @ dmat, full_matrices=False)[0][:, :m]
    return out


@dataclass(frozen=True)
class Leakage:
    """Principal-angle cosines (descending), aggregate ``Λ`` and peak ``ℓ``."""

    cosines: np.ndarray
    aggregate: float
    peak: float


def leakage(u_a: np.ndarray, u_b: np.ndarray) -> Leakage:
    """``Λ = mean cos² θ_i`` and ``ℓ = max cos θ_i`` over the principal angles between the column
    spans of two orthonormal bases (singular values of ``U_aᵀ U_b``); ``ℓ² ≥ Λ`` is checked."""
    if u_a.shape != u_b.shape:
        raise AnalysisError(f"leakage: bases differ in shape {u_a.shape} vs {u_b.shape}")
    cos = np.clip(np.linalg.svd(u_a.T @ u_b, compute_uv=False), 0.0, 1.0)
    agg, peak = float(np.mean(cos**2)), float(cos.max())
    if peak**2 < agg - 1e-12:  # a max is never below a mean: a violation is a bug, not a result
        raise AnalysisError(f"leakage: ℓ² = {peak**2} < Λ = {agg}")
    return Leakage(cos, agg, peak)


# ---- the grid and group slices ---------------------------------------------------------------


@dataclass(frozen=True)
class Grid:
    """Embeddings ``x`` (n × d) with per-row text, voice and style labels and voice-level groups
    (``groups[attribute]`` per row, constant within each voice)."""

    x: np.ndarray
    text: np.ndarray
    voice: np.ndarray
    style: np.ndarray
    groups: dict[str, np.ndarray] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        x: np.ndarray,
        text: Sequence[Any],
        voice: Sequence[Any],
        style: Sequence[Any],
        groups: Mapping[str, Sequence[Any]] | None = None,
    ) -> Grid:
        """Validate shapes, ≥ 2 values per axis and voice-level groups."""
        x = _as_matrix(x)
        cols = {"text": text, "voice": voice, "style": style, **dict(groups or {})}
        arrays = {k: np.asarray([str(v) for v in col], dtype=object) for k, col in cols.items()}
        for name, arr in arrays.items():
            if arr.shape != (len(x),):
                raise AnalysisError(f"column {name!r} has {arr.shape[0]} entries for {len(x)} embedding rows")
        for name in ("text", "voice", "style"):
            if len(set(arrays[name])) < 2:
                raise AnalysisError(f"column {name!r} needs at least 2 distinct values for the audit")
        grid = cls(x, arrays["text"], arrays["voice"], arrays["style"], {k: arrays[k] for k in groups or {}})
        for attr, arr in grid.groups.items():
            per_voice: dict[str, set[str]] = {}
            for v, g in zip(grid.voice, arr, strict=True):
                per_voice.setdefault(v, set()).add(g)
            mixed = sorted(v for v, gs in per_voice.items() if len(gs) > 1)
            if mixed:
                raise AnalysisError(
                    f"group column {attr!r} must be constant within each voice; {len(mixed)} voice(s) "
                    f"have several values, first: {mixed[0]!r}"
                )
        return grid

    def labels(self, axis: str) -> np.ndarray:
        return {"sem": self.text, "voice": self.voice, "expr": self.style}[axis]

    def subset(self, rows: np.ndarray) -> Grid:
        return Grid(
            self.x[rows],
            self.text[rows],
            self.voice[rows],
            self.style[rows],
            {k: v[rows] for k, v in self.groups.items()},
        )

    @property
    def shape(self) -> dict[str, int]:
        return {
            "d": int(self.x.shape[1]),
            "n_rows": int(self.x.shape[0]),
            "n_texts": len(set(self.text)),
            "n_voices": len(set(self.voice)),
            "n_styles": len(set(self.style)),
        }


def group_fidelities(
    grid: Grid, group_of_row: np.ndarray, *, tau: float | None = None, tau_rel: float = TAU_REL
) -> dict[str, dict[str, float]]:
    """``F_{a|g}`` for every group ``g`` of ``group_of_row`` and axis ``a`` (each slice with its own
    default ridge); ``nan`` where the slice holds fewer than 2 classes of the axis."""
    out: dict[str, dict[str, float]] = {}
    for g in sorted(set(group_of_row)):
        rows = group_of_row == g
        labels = {a: grid.labels(a)[rows] for a in AXES}
        usable = {a: lab for a, lab in labels.items() if len(set(lab)) >= 2}
        fid = fidelities(grid.x[rows], usable, tau=tau, tau_rel=tau_rel) if usable else {}
        out[g] = {a: fid[a].value if a in fid else math.nan for a in AXES}
    return out


def spreads(by_group: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """``Γ_a = max_g F_{a|g} − min_g F_{a|g}`` per axis; ``nan`` when any group's value is ``nan``."""
    out = {}
    for axis in AXES:
        vals = [by_group[g][axis] for g in by_group]
        out[axis] = math.nan if any(math.isnan(v) for v in vals) else max(vals) - min(vals)
    return out


# ---- speaker-level permutation test ----------------------------------------------------------


def distinct_arrangements(labels: Sequence[str]) -> Iterator[tuple[str, ...]]:
    """Every distinct ordering of the multiset ``labels``, in lexicographic order."""
    counts = Counter(labels)
    keys = sorted(counts)
    current: list[str] = []

    def rec() -> Iterator[tuple[str, ...]]:
        if len(current) == len(labels):
            yield tuple(current)
            return
        for k in keys:
            if counts[k]:
                counts[k] -= 1
                current.append(k)
                yield from rec()
                current.pop()
                counts[k] += 1

    yield from rec()


def n_arrangements(labels: Sequence[str]) -> int:
    """``n! / Π_g n_g!``."""
    out = math.factorial(len(labels))
    for c in Counter(labels).values():
        out //= math.factorial(c)
    return out


@dataclass(frozen=True)
class PermutationTest:
    observed: dict[str, float]
    p_values: dict[str, float]
    method: str  # "exact" or "monte-carlo"
    n_perm: int


def permutation_test(
    grid: Grid,
    attribute: str,
    *,
    n_perm: int,
    rng: np.random.Generator,
    tau: float | None = None,
    tau_rel: float = TAU_REL,
    advance: Callable[[int], None] | None = None,
) -> PermutationTest:
    """Speaker-level permutation p-values of ``Γ_a`` for one grouping attribute.

    Null: voices are exchangeable between groups. The voices' group labels are shuffled (group
    sizes kept) and ``Γ_a`` recomputed. When the distinct arrangements number at most ``n_perm``
    all are enumerated and ``p = #{Γ* ≥ Γ_obs} / N`` (the observed arrangement included);
    otherwise ``p = (1 + #{Γ* ≥ Γ_obs}) / (n_perm + 1)`` over ``n_perm`` shuffles drawn from ``rng``.
    """
    if n_perm < 1:
        raise AnalysisError(f"permutations must be >= 1; got {n_perm}")
    vg = dict(zip(grid.voice, grid.groups[attribute], strict=True))
    voices = sorted(vg)
    labels = [vg[v] for v in voices]
    row_voice = np.searchsorted(np.asarray(voices, dtype=object), grid.voice)
    observed = spreads(group_fidelities(grid, grid.groups[attribute], tau=tau, tau_rel=tau_rel))
    exact = n_arrangements(labels) <= n_perm
    arrangements: Iterator[Sequence[str]]
    if exact:
        arrangements, total = distinct_arrangements(labels), n_arrangements(labels)
    else:
        base = np.asarray(labels, dtype=object)
        arrangements, total = (base[rng.permutation(len(base))] for _ in range(n_perm)), n_perm
    hits = dict.fromkeys(AXES, 0)
    for arr in arrangements:
        g = spreads(group_fidelities(grid, np.asarray(arr, dtype=object)[row_voice], tau=tau, tau_rel=tau_rel))
        for axis in AXES:
            hits[axis] += int(g[axis] >= observed[axis] - 1e-12)
        if advance:
            advance(1)
    p = {a: hits[a] / total if exact else (1 + hits[a]) / (n_perm + 1) for a in AXES}
    p = {a: math.nan if math.isnan(observed[a]) else p[a] for a in AXES}
    return PermutationTest(observed, p, "exact" if exact else "monte-carlo", total)


# ---- the audit ---------------------------------------------------------------------------------

Key = tuple[str, ...]


def default_m(grid: Grid) -> int:
    """One ``m`` for every pair: ``min_a (C_a − 1)`` capped at ``⌊d/2⌋`` (two subspaces can then
    be disjoint)."""
    s = grid.shape
    return max(1, min(s["n_texts"] - 1, s["n_voices"] - 1, s["n_styles"] - 1, s["d"] // 2))


def statistics(
    grid: Grid, attributes: Sequence[str], m: int, *, tau: float | None = None, tau_rel: float = TAU_REL
) -> tuple[dict[Key, float], dict[str, Fidelity]]:
    """Every point statistic, keyed ``("F", a)``, ``("F_group", attr, g, a)``, ``("Gamma", attr,
    a)``, ``("Lambda", a, b)``, ``("ell", a, b)``. ``F_a`` is ``nan`` when the rows hold one class
    of ``a`` (a jackknife replicate of a 2-text grid); Λ and ℓ are ``nan`` when ``m`` exceeds some
    axis's ``C_a − 1``. Also returns the :class:`Fidelity` records of the defined axes."""
    n_cls = {a: len(set(grid.labels(a))) for a in AXES}
    usable = {a: grid.labels(a) for a in AXES if n_cls[a] >= 2}
    fid = fidelities(grid.x, usable, tau=tau, tau_rel=tau_rel)
    out: dict[Key, float] = {("F", a): fid[a].value if a in fid else math.nan for a in AXES}
    for attr in attributes:
        by_group = group_fidelities(grid, grid.groups[attr], tau=tau, tau_rel=tau_rel)
        for g, vals in by_group.items():
            out.update({("F_group", attr, g, a): v for a, v in vals.items()})
        out.update({("Gamma", attr, a): v for a, v in spreads(by_group).items()})
    if m <= min(n_cls.values()) - 1:
        bases = axis_subspaces(grid.x, {a: grid.labels(a) for a in AXES}, m, tau=tau, tau_rel=tau_rel)
        for a, b in PAIRS:
            lk = leakage(bases[a], bases[b])
            out[("Lambda", a, b)], out[("ell", a, b)] = lk.aggregate, lk.peak
    else:
        for a, b in PAIRS:
            out[("Lambda", a, b)] = out[("ell", a, b)] = math.nan
    return out, fid


def jackknife_half_widths(
    by_text: Sequence[Mapping[Key, float]], by_voice: Sequence[Mapping[Key, float]], keys: Sequence[Key]
) -> dict[Key, tuple[float, int]]:
    """``(1.96·√(V_text + V_voice), finite replicates)`` per key, with the delete-one variance
    ``V = (k−1)/k Σ_i (θ_(i) − θ̄)²`` over each family of ``k`` leave-one-out values; ``nan``
    unless every replicate is finite."""
    out = {}
    for key in keys:
        var, finite, complete = 0.0, 0, True
        for family in (by_text, by_voice):
            vals = np.asarray([rep.get(key, math.nan) for rep in family], dtype=float)
            finite += int(np.isfinite(vals).sum())
            if len(vals) < 2 or not np.isfinite(vals).all():
                complete = False
                continue
            var += (len(vals) - 1) / len(vals) * float(np.sum((vals - vals.mean()) ** 2))
        out[key] = (Z95 * math.sqrt(var) if complete else math.nan, finite)
    return out


@dataclass(frozen=True)
class Audit:
    """Every statistic of one audit with its half-width, the permutation tests and the check."""

    shape: dict[str, int]
    attributes: tuple[str, ...]
    values: dict[Key, float]
    fidelity: dict[str, Fidelity]
    half_widths: dict[Key, tuple[float, int]]
    permutation: dict[str, PermutationTest]
    m: int
    decomposition: Decomposition | None
    decomposition_note: str
    seed: int


def audit(
    grid: Grid,
    *,
    attributes: Sequence[str] | None = None,
    m: int | None = None,
    tau: float | None = None,
    tau_rel: float = TAU_REL,
    n_perm: int = 200,
    jackknife: bool = True,
    seed: int,
    advance: Callable[[int], None] | None = None,
) -> Audit:
    """F, Λ/ℓ, F_{a|g}, Γ with permutation p-values and jackknife half-widths, and the
    decomposition check (its refusal recorded when the grid is unbalanced).

    The permutations of attribute ``A`` draw from ``derive_rng("geometry-permutation", seed, A)``.
    ``advance(1)`` is called once per permutation and per jackknife replicate."""
    attributes = tuple(grid.groups) if attributes is None else tuple(attributes)
    unknown = [a for a in attributes if a not in grid.groups]
    if unknown:
        raise AnalysisError(
            f"unknown group attribute(s) {', '.join(unknown)}; have: {', '.join(grid.groups) or '(none)'}"
        )
    m = default_m(grid) if m is None else int(m)
    values, fid = statistics(grid, attributes, m, tau=tau, tau_rel=tau_rel)
    if math.isnan(values[("Lambda", *PAIRS[0])]):
        raise AnalysisError(f"leakage: m={m} exceeds min_a (C_a − 1) = {min(f.n_classes - 1 for f in fid.values())}")
    try:
        dec: Decomposition | None = grid_decomposition(grid.x, grid.text, grid.voice, grid.style)
        note = f"balanced: {dec.rows_per_cell} row(s) per (text, voice, style) cell"
    except UnbalancedGridError as exc:
        dec, note = None, str(exc)
    perm = {
        attr: permutation_test(
            grid,
            attr,
            n_perm=n_perm,
            rng=derive_rng("geometry-permutation", seed, attr),
            tau=tau,
            tau_rel=tau_rel,
            advance=advance,
        )
        for attr in attributes
    }
    half: dict[Key, tuple[float, int]] = {}
    if jackknife:
        families = []
        for col in (grid.text, grid.voice):
            reps = []
            for unit in sorted(set(col)):
                reps.append(statistics(grid.subset(col != unit), attributes, m, tau=tau, tau_rel=tau_rel)[0])
                if advance:
                    advance(1)
            families.append(reps)
        half = jackknife_half_widths(families[0], families[1], list(values))
    return Audit(grid.shape, attributes, values, fid, half, perm, m, dec, note, seed)


def work_units(grid: Grid, attributes: Sequence[str], n_perm: int, jackknife: bool) -> int:
    """How many times :func:`audit` calls ``advance`` (for a progress bar)."""
    perms = sum(
        min(n_perm, n_arrangements([g for _, g in sorted(dict(zip(grid.voice, grid.groups[a], strict=True)).items())]))
        for a in attributes
    )
    return perms + (grid.shape["n_texts"] + grid.shape["n_voices"] if jackknife else 0)


def to_frame(result: Audit, meta: Mapping[str, Any]) -> pd.DataFrame:
    """geometry.csv rows (:data:`COLUMNS`) of one audit; ``meta`` supplies encoder,
    encoder_fingerprint, source, subset, layer and n_failed."""
    s = result.shape
    base: dict[str, Any] = dict.fromkeys(COLUMNS, "")
    base.update({k: meta.get(k, "") for k in ("encoder", "encoder_fingerprint", "source", "subset", "layer")})
    base.update(s, n_failed=int(meta.get("n_failed", 0)), seed=result.seed)
    rows: list[dict[str, Any]] = []

    def add(metric: str, key: Key | None, value: float, **kw: Any) -> None:
        row = dict(base, metric=metric, value=value, **kw)
        if key is not None and key in result.half_widths:
            hw, n = result.half_widths[key]
            row.update(ci_half_width=hw, ci_method=CI_METHOD, n_resamples=n)
        rows.append(row)

    v = result.values
    for a in AXES:
        f = result.fidelity[a]
        add("F", ("F", a), f.value, axis=a, n_classes=f.n_classes, tau=f.tau)
    chance = result.m / s["d"]
    for a, b in PAIRS:
        add("Lambda", ("Lambda", a, b), v[("Lambda", a, b)], axis=a, axis_b=b, m=result.m, chance=chance)
        add("ell", ("ell", a, b), v[("ell", a, b)], axis=a, axis_b=b, m=result.m)
    for attr in result.attributes:
        perm = result.permutation[attr]
        groups = sorted({k[2] for k in v if k[0] == "F_group" and k[1] == attr})
        for g in groups:
            for a in AXES:
                val = v[("F_group", attr, g, a)]
                note = "fewer than 2 classes in the slice" if math.isnan(val) else ""
                add("F_group", ("F_group", attr, g, a), val, axis=a, attribute=attr, group=g, note=note)
        for a in AXES:
            add(
                "Gamma",
                ("Gamma", attr, a),
                v[("Gamma", attr, a)],
                axis=a,
                attribute=attr,
                group=f"{len(groups)} groups",
                p_value=perm.p_values[a],
                p_method=perm.method,
                n_perm=perm.n_perm,
            )
    dec = result.decomposition
    add("decomposition_residual", None, dec.residual if dec else math.nan, note=result.decomposition_note)
    if dec:
        for part, share in dec.shares().items():
            add("variance_share", None, share, axis=part, note="share of tr(Σ_T)")
    return pd.DataFrame(rows, columns=list(COLUMNS))


# ---- geometry.csv for other stages (the report) -----------------------------------------------

#: Rows that identify one audit in geometry.csv.
AUDIT_KEY = ("encoder", "layer", "source", "subset")


def read_geometry(path: Path) -> pd.DataFrame:
    """Read geometry.csv (or the folder holding it), checking its columns."""
    p = Path(path)
    if p.is_dir():
        p = p / "geometry.csv"
    if not p.is_file():
        raise AnalysisError(f"geometry file {p} does not exist")
    try:
        frame = pd.read_csv(p, dtype={c: str for c in ("layer", "group", "subset", "source", "encoder", "note")})
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise AnalysisError(f"{p}: not a readable CSV ({exc})") from exc
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise AnalysisError(f"{p}: missing geometry column(s) {', '.join(missing)}")
    for c in ("encoder", "layer", "source", "subset", "attribute", "axis", "axis_b", "group", "note"):
        frame[c] = frame[c].fillna("").astype(str)
    return frame


def merge(existing: pd.DataFrame | None, new: pd.DataFrame) -> pd.DataFrame:
    """``existing`` without the audits present in ``new``, then ``new`` (one table, many encoders)."""
    if existing is None or existing.empty:
        return new.reset_index(drop=True)
    new_keys = {tuple(str(x) for x in k) for k in new[list(AUDIT_KEY)].itertuples(index=False)}
    keep = [tuple(str(x) for x in k) not in new_keys for k in existing[list(AUDIT_KEY)].itertuples(index=False)]
    return pd.concat([existing[keep], new], ignore_index=True)[list(COLUMNS)]


def _pick(sub: pd.DataFrame, metric: str, **match: str) -> pd.Series | None:
    sel = sub[sub["metric"] == metric]
    for col, val in match.items():
        sel = sel[sel[col] == val]
    return sel.iloc[0] if len(sel) else None


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per audit: F_sem/voice/expr, Λ and ℓ (sem–voice) with m and chance m/d, Γ_acc
    (accent spread of F_sem|g), Γ_gen (gender spread of F_expr|g) with p-values, half-widths
    (``*_hw``) and the decomposition residual. A statistic absent from the table stays empty."""
    rows = []
    for key, sub in frame.groupby(list(AUDIT_KEY), sort=True):
        row: dict[str, Any] = dict(zip(AUDIT_KEY, key, strict=True))

        wanted: list[tuple[str, str, dict[str, str], dict[str, str]]] = [
            *((f"F_{a}", "F", {"axis": a}, {}) for a in AXES),
            ("Lambda", "Lambda", {"axis": "sem", "axis_b": "voice"}, {"m": "m", "chance": "chance"}),
            ("ell", "ell", {"axis": "sem", "axis_b": "voice"}, {}),
            ("Gamma_acc", "Gamma", {"attribute": "accent", "axis": "sem"}, {"p_value": "p"}),
            ("Gamma_gen", "Gamma", {"attribute": "gender", "axis": "expr"}, {"p_value": "p"}),
        ]
        for name, metric, match, extra in wanted:
            r = _pick(sub, metric, **match)
            row[name] = r["value"] if r is not None else math.nan
            row[f"{name}_hw"] = r["ci_half_width"] if r is not None else math.nan
            for col, suffix in extra.items():
                row[f"{name}_{suffix}"] = r[col] if r is not None else math.nan
        r = _pick(sub, "decomposition_residual")
        row["decomposition_residual"] = r["value"] if r is not None else math.nan
        row["n_rows"] = sub["n_rows"].iloc[0]
        rows.append(row)
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class GeometrySection:
    """What a report shows for a folder's geometry.csv: the :func:`summary` table, the same as
    Markdown, and the figure when present."""

    table: pd.DataFrame
    markdown: str
    figure: Path | None


def _pm(value: Any, hw: Any, digits: int = 3) -> str:
    v, h = float(value), float(hw) if hw not in ("", None) else math.nan
    if math.isnan(v):
        return "—"
    return f"{v:.{digits}f}" + ("" if math.isnan(h) else f" ± {h:.{digits}f}")


def report_section(folder: Path) -> GeometrySection | None:
    """The geometry section of a report for ``folder`` (``None`` when it holds no geometry.csv)."""
    folder = Path(folder)
    if not (folder / "geometry.csv").is_file():
        return None
    table = summary(read_geometry(folder))
    lines = [
        "| encoder | layer | subset | F_sem | F_voice | F_expr | Λ sem–voice (m; chance) | ℓ sem–voice "
        "| Γ_acc (p) | Γ_gen (p) | decomposition residual |",
        "|" + "---|" * 11,
    ]
    for r in table.itertuples(index=False):
        lam = f"{_pm(r.Lambda, r.Lambda_hw)} ({r.Lambda_m:g}; {float(r.Lambda_chance):.3f})"
        acc = f"{_pm(r.Gamma_acc, r.Gamma_acc_hw)} (p {float(r.Gamma_acc_p):.3g})"
        gen = f"{_pm(r.Gamma_gen, r.Gamma_gen_hw)} (p {float(r.Gamma_gen_p):.3g})"
        res = (
            "refused (unbalanced grid)"
            if math.isnan(float(r.decomposition_residual))
            else f"{r.decomposition_residual:.1e}"
        )
        cells = [r.encoder, r.layer, r.subset, _pm(r.F_sem, r.F_sem_hw), _pm(r.F_voice, r.F_voice_hw)]
        cells += [_pm(r.F_expr, r.F_expr_hw), lam, _pm(r.ell, r.ell_hw), acc, gen, res]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    lines += [
        "",
        "F: axis fidelity (mean λ/(1+λ) of the regularised discriminant problem); Λ, ℓ: aggregate and "
        "peak principal-angle leakage between the sem and voice probe subspaces (chance Λ = m/d); "
        "Γ_acc: accent spread of F_sem|g, Γ_gen: gender spread of F_expr|g, p from speaker-level "
        "permutations. ± : 95 % half-widths from a two-way text/voice jackknife. On the synthetic "
        "corpus styles and age bands are prosodic proxies.",
    ]
    figure = folder / "geometry.png"
    if figure.is_file():
        lines += ["", "![geometry](geometry.png)"]
    return GeometrySection(table, "\n".join(lines) + "\n", figure if figure.is_file() else None)
