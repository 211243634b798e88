"""Domain adaptation of the scoring back-ends (interbias.metrics.backends.adapt_backend) against
direct formulas: the PLDA covariance excess as the positive part of S − T written through
T^½ (scipy's sqrtm), the adapted B and W, the re-centring, and the whitening re-estimated on
the unlabelled in-condition embeddings."""

from __future__ import annotations

import numpy as np
import scipy.linalg

from interbias.metrics.backends import ADAPT_BETWEEN, ADAPT_WITHIN, adapt_backend, fit_backend, plda_excess


def _data(seed: int, n_spk: int = 12, per: int = 8, dim: int = 6) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n_spk, dim)) * 2.0
    x = np.repeat(centres, per, axis=0) + rng.normal(size=(n_spk * per, dim)) * rng.uniform(0.5, 1.5, dim)
    return x, np.repeat([f"s{i:02d}" for i in range(n_spk)], per)


def _excess_direct(total: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """T^½ · pos(T^-½ S T^-½ − I) · T^½, pos keeping the positive eigenvalues."""
    half = np.real(scipy.linalg.sqrtm(total))
    inv_half = np.linalg.inv(half)
    vals, vecs = np.linalg.eigh(inv_half @ cov @ inv_half)
    return half @ (vecs * np.maximum(vals - 1, 0)) @ vecs.T @ half


def test_plda_excess_is_the_positive_part_of_s_minus_t() -> None:
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(5, 5)), rng.normal(size=(5, 5))
    total, cov = a @ a.T + np.eye(5), b @ b.T + 0.5 * np.eye(5)
    assert np.allclose(plda_excess(total, cov), _excess_direct(total, cov), atol=1e-9)
    assert np.allclose(plda_excess(total, 2 * total), total, atol=1e-9)  # S = 2T everywhere: S − T
    assert np.allclose(plda_excess(total, 0.5 * total), 0, atol=1e-12)  # S below T: nothing added


def test_adapted_plda_takes_the_excess_and_recentres() -> None:
    x, spk = _data(0)
    base = fit_backend("plda", x, spk)
    # in-condition data: shifted and with more variance (a degraded channel), no labels
    shifted = _data(5)[0] * 1.7 + 3.0
    adapted = adapt_backend(base, shifted)
    assert adapted.kind == "plda+adapt" and adapted.speakers == base.speakers
    assert np.array_equal(adapted.projection.matrix, base.projection.matrix)  # the LDA directions are kept
    assert np.allclose(adapted.projection.mean, shifted.mean(axis=0))
    y = adapted.projection.apply(shifted)
    y /= np.linalg.norm(y, axis=1, keepdims=True)
    p = base.plda
    excess = _excess_direct(p.between + p.within, np.cov(y, rowvar=False, bias=True))
    assert np.allclose(adapted.plda.mean, y.mean(axis=0), atol=1e-12)
    assert np.allclose(adapted.plda.between, p.between + ADAPT_BETWEEN * excess, atol=1e-9)
    assert np.allclose(adapted.plda.within, p.within + ADAPT_WITHIN * excess, atol=1e-9)
    # unlabelled: the order of the embeddings does not matter
    again = adapt_backend(base, shifted[np.random.default_rng(1).permutation(len(shifted))])
    assert np.allclose(again.plda.between, adapted.plda.between, atol=1e-10)


def test_adapted_whitening_is_reestimated_on_the_new_data() -> None:
    x, spk = _data(2)
    base = fit_backend("whiten+lnorm", x, spk)
    new = _data(9)[0] @ np.diag([3.0, 1.0, 0.5, 2.0, 1.0, 1.0]) + 1.0
    adapted = adapt_backend(base, new)
    z = adapted.projection.apply(new)
    assert adapted.kind == "whiten+lnorm+adapt"
    assert np.allclose(z.mean(axis=0), 0, atol=1e-10)
    assert np.allclose(np.cov(z, rowvar=False, bias=True), np.eye(6), atol=1e-9)
    z0 = base.projection.apply(new)
    assert not np.allclose(np.cov(z0, rowvar=False, bias=True), np.eye(6), atol=1e-2)
