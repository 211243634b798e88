"""The dev-threshold rule of the fairness report (``eer``, ``fixed:X``, ``far:X``): parsed by the
experiment schema (``fairness.threshold``) and applied by :mod:`interbias.analysis.fairness`."""

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
        kind, _, raw = t.partition(":")
        if kind in ("fixed", "far") and raw:
            try:
                value = float(raw)
            except ValueError:
                value = math.nan
            if not math.isfinite(value):
                raise AnalysisError(f"threshold rule {t!r}: {raw!r} is not a finite number")
            if kind == "far" and not 0 <= value < 1:
                raise AnalysisError(f"threshold rule {t!r}: the target FAR must be in [0, 1)")
            return cls(kind, value)  # type: ignore[arg-type]
        raise AnalysisError(f"threshold rule {t!r}: valid: eer, fixed:X, far:X")

    @property
    def label(self) -> str:
        return "eer" if self.kind == "eer" else f"{self.kind}:{self.value:g}"

    def choose(self, dev_scores: object, dev_labels: object) -> float:
        """The threshold from development scores (not needed for ``fixed``).

        ``eer``: the interpolated EER threshold of :func:`interbias.metrics.verification.eer_from_sweep`.
        ``far:X``: the lowest distinct dev score t with FAR(t) = P(s ≥ t | label 0) ≤ X.
        """
        if self.kind == "fixed":
            return float(self.value)  # type: ignore[arg-type]
        p = metrics.threshold_sweep(dev_scores, dev_labels)
        if self.kind == "eer":
            thr = metrics.eer_from_sweep(p)[1]
        else:
            k = int(np.argmax(p.fpr <= self.value))
            thr = float(p.thresholds[k])
        if not np.isfinite(thr):
            raise AnalysisError(
                f"threshold rule {self.label}: no finite dev threshold exists (the highest dev score is a "
                "label-0 trial); use fixed:X"
            )
        return float(thr)
