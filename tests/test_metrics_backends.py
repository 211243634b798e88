"""Scoring back-ends (interbias.metrics.backends) against independent references: PLDA against
explicit Gaussian log-densities (scipy), LDA against scikit-learn."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import multivariate_normal
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

from interbias.metrics.backends import (
    FittedBackend,
    TwoCovPlda,
    backend_scores,
    fit_backend,
    fit_plda,
)
from interbias.utils.errors import MetricError


def _data(seed: int, n_spk: int = 12, per: int = 8, dim: int = 6) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n_spk, dim)) * 2.0
    x = np.repeat(centres, per, axis=0) + rng.normal(size=(n_spk * per, dim)) * rng.uniform(0.5, 1.5, dim)
    spk = np.repeat([f"s{i:02d}" for i in range(n_spk)], per)
    return x, spk


def _reference_llr(mean: np.ndarray, b: np.ndarray, w: np.ndarray, e: np.ndarray, t: np.ndarray) -> float:
    """Two-covariance PLDA written from its definition: same speaker, (e, t) jointly Gaussian
    with cross-covariance B; different speakers, independent with covariance B + W."""
    total = b + w
    joint = np.block([[total, b], [b, total]])
    same = multivariate_normal(np.concatenate([mean, mean]), joint).logpdf(np.concatenate([e, t]))
    diff = multivariate_normal(mean, total).logpdf(e) + multivariate_normal(mean, total).logpdf(t)
    return float(same - diff)


def test_plda_llr_matches_explicit_gaussian_densities() -> None:
    rng = np.random.default_rng(7)
    k = 5
    a = rng.normal(size=(k, k))
    b = a @ a.T + 0.1 * np.eye(k)
    c = rng.normal(size=(k, k))
    w = c @ c.T + 0.5 * np.eye(k)
    mean = rng.normal(size=k)
    plda = TwoCovPlda.from_covariances(mean, b, w)
    enrol, test = rng.normal(size=(7, k)) * 2, rng.normal(size=(9, k)) * 2
    ei, ti = rng.integers(0, 7, 40), rng.integers(0, 9, 40)
    got = plda.llr(enrol, test, ei, ti)
    want = [_reference_llr(mean, b, w, enrol[i], test[j]) for i, j in zip(ei, ti, strict=True)]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)


def test_fitted_plda_scores_match_reference_and_separate_speakers() -> None:
    x, spk = _data(3)
    be = fit_backend("plda", x, spk)
    assert be.plda is not None
    feats = be.features(x)
    ei, ti = np.arange(0, len(x) - 1), np.arange(1, len(x))
    got = backend_scores(be, feats, feats, ei, ti)
    p = be.plda
    want = [_reference_llr(p.mean, p.between, p.within, feats[i], feats[j]) for i, j in zip(ei, ti, strict=True)]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)
    same = spk[ei] == spk[ti]
    assert got[same].mean() > got[~same].mean()


def test_fit_plda_moments() -> None:
    x, spk = _data(5)
    codes = np.unique(spk, return_inverse=True)[1]
    p = fit_plda(x, codes)
    means = np.stack([x[spk == s].mean(axis=0) for s in np.unique(spk)])
    np.testing.assert_allclose(p.mean, means.mean(axis=0))
    np.testing.assert_allclose(p.between, np.cov(means, rowvar=False, bias=True), atol=1e-12)
    resid = x - means[codes]
    np.testing.assert_allclose(p.within, np.cov(resid, rowvar=False, bias=True), atol=1e-12)


def _cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def test_lda_matches_scikit_learn() -> None:
    x, spk = _data(11, n_spk=9, per=10, dim=6)
    be = fit_backend("lda+cosine", x, spk)
    assert be.projection is not None and be.pca_dim is None
    k = be.projection.matrix.shape[1]
    assert k == 6  # min(D, S - 1)
    ref = LinearDiscriminantAnalysis(solver="eigen").fit(x, spk)
    mine = be.projection.apply(x)
    theirs = (x - x.mean(axis=0)) @ ref.scalings_[:, :k]
    signs = np.sign(np.sum(mine * theirs, axis=0))
    np.testing.assert_allclose(mine, theirs * signs, atol=1e-8)
    feats = be.features(x).astype(np.float64)
    ei, ti = np.arange(0, len(x) - 1), np.arange(1, len(x))
    np.testing.assert_allclose(np.sum(feats[ei] * feats[ti], axis=1), _cos(theirs[ei], theirs[ti]), atol=1e-6)


def test_lda_below_full_rank_takes_a_pca_step() -> None:
    x, spk = _data(13, n_spk=4, per=3, dim=20)  # 12 utterances, within rank 8 < 20
    be = fit_backend("lda+cosine", x, spk)
    assert be.pca_dim == 8 and be.projection is not None and be.projection.matrix.shape == (20, 3)
    assert be.record()["pca_dim"] == 8


def test_whitening_whitens() -> None:
    x, spk = _data(17)
    be = fit_backend("whiten+lnorm", x, spk)
    assert be.projection is not None
    z = be.projection.apply(x)
    np.testing.assert_allclose(np.cov(z, rowvar=False, bias=True), np.eye(x.shape[1]), atol=1e-9)
    np.testing.assert_allclose(np.linalg.norm(be.features(x), axis=1), 1.0, atol=1e-6)


@pytest.mark.parametrize("kind", ["whiten+lnorm", "lda+cosine", "plda"])
def test_too_few_speakers_is_one_clear_error(kind: str) -> None:
    x, spk = _data(19, n_spk=2, per=5)
    with pytest.raises(MetricError, match="at least 3 speakers"):
        fit_backend(kind, x, spk)


def test_singular_within_scatter_is_an_error() -> None:
    x, spk = _data(23, n_spk=4, per=5, dim=6)
    x[:, 5] = x[:, 0]  # a copied dimension: every covariance is singular
    with pytest.raises(MetricError, match="singular"):
        fit_backend("lda+cosine", x, spk)


def test_digest_follows_the_parameters() -> None:
    x, spk = _data(29)
    a, b = fit_backend("plda", x, spk), fit_backend("plda", x, spk)
    assert a.sha256() == b.sha256()
    c = fit_backend("plda", x[:-1], spk[:-1])
    assert c.sha256() != a.sha256()
    assert isinstance(fit_backend("cosine", x, spk), FittedBackend)
    assert fit_backend("cosine", x, spk).arrays() == {}
