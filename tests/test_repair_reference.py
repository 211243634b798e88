"""The class-mean reference (interbias.repair.reference): the training voices' text and style
class means made orthogonal in their whitened space, applied to held-out rows."""

from __future__ import annotations

import numpy as np

from interbias.analysis import geometry as geo
from interbias.repair.reference import class_mean_reference, class_mean_shifts, orthogonal_step, shift_rows
from interbias.utils.seeding import derive_rng


def shared_grid(seed: int = 0, d: int = 24, n_text: int = 6, n_voice: int = 12, n_style: int = 4, noise: float = 0.05):
    """Texts load on (q0, q2), styles on (q2, q3): a planted text–style direction q2 that no
    whitening separates. Voices on (q4..q7); main effects identical for every voice (no
    interactions)."""
    rng = derive_rng("reference-test", seed)
    q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    tc = rng.standard_normal((n_text, 2)) @ q[:, [0, 2]].T
    sc = rng.standard_normal((n_style, 2)) @ q[:, [2, 3]].T
    vc = 2 * rng.standard_normal((n_voice, 4)) @ q[:, 4:8].T
    t, v, s = (a.ravel() for a in np.meshgrid(np.arange(n_text), np.arange(n_voice), np.arange(n_style), indexing="ij"))
    x = tc[t] + vc[v] + sc[s] + noise * rng.standard_normal((len(t), d))
    groups = {"gender": np.where(v % 2, "f", "m")}
    return geo.EmbeddingGrid.build(x, [f"t{i}" for i in t], [f"v{i:02d}" for i in v], [f"s{i}" for i in s], groups)


def halves(grid: geo.EmbeddingGrid) -> tuple[geo.EmbeddingGrid, geo.EmbeddingGrid]:
    voices = sorted(set(grid.voice))
    train = np.isin(grid.voice, voices[::2])
    return grid.subset(train), grid.subset(~train)


def whitener(x: np.ndarray, tau_rel: float = geo.TAU_REL) -> np.ndarray:
    xc = x - x.mean(0)
    cov = xc.T @ xc / len(x)
    vals, vecs = np.linalg.eigh(cov + tau_rel * np.trace(cov) / len(cov) * np.eye(len(cov)))
    return (vecs / np.sqrt(vals)) @ vecs.T


def class_effects(x: np.ndarray, labels: np.ndarray) -> tuple[list[str], np.ndarray]:
    classes = sorted(set(labels.tolist()))
    return classes, np.stack([x[labels == c].mean(0) for c in classes]) - x.mean(0)


def test_one_pass_makes_the_spans_orthogonal_and_keeps_each_axis_gram_against_an_independent_polar_factor() -> None:
    """Independent construction: the Löwdin basis is the polar factor U·Vᵀ of the SVD of the text
    and style bases projected out of the voice span; the shifted training means are orthogonal to
    each other and to the voice means in the training whitening and keep each axis's Gram matrix."""
    train, _ = halves(shared_grid())
    shifts = orthogonal_step(train)
    assert shifts is not None
    w = whitener(train.x)
    eff, bases = {}, {}
    for axis in geo.AXES:
        classes, e = class_effects(train.x, train.labels(axis))
        eff[axis] = (classes, e)
        bases[axis] = np.linalg.svd((e @ w).T, full_matrices=False)[0][:, : len(classes) - 1]
    outside = np.eye(len(w)) - bases["voice"] @ bases["voice"].T
    stacked = np.hstack([outside @ bases["sem"], outside @ bases["expr"]])
    u, _, vt = np.linalg.svd(stacked, full_matrices=False)
    polar = u @ vt
    start = {"sem": 0, "expr": bases["sem"].shape[1]}
    moved = {}
    for axis in ("sem", "expr"):
        classes, e = eff[axis]
        block = polar[:, start[axis] : start[axis] + bases[axis].shape[1]]
        expected = (e @ w) @ bases[axis] @ block.T @ np.linalg.inv(w) - e
        got = np.stack([shifts[axis][c] for c in classes])
        np.testing.assert_allclose(got, expected, atol=1e-9)
        moved[axis] = (e + got) @ w
        np.testing.assert_allclose(moved[axis] @ moved[axis].T, (e @ w) @ (e @ w).T, atol=1e-9)
        assert np.abs(moved[axis] @ (eff["voice"][1] @ w).T).max() < 1e-9
    assert np.abs(moved["sem"] @ moved["expr"].T).max() < 1e-9
    raw = (eff["sem"][1] @ w) @ (eff["expr"][1] @ w).T
    assert np.abs(raw).max() > 0.1  # the planted direction made them overlap


