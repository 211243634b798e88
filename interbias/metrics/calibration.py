"""Linear logistic calibration: raw scores -> log-likelihood ratios, llr = a·s + b.

The fit minimises the prior-weighted cross-entropy of BOSARIS's linear calibration at prior
½ (so a·s + b is an LLR, not a posterior log-odds):

    J(a, b) = ½·mean_tar CE(t_tar, σ(a·s + b)) + ½·mean_non CE(t_non, σ(a·s + b)),
    CE(t, q) = −t·log q − (1 − t)·log(1 − q),

with Platt's (1999) smoothed labels t_tar = (N_tar + 1)/(N_tar + 2), t_non = 1/(N_non + 2),
which keep (a, b) finite when the calibration trials are perfectly separated. J is convex;
Newton's method with step halving on standardised scores finds its minimum (deterministic,
no random start; :func:`interbias.metrics.logistic.fit_logistic`). A slope a <= 0 (targets not scoring higher) is refused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from interbias.metrics.logistic import fit_logistic
from interbias.metrics.verification import validate_scores
from interbias.utils.errors import MetricError


@dataclass(frozen=True)
class LinearCalibration:
    """llr = slope·score + offset (natural-log LLR), fitted on ``n_target`` + ``n_nontarget`` trials."""

    slope: float
    offset: float
    n_target: int
    n_nontarget: int

    def llr(self, scores: np.ndarray) -> np.ndarray:
        return self.slope * np.asarray(scores, dtype=np.float64) + self.offset

    def score_at(self, llr: float) -> float:
        """The raw score whose calibrated llr is ``llr`` (a decision threshold in score units)."""
        return (llr - self.offset) / self.slope

    def record(self) -> dict[str, float | int]:
        return {"slope": self.slope, "offset": self.offset, "n_target": self.n_target, "n_nontarget": self.n_nontarget}


def objective(a: float, b: float, scores: np.ndarray, labels: np.ndarray) -> float:
    """J(a, b) of the module doc (nats), written directly: the reference the fit is tested against."""
    lab = labels.astype(bool)
    n_t, n_n = int(lab.sum()), int((~lab).sum())
    z = a * scores + b
    t = np.where(lab, (n_t + 1) / (n_t + 2), 1 / (n_n + 2))
    ce = t * np.logaddexp(0.0, -z) + (1 - t) * np.logaddexp(0.0, z)
    return float(0.5 * ce[lab].mean() + 0.5 * ce[~lab].mean())


def fit_linear(scores: object, labels: object) -> LinearCalibration:
    """Fit llr = a·s + b (see the module doc); :class:`MetricError` when the scores are all
    equal or the fitted slope is not positive."""
    s, lab = validate_scores(scores, labels)
    if float(s.std()) == 0.0:
        raise MetricError("calibration trials all have the same score: no slope can be fitted")
    fit = fit_logistic(s[:, None], lab, ("score",))
    slope, offset = fit.weights[0], fit.offset
    if not slope > 0 or not math.isfinite(offset):
        raise MetricError(f"the calibration slope is {slope:.4g}: target trials do not score higher than non-targets")
    return LinearCalibration(slope, offset, fit.n_target, fit.n_nontarget)
