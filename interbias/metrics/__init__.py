"""The metrics as pure functions of scores and labels (no run, no files):

- :mod:`~interbias.metrics.verification`: EER (interpolated and legacy), minDCF, AUC, FRR at FAR 1 %, DET curves,
  all read off one :class:`~interbias.metrics.verification.ThresholdSweep`;
  its names are importable from here (``from interbias.metrics import eer``);
- :mod:`~interbias.metrics.llr`: Cllr, minCllr, actual DCF of log-likelihood ratios;
- :mod:`~interbias.metrics.calibration`: the score → LLR calibration (fit and apply);
- :mod:`~interbias.metrics.thresholds`: the deployment-threshold rule;
- :mod:`~interbias.metrics.score_norm`: S-norm / AS-norm arithmetic over cohort scores;
- :mod:`~interbias.metrics.sasv`, :mod:`~interbias.metrics.spoof`: SASV (a-DCF, t-EER, t-DCF) and
  countermeasure metrics;
- :mod:`~interbias.metrics.weighted`, :mod:`~interbias.metrics.weighted_llr`: the same metrics on
  weighted trials (bootstrap and permutation replicates);
- :mod:`~interbias.metrics.operating_points`: whether a run has enough non-target trials for a DCF
  operating point (p_target);
- :mod:`~interbias.metrics.registry`: one :class:`~interbias.metrics.registry.MetricSpec` per
  metric; importing this package registers every metric (``verification``, ``weighted_llr``).
"""

from interbias.metrics import verification, weighted_llr  # noqa: F401  (they register the metrics, in column order)
from interbias.metrics.verification import (
    FAR_TARGET,
    P_TARGET,
    Summary,
    ThresholdSweep,
    auc,
    auc_from_sweep,
    det_curve,
    eer,
    eer_from_sweep,
    eer_legacy,
    eer_legacy_from_sweep,
    finite_scores,
    frr_at_far1,
    frr_at_far_from_sweep,
    min_dcf,
    min_dcf_from_sweep,
    rates_at,
    summarize,
    threshold_sweep,
    validate_scores,
)

__all__ = [
    "FAR_TARGET",
    "P_TARGET",
    "Summary",
    "ThresholdSweep",
    "auc",
    "auc_from_sweep",
    "det_curve",
    "eer",
    "eer_from_sweep",
    "eer_legacy",
    "eer_legacy_from_sweep",
    "finite_scores",
    "frr_at_far1",
    "frr_at_far_from_sweep",
    "min_dcf",
    "min_dcf_from_sweep",
    "rates_at",
    "summarize",
    "threshold_sweep",
    "validate_scores",
]
