"""Linear algebra of the geometry audit: class scatter, the regularised generalised
eigenproblem, axis fidelity, the balanced-grid decomposition, subspace leakage, and the
:class:`EmbeddingGrid` with its group slices (formulas: :mod:`interbias.analysis.geometry`)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.linalg import solve_triangular

from interbias.utils.errors import AnalysisError

AXES = ("sem", "voice", "expr")
#: The label column that partitions the grid into classes along each axis.
AXIS_COLUMN = {"sem": "text", "voice": "voice", "expr": "style"}
PAIRS = (("sem", "voice"), ("sem", "expr"), ("voice", "expr"))
TAU_REL = 1e-3


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
class EmbeddingGrid:
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
    ) -> EmbeddingGrid:
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

    def subset(self, rows: np.ndarray) -> EmbeddingGrid:
        return EmbeddingGrid(
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
    grid: EmbeddingGrid, group_of_row: np.ndarray, *, tau: float | None = None, tau_rel: float = TAU_REL
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
