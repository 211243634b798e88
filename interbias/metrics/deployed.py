"""The deployed operating point: the score threshold a run's dev-fitted calibration puts at an
operating point's prior, and each group's error rates there.

With the shared linear calibration llr = a·score + b (fitted on the reference condition's dev
trials, :mod:`interbias.run.calibrate`) and the point's Bayes threshold η = log(C_fa·(1 − p) /
(C_miss·p)), a trial is accepted when llr ≥ η, i.e. score ≥ (η − b) / a (a > 0). FAR = P(accept
| non-target), FRR = P(reject | target) — the decisions ``act_dcf`` scores — and
Cdet = C_miss·p·FRR + C_fa·(1 − p)·FAR (unnormalised; ``act_dcf`` is Cdet / min(C_miss·p,
C_fa·(1 − p))).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from interbias.metrics.llr import CostPoint
from interbias.utils.errors import MetricError


@dataclass(frozen=True)
class DeployedPoint:
    """A group's decisions at the deployed threshold."""

    threshold: float
    far: float
    frr: float
    cdet: float


def deployed_threshold(slope: float, offset: float, point: CostPoint) -> float:
    """The score at which the calibrated llr reaches ``point``'s Bayes threshold."""
    if not slope > 0:
        raise MetricError(f"calibration slope {slope:g} is not positive: no score threshold")
    return (point.bayes_threshold - offset) / slope


def deployed_point(
    scores: np.ndarray, labels: np.ndarray, slope: float, offset: float, point: CostPoint
) -> DeployedPoint:
    """FAR, FRR and Cdet of the decisions llr ≥ η (NaN rates where a class has no trials)."""
    s = np.asarray(scores, np.float64)
    lab = np.asarray(labels).astype(bool)
    accept = slope * s + offset >= point.bayes_threshold
    far = float(accept[~lab].mean()) if (~lab).any() else math.nan
    frr = float((~accept[lab]).mean()) if lab.any() else math.nan
    cdet = point.c_miss * point.p_target * frr + point.c_fa * (1 - point.p_target) * far
    return DeployedPoint(deployed_threshold(slope, offset, point), far, frr, cdet)