def test_repeated_passes_reach_spans_orthogonal_in_the_moved_rows_own_whitening() -> None:
    """The moved training rows' own audit (their own whitening and ridge) finds the text, voice
    and style spans orthogonal; one pass alone does not (moving the means changes the whitening)."""
    train, _ = halves(shared_grid())

    def worst(rows: np.ndarray) -> float:
        bases = geo.axis_subspaces(rows, {a: train.labels(a) for a in geo.AXES}, 2)
        return max(geo.leakage(bases[a], bases[b]).aggregate for a, b in geo.PAIRS)

    assert worst(train.x) > 0.2
    assert worst(shift_rows(train, orthogonal_step(train))) > 1e-4
    assert worst(shift_rows(train, class_mean_shifts(train))) < 1e-7


def test_already_orthogonal_axes_are_left_where_they_are() -> None:
    """Löwdin's basis is the nearest orthonormal one: spans that are orthogonal already do not move."""
    rng = derive_rng("reference-test", "orthogonal")
    q, _ = np.linalg.qr(rng.standard_normal((12, 12)))
    t, v, s = (a.ravel() for a in np.meshgrid(np.arange(3), np.arange(4), np.arange(3), indexing="ij"))
    x = rng.standard_normal((3, 12)) @ np.diag([1] * 2 + [0] * 10) @ q.T
    x = x[t] + (rng.standard_normal((4, 12)) @ np.diag([0] * 2 + [1] * 3 + [0] * 7) @ q.T)[v]
    x = x + (rng.standard_normal((3, 12)) @ np.diag([0] * 5 + [1] * 2 + [0] * 5) @ q.T)[s]
    grid = geo.EmbeddingGrid.build(
        x, [f"t{i}" for i in t], [f"v{i}" for i in v], [f"s{i}" for i in s], {"g": np.zeros(len(t))}
    )
    shifts = class_mean_shifts(grid, tau_rel=1e-6)
    assert shifts is not None
    assert max(np.abs(vec).max() for table in shifts.values() for vec in table.values()) < 1e-6


def test_held_out_rows_move_by_their_class_shifts_and_lose_the_planted_leakage() -> None:
    """Every held-out row moves by shift[text] + shift[style]; with no interactions the held-out
    text–style leakage falls from far above chance to near zero; voice rows are untouched."""
    train, held = halves(shared_grid())
    x, why = class_mean_reference(train, held)
    assert x is not None and why == ""
    shifts = class_mean_shifts(train)
    expected = held.x + np.stack(
        [shifts["sem"][t] + shifts["expr"][s] for t, s in zip(held.text, held.style, strict=True)]
    )
    np.testing.assert_allclose(x, expected, atol=1e-12)

    def sem_expr(rows: np.ndarray) -> float:
        bases = geo.axis_subspaces(rows, {a: held.labels(a) for a in geo.AXES}, 2)
        return geo.leakage(bases["sem"], bases["expr"]).aggregate

    assert sem_expr(held.x) > 0.2
    assert sem_expr(x) < 0.01


def test_a_held_out_class_without_training_rows_is_said_not_substituted() -> None:
    train, held = halves(shared_grid())
    x, why = class_mean_reference(train.subset(train.text != "t5"), held)
    assert x is None and why == "the held-out text 't5' has no training rows"


def test_spans_that_cannot_be_orthogonal_in_d_are_said() -> None:
    train, held = halves(small_grid())
    x, why = class_mean_reference(train, held)
    assert x is None and why == "the text and style class-mean spans do not fit orthogonally in d = 4"


def small_grid() -> geo.EmbeddingGrid:
    """d = 4 with 6 texts and 4 styles: the text (5) and style (3) spans cannot fit."""
    rng = derive_rng("reference-test", "small")
    t, v, s = (a.ravel() for a in np.meshgrid(np.arange(6), np.arange(4), np.arange(4), indexing="ij"))
    x = rng.standard_normal((len(t), 4))
    return geo.EmbeddingGrid.build(
        x, [f"t{i}" for i in t], [f"v{i}" for i in v], [f"s{i}" for i in s], {"g": np.zeros(len(t))}
    )
