"""The class-mean reference: how far the held-out mean leakage falls when the training voices'
text and style class means are made exactly orthogonal and that correction is applied to voices
it never saw — the part of the held-out leakage that the training voices' class means account for.

Construction, in the training rows' whitened space ``W = (Σ_T + τI)^{-1/2}`` (``τ`` the audit's
ridge ``tau_rel·tr Σ_T / d``):

1. main effects ``E_a`` (class means minus the grand mean) of text (sem), voice and style
   (expr) on the training rows, whitened ``Ẽ_a = E_a W``, and orthonormal bases ``Q_a`` of their
   spans (rank ``r_a = C_a − 1``; the voice basis keeps its top ``min(r_voice, d − r_sem −
   r_expr)`` singular directions when the three spans do not fit in ``d``);
2. the voice span stays (held-out voices bring their own); the text and style bases are
   projected out of it, ``P = I − Q_voice Q_voiceᵀ``, and orthogonalised symmetrically (Löwdin):
   ``B = [P Q_sem  P Q_expr]``, ``B' = B (BᵀB)^{-1/2}`` (the orthonormal basis nearest to ``B``),
   cut into blocks ``Q'_sem``, ``Q'_expr``;
3. new text and style effects ``E'_a = Ẽ_a Q_a Q'_aᵀ W^{-1}``: each axis keeps the Gram matrix of
   its whitened class means, and the three spans become mutually orthogonal; since moving the
   means changes the rows' own whitening, steps 1–3 repeat on the moved training rows until
   they stop moving (the audit of the moved training rows then finds the spans orthogonal);
4. every held-out row moves by the summed shifts of its text and its style.

The held-out rows keep their own voices, interactions and noise, so their Λ̄ after the shift is
the leakage left once the axis geometry of the training voices' class means is corrected
exactly. It uses the held-out rows' labels, so it is a yardstick, not a repair and not a bound: a
non-linear adapter can also change the voices' interactions and may move held-out leakage further
(on mfcc-stats it does). A reference change within its paired half-width says that the held-out
leakage the training voices' class means explain is within resampling noise on this grid.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from interbias.analysis import geometry as geo
from interbias.analysis.geometry import TAU_REL
from interbias.analysis.geometry.disparity import whitening


def _effects(x: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, dict[str, int]]:
    """Class means minus the grand mean (one row per class, classes sorted) and the class index."""
    classes = sorted(set(labels.tolist()))
    index = {c: i for i, c in enumerate(classes)}
    mu = x.mean(axis=0)
    means = np.stack([x[labels == c].mean(axis=0) for c in classes]) - mu
    return means, index


def _span(whitened: np.ndarray, rank: int) -> np.ndarray:
    """Orthonormal ``(d, rank)`` basis of the top ``rank`` directions of the rows' span."""
    return np.linalg.svd(whitened.T, full_matrices=False)[0][:, :rank]


def orthogonal_step(train: geo.EmbeddingGrid, tau_rel: float = TAU_REL) -> dict[str, dict[str, np.ndarray]] | None:
    """One pass of steps 1–3 (module docstring): per class of text (``sem``) and style (``expr``),
    the shift ``E'_a − E_a`` in embedding units; ``None`` when the spans do not fit in ``d``."""
    x = np.asarray(train.x, dtype=float)
    d = x.shape[1]
    w_minus = whitening(x, tau_rel=tau_rel)
    effects, bases, index = {}, {}, {}
    for axis in geo.AXES:
        effects[axis], index[axis] = _effects(x, train.labels(axis))
    ranks = {a: len(index[a]) - 1 for a in geo.AXES}
    ranks["voice"] = min(ranks["voice"], d - ranks["sem"] - ranks["expr"])
    if ranks["voice"] < 0 or min(ranks["sem"], ranks["expr"]) < 1:
        return None
    for axis in geo.AXES:
        bases[axis] = _span(effects[axis] @ w_minus, ranks[axis])
    outside_voice = np.eye(d) - bases["voice"] @ bases["voice"].T
    stacked = np.hstack([outside_voice @ bases[a] for a in ("sem", "expr")])
    g_vals, g_vecs = np.linalg.eigh(stacked.T @ stacked)
    if g_vals.min() <= 1e-10:  # the spans are linearly dependent: no orthogonal arrangement near them
        return None
    lowdin = stacked @ (g_vecs / np.sqrt(g_vals)) @ g_vecs.T
    blocks = {"sem": lowdin[:, : ranks["sem"]], "expr": lowdin[:, ranks["sem"] :]}
    out: dict[str, dict[str, np.ndarray]] = {}
    for axis, block in blocks.items():
        moved = np.linalg.solve(w_minus, ((effects[axis] @ w_minus) @ bases[axis] @ block.T).T).T  # W symmetric
        out[axis] = {c: moved[i] - effects[axis][i] for c, i in index[axis].items()}
    return out


def shift_rows(grid: geo.EmbeddingGrid, shifts: dict[str, dict[str, np.ndarray]]) -> np.ndarray:
    """The rows of ``grid`` moved by ``shifts[sem][text] + shifts[expr][style]``."""
    x = np.asarray(grid.x, dtype=float).copy()
    for axis, table in shifts.items():
        labels = grid.labels(axis)
        for cls, shift in table.items():
            x[labels == cls] += shift
    return x


def class_mean_shifts(
    train: geo.EmbeddingGrid, tau_rel: float = TAU_REL, *, max_passes: int = 200, tol: float = 1e-8
) -> dict[str, dict[str, np.ndarray]] | None:
    """The text and style shifts of step 3, repeated on the shifted training rows (whose own
    whitening changes with each shift) until a pass moves no class mean by more than ``tol`` of
    the rows' RMS norm (or ``max_passes``); ``None`` when the spans do not fit in ``d``."""
    total: dict[str, dict[str, np.ndarray]] = {}
    grid = train
    scale = float(np.sqrt(np.mean(np.sum(np.asarray(train.x, dtype=float) ** 2, axis=1))))
    for _ in range(max_passes):
        step = orthogonal_step(grid, tau_rel)
        if step is None:
            return None
        for axis, table in step.items():
            acc = total.setdefault(axis, {})
            for cls, vec in table.items():
                acc[cls] = acc.get(cls, 0.0) + vec
        grid = replace(train, x=shift_rows(train, total))
        if max(float(np.abs(v).max()) for table in step.values() for v in table.values()) <= tol * scale:
            break
    return total


def class_mean_reference(
    train: geo.EmbeddingGrid, held: geo.EmbeddingGrid, tau_rel: float = TAU_REL
) -> tuple[np.ndarray | None, str]:
    """The held-out rows moved by the training voices' corrected text and style means (step 4),
    or ``None`` with the reason when the reference cannot be formed (a held-out text or style
    the training rows lack, or spans that do not fit in ``d``)."""
    for axis, name in (("sem", "text"), ("expr", "style")):
        absent = sorted(set(held.labels(axis).tolist()) - set(train.labels(axis).tolist()))
        if absent:
            return None, f"the held-out {name} {absent[0]!r} has no training rows"
    shifts = class_mean_shifts(train, tau_rel)
    if shifts is None:
        return None, f"the text and style class-mean spans do not fit orthogonally in d = {train.x.shape[1]}"
    return shift_rows(held, shifts), ""
