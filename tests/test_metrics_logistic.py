"""The prior-weighted logistic fit (linear, QMF calibration and fusion) against scikit-learn's
LogisticRegression without penalty: smoothed labels become two weighted copies of each trial
(one per class, weights w·t and w·(1 − t)), the prior shift logit π is taken off the intercept."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from interbias.metrics.calibration import fit_linear, objective
from interbias.metrics.logistic import fit_logistic, targets_and_weights
from interbias.utils.errors import MetricError
from interbias.utils.seeding import derive_rng


def data(seed: str, n_t: int = 300, n_n: int = 900, k: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = derive_rng("logistic-test", seed)
    lab = np.r_[np.ones(n_t, bool), np.zeros(n_n, bool)]
    score = np.where(lab, 1.5, -0.5) + rng.normal(0, 1.0, lab.size)
    quality = rng.normal([2.0, 10.0, 20.0][: k - 1], [0.5, 5.0, 3.0][: k - 1], (lab.size, k - 1))
    if k > 1:
        score = score * (1 + 0.05 * quality[:, 0])  # quality changes the score scale
    return np.column_stack([score, quality]), lab


def sklearn_fit(x: np.ndarray, lab: np.ndarray, prior: float, smooth: bool) -> tuple[np.ndarray, float]:
    t, w = targets_and_weights(lab, prior, smooth)
    xx = np.vstack([x, x])
    yy = np.r_[np.ones(len(x)), np.zeros(len(x))]
    sw = np.r_[w * t, w * (1 - t)]
    keep = sw > 0
    model = LogisticRegression(C=np.inf, solver="newton-cholesky", tol=1e-14, max_iter=1000)
    model.fit(xx[keep], yy[keep], sample_weight=sw[keep] * len(x))
    return model.coef_[0], float(model.intercept_[0]) - math.log(prior / (1 - prior))


@pytest.mark.parametrize(("prior", "smooth"), [(0.5, True), (0.5, False), (0.05, True), (0.3, False)])
def test_fit_equals_sklearn_logistic_regression(prior: float, smooth: bool) -> None:
    x, lab = data(f"{prior}{smooth}")
    fit = fit_logistic(x, lab, ("score", "a", "b"), prior=prior, smooth=smooth)
    coef, intercept = sklearn_fit(x, lab, prior, smooth)
    assert np.max(np.abs(np.array(fit.weights) - coef)) <= 1e-6
    assert abs(fit.offset - intercept) <= 1e-6
    assert np.max(np.abs(fit.llr(x) - (x @ coef + intercept))) <= 1e-6


def test_linear_calibration_is_the_one_feature_fit() -> None:
    x, lab = data("lin", k=1)
    cal = fit_linear(x[:, 0], lab)
    coef, intercept = sklearn_fit(x, lab, 0.5, True)
    assert abs(cal.slope - coef[0]) <= 1e-6 and abs(cal.offset - intercept) <= 1e-6
    # and it is the minimum of the directly written objective
    best = objective(cal.slope, cal.offset, x[:, 0], lab)
    assert best <= objective(cal.slope * 1.001, cal.offset, x[:, 0], lab)
    assert best <= objective(cal.slope, cal.offset + 1e-3, x[:, 0], lab)


def test_constant_feature_is_refused_in_one_line() -> None:
    x, lab = data("const")
    x[:, 2] = 4.0
    with pytest.raises(MetricError, match=r"^q_snr_min is the same on every fitting trial"):
        fit_logistic(x, lab, ("score", "q_duration_min", "q_snr_min"))
