"""Open-set recognition of the generating algorithm (ADD 2023 Track 3): softmax with a
threshold, and OpenMax (Bendale & Boult, CVPR 2016), over a network's activation vectors
(AVs: its logits, one per known class).

**Softmax with a threshold.** P = softmax(v); y* = argmax_j P_j (the first on ties); the
input is ``unknown`` when P_{y*} < ε, else class y*.

**OpenMax.** Fitting (the paper's Algorithm 1), per known class j: the training AVs of class j
that the network classifies as j; their mean μ_j; the distances d = ‖v − μ_j‖ (``euclidean``;
``eucos`` = ‖v − μ_j‖/200 + 1 − cos(v, μ_j), the authors' released code's choice); a Weibull
W_j(d) = 1 − exp(−(d/λ_j)^κ_j) fitted by maximum likelihood (location 0) to the ``tail_size``
largest distances. Recognition (Algorithm 2) of an AV v: rank the classes by v, descending
(stable); the class of rank r ≤ α gets the weight ω_j = 1 − ((α + 1 − r)/α)·W_j(d(v, μ_j)),
the others ω_j = 1; revised AV v̂_j = v_j·ω_j and the unknown class's v̂_0 = Σ_j v_j(1 − ω_j);
P = softmax(v̂_0, v̂_1, …, v̂_K); y* = argmax P; the input is ``unknown`` when y* = 0 or
P_{y*} < ε.

Two points where the printed paper and the authors' released code (OSDN ``compute_openmax.py``)
differ; this module follows the code: the printed line 3 of Algorithm 2 writes the rank weight
(α − i)/α (the top class revised least) and exp(−(‖x − τ_i‖/λ_i)^κ_i) (the Weibull survival
function at a distance from libMR's translation τ), where the code uses (α + 1 − i)/α and the
Weibull CDF of the distance to the class mean. libMR's shift of the tail before fitting is not
reproduced: the Weibull here has location 0 on the raw distances.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from interbias.utils.errors import ConfigError, MetricError

UNKNOWN = "unknown"
DISTANCES = ("euclidean", "eucos")


def check_open_set(train_labels: Sequence[str], known: Sequence[str], unknown: Sequence[str]) -> None:
    """Refuse fewer than two known classes, or an unknown class among the classes trained on
    (``known``) or in the training labels."""
    known = list(known)
    if len(set(known)) < 2:
        raise ConfigError(
            f"open-set recognition needs at least two known classes; got {len(set(known))} ({', '.join(known) or 'none'})"
        )
    seen = [u for u in unknown if u in set(train_labels) | set(known)]
    if seen:
        n = sum(1 for t in train_labels if t == seen[0])
        raise ConfigError(
            f"open-set recognition: the unknown class {seen[0]!r} has {n} utterance(s) in the training data; "
            "leave it out of training"
        )


@dataclass(frozen=True)
class WeibullTail:
    """W(d) = 1 − exp(−(d/scale)^shape), fitted to the ``n`` largest distances of a class."""

    shape: float
    scale: float
    n: int

    def cdf(self, d: np.ndarray) -> np.ndarray:
        d = np.maximum(np.asarray(d, dtype=np.float64), 0.0)
        return 1.0 - np.exp(-((d / self.scale) ** self.shape))


def fit_weibull(x: Sequence[float]) -> WeibullTail:
    """Maximum-likelihood Weibull (location 0) of positive values: the shape κ solves
    Σ x^κ ln x / Σ x^κ − 1/κ − mean(ln x) = 0 (Brent's method on [1e-3, 1e4]); the scale is
    λ = (mean x^κ)^(1/κ). Fewer than two distinct values, or a value ≤ 0, is an error."""
    from scipy.optimize import brentq

    x = np.asarray(x, dtype=np.float64)
    if x.size < 2 or np.unique(x).size < 2 or (x <= 0).any() or not np.isfinite(x).all():
        raise MetricError(
            f"Weibull fit: needs at least two distinct positive finite values, got {x.size} value(s) "
            f"({np.unique(x).size} distinct, min {x.min() if x.size else float('nan'):.3g})"
        )
    top = x.max()
    ly = np.log(x / top)  # the equation is scale-free; y = x/top keeps y^κ ≤ 1

    def g(k: float) -> float:
        w = np.exp(k * ly)
        return float((w * ly).sum() / w.sum() - 1.0 / k - ly.mean())

    lo, hi = 1e-3, 1e4
    if g(hi) < 0:
        raise MetricError(
            f"Weibull fit: the values are too close to each other (shape > {hi:g}); spread {np.ptp(x):.3g}"
        )
    k = brentq(g, lo, hi, xtol=1e-12, rtol=1e-12, maxiter=500)
    scale = top * float(np.mean(np.exp(k * ly))) ** (1.0 / k)
    return WeibullTail(float(k), float(scale), int(x.size))


def distances(av: np.ndarray, mean: np.ndarray, kind: str) -> np.ndarray:
    """Distance of each row of ``av`` to ``mean`` (module docstring)."""
    av = np.atleast_2d(np.asarray(av, dtype=np.float64))
    eu = np.sqrt(((av - mean) ** 2).sum(axis=1))
    match kind:
        case "euclidean":
            return eu
        case "eucos":
            cos = (av @ mean) / (np.linalg.norm(av, axis=1) * np.linalg.norm(mean))
            return eu / 200.0 + 1.0 - cos
    raise ConfigError(f"OpenMax distance {kind!r}; valid: {', '.join(DISTANCES)}")


def softmax(z: np.ndarray) -> np.ndarray:
    z = np.asarray(z, dtype=np.float64)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def check_av(av: np.ndarray, classes: Sequence[str]) -> np.ndarray:
    av = np.atleast_2d(np.asarray(av, dtype=np.float64))
    if av.shape[1] != len(classes) or not np.isfinite(av).all():
        raise MetricError(f"activation vectors: expected finite rows of {len(classes)} values, got shape {av.shape}")
    return av


@dataclass(frozen=True)
class SoftmaxThreshold:
    """Softmax with a threshold ε over the ``classes`` (module docstring)."""

    classes: tuple[str, ...]
    threshold: float

    def __post_init__(self) -> None:
        check_open_set([], self.classes, [])

    def probabilities(self, av: np.ndarray) -> np.ndarray:
        """(N, K) softmax probabilities of the known classes."""
        return softmax(check_av(av, self.classes))

    def predict(self, av: np.ndarray) -> list[str]:
        p = self.probabilities(av)
        top = p.argmax(axis=1)
        return [UNKNOWN if p[i, j] < self.threshold else self.classes[j] for i, j in enumerate(top)]


@dataclass(frozen=True)
class OpenMax:
    """A fitted OpenMax recogniser (module docstring): class means and Weibull tails."""

    classes: tuple[str, ...]
    means: np.ndarray
    tails: tuple[WeibullTail, ...]
    alpha: int
    threshold: float
    distance: str = "euclidean"

    def probabilities(self, av: np.ndarray) -> np.ndarray:
        """(N, K + 1) probabilities; column 0 is the unknown class, then ``classes`` in order."""
        av = check_av(av, self.classes)
        k = len(self.classes)
        order = np.argsort(-av, axis=1, kind="stable")
        rank_weight = np.zeros_like(av)
        for r in range(self.alpha):  # rank r + 1 gets (α + 1 − (r + 1))/α = (α − r)/α
            rank_weight[np.arange(len(av)), order[:, r]] = (self.alpha - r) / self.alpha
        w = np.stack([self.tails[j].cdf(distances(av, self.means[j], self.distance)) for j in range(k)], axis=1)
        omega = 1.0 - rank_weight * w
        revised = av * omega
        v0 = (av * (1.0 - omega)).sum(axis=1, keepdims=True)
        return softmax(np.concatenate([v0, revised], axis=1))

    def predict(self, av: np.ndarray) -> list[str]:
        p = self.probabilities(av)
        top = p.argmax(axis=1)
        return [UNKNOWN if j == 0 or p[i, j] < self.threshold else self.classes[j - 1] for i, j in enumerate(top)]


def fit_openmax(
    av: np.ndarray,
    labels: Sequence[str],
    classes: Sequence[str],
    *,
    tail_size: int = 20,
    alpha: int | None = None,
    threshold: float = 0.5,
    distance: str = "euclidean",
) -> OpenMax:
    """Fit OpenMax (module docstring) on training AVs and their labels; ``alpha`` defaults to
    the number of classes. A class without a correctly classified training AV is an error."""
    classes = tuple(classes)
    check_open_set(list(labels), classes, [])
    av = check_av(av, classes)
    labels = np.asarray([str(v) for v in labels], dtype=object)
    if len(labels) != len(av):
        raise MetricError(f"OpenMax fit: {len(av)} activation vectors and {len(labels)} labels")
    alpha = len(classes) if alpha is None else int(alpha)
    if not 1 <= alpha <= len(classes) or tail_size < 2:
        raise ConfigError(f"OpenMax: alpha must lie in [1, {len(classes)}] and tail_size be >= 2")
    if distance not in DISTANCES:
        raise ConfigError(f"OpenMax distance {distance!r}; valid: {', '.join(DISTANCES)}")
    pred = av.argmax(axis=1)
    means, tails = [], []
    for j, c in enumerate(classes):
        mine = av[(labels == c) & (pred == j)]
        if len(mine) < 2:
            raise MetricError(
                f"OpenMax fit: class {c!r} has {len(mine)} correctly classified training sample(s); needs 2 "
                "(the network has not learnt the class: train it on more of its utterances or longer, "
                "e.g. train: set: max_per_class, max_epochs)"
            )
        mu = mine.mean(axis=0)
        d = np.sort(distances(mine, mu, distance))[::-1][:tail_size]
        means.append(mu)
        tails.append(fit_weibull(d))
    return OpenMax(classes, np.stack(means), tuple(tails), alpha, float(threshold), distance)
