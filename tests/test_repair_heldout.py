"""Held-out figures of a repair (``interbias.repair.heldout``) against direct computations."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from interbias.analysis import geometry as geo
from interbias.repair.heldout import clean_eer, heldout_figures, mean_leakage
from interbias.utils.seeding import derive_rng


def small_grid(seed: int = 0, d: int = 8) -> geo.EmbeddingGrid:
    rng = derive_rng("heldout-test", seed)
    t, v, s = (a.ravel() for a in np.meshgrid(np.arange(4), np.arange(4), np.arange(3), indexing="ij"))
    x = rng.standard_normal((4, d))[t] + 2 * rng.standard_normal((4, d))[v] + rng.standard_normal((3, d))[s]
    x += 0.5 * rng.standard_normal((len(t), d))
    return geo.EmbeddingGrid.build(x, [f"t{i}" for i in t], [f"v{i}" for i in v], [f"s{i}" for i in s], {})


def test_clean_eer_against_brute_force() -> None:
    """Every pair with different texts, counted by loops; the EER where the miss and false-alarm
    rates cross, found by scanning every score as a threshold."""
    grid = small_grid()
    unit = grid.x / np.linalg.norm(grid.x, axis=1, keepdims=True)
    tgt, non = [], []
    for i, j in itertools.combinations(range(len(unit)), 2):
        if grid.text[i] != grid.text[j]:
            (tgt if grid.voice[i] == grid.voice[j] else non).append(float(unit[i] @ unit[j]))
    tgt, non = np.array(tgt), np.array(non)
    assert len(tgt) == 4 * (12 * 11 // 2 - 4 * 3) and len(tgt) + len(non) == 48 * 47 // 2 - 4 * (12 * 11 // 2)
    gaps = [
        (abs((tgt < th).mean() - (non >= th).mean()), (tgt < th).mean(), (non >= th).mean()) for th in np.r_[tgt, non]
    ]
    best = min(gaps)
    got = clean_eer(grid, grid.x)
    assert min(best[1], best[2]) - 1e-9 <= got <= max(best[1], best[2]) + 1e-9


def test_mean_leakage_is_the_mean_of_the_audit_pairs_and_nan_when_m_is_too_large() -> None:
    grid = small_grid()
    bases = geo.axis_subspaces(grid.x, {a: grid.labels(a) for a in geo.AXES}, 2)
    want = np.mean([geo.leakage(bases[a], bases[b]).aggregate for a, b in geo.PAIRS])
    assert mean_leakage(grid, grid.x, 2) == pytest.approx(want, abs=1e-12)
    assert np.isnan(mean_leakage(grid, grid.x, 3))  # three styles: C − 1 = 2


def test_an_unchanged_variant_has_zero_change_and_zero_paired_half_width() -> None:
    grid = small_grid()
    twisted = np.tanh(grid.x)  # a non-linear map changes Λ
    figs = heldout_figures(grid, {"raw": grid.x, "same": grid.x.copy(), "twisted": twisted})
    assert figs["same"].delta == 0 and figs["same"].delta_hw == 0
    assert figs["raw"].lambda_mean == pytest.approx(mean_leakage(grid, grid.x, geo.default_m(grid)))
    assert figs["twisted"].delta == pytest.approx(figs["twisted"].lambda_mean - figs["raw"].lambda_mean)
    assert figs["twisted"].delta_hw > 0 and figs["raw"].lambda_mean_hw > 0
    assert figs["same"].eer_clean == figs["raw"].eer_clean
