"""Pitch shift by semitones with the duration kept (voice disguise).

Who computes what: pedalboard's ``PitchShift`` (Spotify, C++; Rubber Band's time-domain
pitch shifter), which scales every frequency by ``2^(semitones/12)`` and returns as many
samples as it was given, latency compensated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from interbias.operators import OpContext, Operator, check_ranges, register_operator


@register_operator
@dataclass(frozen=True)
class Pitch(Operator):
    """Shift the pitch by ``semitones`` (−12–12; frequency ratio 2^(semitones/12)), duration kept."""

    semitones: float
    name = "pitch"
    recorded = ("pitch_ratio",)
    ranges: ClassVar[dict[str, tuple[float, float, str]]] = {"semitones": (-12.0, 12.0, "semitones")}

    def validate(self) -> None:
        check_ranges(self)

    def columns(self, record: dict[str, Any]) -> dict[str, Any]:
        return {"pitch_ratio": record["ratio"]}

    def apply(self, x: np.ndarray, ctx: OpContext) -> tuple[np.ndarray, dict[str, Any]]:
        import pedalboard

        shifter = pedalboard.PitchShift(semitones=self.semitones)
        y = shifter(np.asarray(x, np.float32), float(ctx.sample_rate_hz))
        y = np.asarray(y, np.float32).reshape(-1)[: len(x)]
        return np.ascontiguousarray(y), {
            "library": "pedalboard.PitchShift",
            "ratio": float(2 ** (self.semitones / 12)),
            "samples_over_full_scale": int((np.abs(y) > 1.0).sum()),
        }
