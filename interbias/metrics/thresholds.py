"""The dev-threshold rule of the fairness report (``eer``, ``fixed:X``, ``far:X``): parsed by the
experiment schema (``fairness.threshold``) and applied by :mod:`interbias.analysis.groups.fairness`."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from interbias.metrics import verification as metrics
from interbias.utils.errors import AnalysisError


@dataclass(frozen=True)
class ThresholdRule:
    """How the deployment threshold is chosen: ``eer``, ``fixed:X`` or ``far:X``."""

    kind: Literal["eer", "fixed", "far"]
    value: float | None = None

    @classmethod
    def parse(cls, text: str) -> ThresholdRule:
        t = str(text).strip()
        if t == "eer":
            return cls("eer")
        rule, _, raw = t.partition(":")
        if rule in ("fixed", "far") and raw:
            try:
                value = float(raw)
            except ValueError:
                value = math.nan
            if not math.isfinite(value):
                raise AnalysisError(f"threshold rule {t!r}: {raw!r} is not a finite number")
            if rule == "far" and not 0 <= value < 1:
                raise AnalysisError(f"threshold rule {t!r}: the target FAR must be in [0, 1)")
            return cls(rule, value)  # type: ignore[arg-type]
        raise AnalysisError(f"threshold rule {t!r}: valid: eer, fixed:X, far:X")

    @property
    def from_dev(self) -> bool:
        """Whether the threshold is chosen from development scores (all but ``fixed:X``)."""
        return self.kind in ("eer", "far")

    @property
    def label(self) -> str:
        match self.kind:
            case "eer":
                return "eer"
            case _:
                return f"{self.kind}:{self.value:g}"

    def choose(self, dev_scores: object, dev_labels: object) -> float:
        """The threshold from development scores (not needed for ``fixed``).

        ``eer``: the interpolated EER threshold of :func:`interbias.metrics.verification.eer_from_sweep`.
        ``far:X``: the lowest distinct dev score t with FAR(t) = P(s ≥ t | label 0) ≤ X.
        """
        match self.kind:
            case "fixed":
                return float(self.value)  # type: ignore[arg-type]
            case "eer":
                thr = metrics.eer_from_sweep(metrics.threshold_sweep(dev_scores, dev_labels))[1]
            case _:
                p = metrics.threshold_sweep(dev_scores, dev_labels)
                thr = float(p.thresholds[int(np.argmax(p.fpr <= self.value))])
        if not np.isfinite(thr):
            raise AnalysisError(
                f"threshold rule {self.label}: no finite dev threshold exists (the highest dev score is a "
                "label-0 trial); use fixed:X"
            )
        return float(thr)
