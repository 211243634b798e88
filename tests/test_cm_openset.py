"""Open-set recognition: OpenMax against a loop restatement of the method on hand-built
activation vectors, softmax-with-threshold on hand cases, the Weibull MLE against scipy's, and
the bad-input lines."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import weibull_min

from interbias.cm.openset import (
    UNKNOWN,
    SoftmaxThreshold,
    check_open_set,
    fit_openmax,
    fit_weibull,
)
from interbias.utils.errors import ConfigError, MetricError


def toy_avs() -> tuple[np.ndarray, list[str]]:
    """Two classes of AVs: 'a' around (6, 0), 'b' around (0, 6), a fixed grid of offsets."""
    offs = np.array([[dx, dy] for dx in (-1.0, -0.5, 0.0, 0.4, 1.1) for dy in (-0.8, 0.0, 0.3, 0.9)])
    a = offs + [6.0, 0.0]
    b = offs * [0.7, 1.3] + [0.0, 6.0]
    return np.concatenate([a, b]), ["a"] * len(a) + ["b"] * len(b)


def restated_openmax(av_train, labels, classes, test, tail, alpha, eps):
    """The method restated one sample at a time, as the released code loops: means of the
    correct AVs, scipy's Weibull MLE (loc 0) on the ``tail`` largest Euclidean distances,
    alpha weights ((alpha + 1) − i)/alpha over the ranked list, the unknown score Σ v − v̂."""
    models = {}
    for j, c in enumerate(classes):
        rows = [v for v, lab in zip(av_train, labels, strict=True) if lab == c and int(np.argmax(v)) == j]
        mu = np.mean(rows, axis=0)
        d = sorted((math.dist(v, mu) for v in rows), reverse=True)[:tail]
        shape, _, scale = weibull_min.fit(d, floc=0)
        models[c] = (mu, shape, scale)
    out = []
    for v in test:
        ranked = sorted(range(len(classes)), key=lambda j: -v[j])
        weights = [0.0] * len(classes)
        for i in range(1, alpha + 1):
            weights[ranked[i - 1]] = ((alpha + 1) - i) / alpha
        scores, unknown = [], 0.0
        for j, c in enumerate(classes):
            mu, shape, scale = models[c]
            wscore = 1 - math.exp(-((math.dist(v, mu) / scale) ** shape))
            modified = v[j] * (1 - wscore * weights[j])
            scores.append(modified)
            unknown += v[j] - modified
        den = sum(math.exp(s) for s in scores) + math.exp(unknown)
        probs = [math.exp(unknown) / den] + [math.exp(s) / den for s in scores]
        best = max(range(len(probs)), key=lambda i: probs[i])
        label = UNKNOWN if best == 0 or probs[best] < eps else classes[best - 1]
        out.append((probs, label))
    return out


def test_openmax_matches_the_restated_method_and_rejects_a_far_input():
    av, labels = toy_avs()
    test = np.array([[6.0, 0.0], [0.1, 6.2], [30.0, 0.0], [3.0, 3.0], [-2.0, 9.0], [6.5, 0.5]])
    om = fit_openmax(av, labels, ["a", "b"], tail_size=8, alpha=2, threshold=0.6)
    want = restated_openmax(av, labels, ["a", "b"], test, tail=8, alpha=2, eps=0.6)
    got_p = om.probabilities(test)
    np.testing.assert_allclose(got_p, [p for p, _ in want], rtol=1e-6, atol=1e-9)
    assert om.predict(test) == [lab for _, lab in want]
    # known answers: at a class mean the class; far beyond the tail of 'a' the unknown class
    pred = om.predict(test)
    assert pred[0] == "a" and pred[1] == "b" and pred[2] == UNKNOWN
    assert got_p[2, 0] > 0.99  # (30, 0): W_a ≈ 1 moves all of v_a = 30 into v̂_0
    assert got_p[0, 1] > 0.99  # (6, 0) is the mean of 'a' up to the grid: ω_a ≈ 1


def test_openmax_alpha_one_revises_only_the_top_class():
    av, labels = toy_avs()
    om = fit_openmax(av, labels, ["a", "b"], tail_size=8, alpha=1)
    v = np.array([[9.0, 2.0]])
    p = om.probabilities(v)
    wa = om.tails[0].cdf(np.linalg.norm(v[0] - om.means[0]))
    z = np.array([9.0 * wa, 9.0 * (1 - wa), 2.0])  # v̂_0, v̂_a, v̂_b (b untouched)
    np.testing.assert_allclose(p[0], np.exp(z) / np.exp(z).sum(), rtol=1e-12)
    assert fit_openmax(av, labels, ["a", "b"], tail_size=8).alpha == 2  # default: every class


def test_weibull_mle_matches_scipy():
    x = np.array([1.2, 1.9, 2.3, 2.8, 3.1, 3.3, 4.0, 5.2, 6.1])
    w = fit_weibull(x)
    shape, _, scale = weibull_min.fit(x, floc=0)
    # scipy's numerical optimiser stops within ~1e-5; the exact root is at least as likely
    assert w.shape == pytest.approx(shape, rel=1e-4) and w.scale == pytest.approx(scale, rel=1e-4)
    assert weibull_min.logpdf(x, w.shape, 0, w.scale).sum() >= weibull_min.logpdf(x, shape, 0, scale).sum()
    mean_xk = np.mean(x**w.shape)  # the scale equation λ^κ = mean x^κ
    assert w.scale**w.shape == pytest.approx(mean_xk, rel=1e-10)
    assert w.cdf(np.array([w.scale]))[0] == pytest.approx(1 - math.exp(-1), rel=1e-12)
    with pytest.raises(MetricError, match="two distinct positive finite values"):
        fit_weibull([2.0, 2.0, 2.0])


def test_softmax_threshold_hand_cases():
    rec = SoftmaxThreshold(("a", "b", "c"), threshold=0.7)
    av = np.array([[math.log(8), 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, math.log(3), 0.0], [1.0, 1.0, 0.0]])
    # softmax rows: (0.8, 0.1, 0.1), (1/3, 1/3, 1/3), (0.2, 0.6, 0.2), (0.4223, 0.4223, 0.1554)
    np.testing.assert_allclose(rec.probabilities(av)[0], [0.8, 0.1, 0.1], rtol=1e-12)
    assert rec.predict(av) == ["a", UNKNOWN, UNKNOWN, UNKNOWN]
    assert SoftmaxThreshold(("a", "b", "c"), 0.55).predict(av) == ["a", UNKNOWN, "b", UNKNOWN]
    assert SoftmaxThreshold(("a", "b", "c"), 0.3).predict(av) == ["a", "a", "b", "a"]  # ties: the first class


def test_bad_input_one_line_each():
    with pytest.raises(ConfigError, match=r"^open-set recognition needs at least two known classes; got 1 \(a\)$"):
        SoftmaxThreshold(("a",), 0.5)
    av, labels = toy_avs()
    with pytest.raises(ConfigError, match="needs at least two known classes; got 1"):
        fit_openmax(av[:20], labels[:20], ["a"])
    with pytest.raises(
        ConfigError, match=r"^open-set recognition: the unknown class 'c' has 2 utterance\(s\) in the training data"
    ):
        check_open_set(["a", "b", "c", "c"], ["a", "b"], ["c"])
    with pytest.raises(MetricError, match="expected finite rows of 2 values"):
        fit_openmax(av, labels, ["a", "b"]).predict(np.zeros((1, 3)))
    with pytest.raises(ConfigError, match="alpha must lie in"):
        fit_openmax(av, labels, ["a", "b"], alpha=3)
