"""Prior-weighted linear logistic regression (BOSARIS style): the fit behind linear and
quality-aware (QMF) calibration and linear score fusion.

For features x_i (one row per trial) and labels, the fit finds weights w and offset b of
llr = w·x + b minimising

    J(w, b) = π·mean_tar CE(t_tar, σ(w·x + b + logit π)) + (1 − π)·mean_non CE(t_non, σ(w·x + b + logit π)),
    CE(t, q) = −t·log q − (1 − t)·log(1 − q),

with Platt's (1999) smoothed labels t_tar = (N_tar + 1)/(N_tar + 2), t_non = 1/(N_non + 2)
(``smooth=False``: hard labels 1 and 0). At the default prior π = ½ this is the objective of
:mod:`interbias.metrics.calibration`. J is convex; Newton's method with step halving on
standardised features finds its minimum (deterministic, no random start; no penalty).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from interbias.utils.errors import MetricError

_MAX_ITER = 200
_TOL = 1e-12


@dataclass(frozen=True)
class LogisticFit:
    """llr = weights·x + offset (natural-log LLR); ``names`` label the feature columns."""

    names: tuple[str, ...]
    weights: tuple[float, ...]
    offset: float
    prior: float
    n_target: int
    n_nontarget: int

    def llr(self, features: np.ndarray) -> np.ndarray:
        x = np.asarray(features, dtype=np.float64).reshape(-1, len(self.weights))
        return x @ np.asarray(self.weights) + self.offset

    def record(self) -> dict[str, object]:
        return {
            "features": list(self.names),
            "weights": list(self.weights),
            "offset": self.offset,
            "prior": self.prior,
            "n_target": self.n_target,
            "n_nontarget": self.n_nontarget,
        }


def targets_and_weights(labels: np.ndarray, prior: float, smooth: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per trial, the (smoothed) target t and the weight π/N_tar or (1 − π)/N_non of J."""
    lab = np.asarray(labels).astype(bool)
    n_t, n_n = int(lab.sum()), int((~lab).sum())
    if smooth:
        t = np.where(lab, (n_t + 1) / (n_t + 2), 1 / (n_n + 2))
    else:
        t = lab.astype(np.float64)
    return t, np.where(lab, prior / n_t, (1 - prior) / n_n)


def fit_logistic(
    features: np.ndarray,
    labels: np.ndarray,
    names: tuple[str, ...] | list[str],
    *,
    prior: float = 0.5,
    smooth: bool = True,
) -> LogisticFit:
    """Fit llr = w·x + b minimising J of the module doc. ``features``: (N, K) float; ``labels``:
    N booleans with both classes. :class:`MetricError` when a feature is constant (its weight
    and the offset are not identifiable) or the fit does not reach finite values."""
    x = np.asarray(features, dtype=np.float64)
    x = x.reshape(len(x), -1)
    lab = np.asarray(labels).astype(bool)
    n_t, n_n = int(lab.sum()), int((~lab).sum())
    if not n_t or not n_n:
        raise MetricError("a logistic fit needs target and non-target trials")
    if not 0.0 < prior < 1.0:
        raise MetricError(f"prior {prior} is outside (0, 1)")
    # per column as a contiguous vector: with one feature, the same rounding as the linear
    # calibration always had (numpy sums an axis of a 2-D array in another order)
    cols = [np.ascontiguousarray(x[:, j]) for j in range(x.shape[1])]
    mu, sd = np.array([c.mean() for c in cols]), np.array([c.std() for c in cols])
    for name, s in zip(names, sd, strict=True):
        if s == 0.0:
            raise MetricError(f"{name} is the same on every fitting trial: no weight can be fitted for it")
    design = np.column_stack([(x - mu) / sd, np.ones(len(x))])
    t, w = targets_and_weights(lab, prior, smooth)
    shift = math.log(prior / (1 - prior))

    def loss(theta: np.ndarray) -> float:
        z = design @ theta + shift
        return float(np.sum(w * (t * np.logaddexp(0.0, -z) + (1 - t) * np.logaddexp(0.0, z))))

    k = design.shape[1]
    theta = np.zeros(k)
    current = loss(theta)
    for _ in range(_MAX_ITER):
        q = 0.5 * (1.0 + np.tanh(0.5 * (design @ theta + shift)))  # σ(z), overflow-free
        grad = design.T @ (w * (q - t))
        hess = (design * (w * q * (1 - q))[:, None]).T @ design
        step = np.linalg.solve(hess + 1e-300 * np.eye(k), grad)
        size = 1.0
        while size > 1e-10:
            candidate = theta - size * step
            value = loss(candidate)
            if value <= current:
                break
            size *= 0.5
        else:
            break
        done = abs(current - value) <= _TOL * max(1.0, abs(current))
        theta, current = candidate, value
        if done or float(np.abs(grad).max()) < _TOL:
            break
    weights = theta[:-1] / sd
    offset = float(theta[-1] - sum(theta[j] * mu[j] / sd[j] for j in range(len(sd))))
    if not (np.isfinite(weights).all() and math.isfinite(offset)):
        raise MetricError("the logistic fit did not converge to finite weights")
    return LogisticFit(tuple(names), tuple(float(v) for v in weights), offset, prior, n_t, n_n)
