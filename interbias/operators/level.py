"""Level and clipping: gain with saturation at full scale, hard or soft (tanh) clipping.

Full scale is 1.0 (float samples in [−1, 1], as decoded from PCM). numpy only: each is one
multiply and a clip, exact, with nothing a DSP library would add.

* ``gain``: ``y = clip(10^(gain_db/20) · x, −1, 1)``; the samples that hit full scale are
  counted (``saturated_samples``, ``saturated_share``).
* ``clip``: threshold ``t`` = ``threshold`` × the input's peak |x|, or ``10^(level_dbfs/20)``
  (full scale 1.0). ``hard``: ``y = clip(x, −t, t)``; ``tanh``: ``y = t · tanh(x / t)``
  (soft saturation, same ceiling). ``clipped_share`` is the share of samples with |x| > t.

Both record the crest factor (peak / RMS, dB) before and after:
``20·log10(max|x| / sqrt(mean x²))``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np

from interbias.operators import OpContext, Operator, check_ranges, register_operator
from interbias.utils.errors import OperatorError

#: Full scale of float samples.
FULL_SCALE = 1.0


def crest_factor_db(x: np.ndarray) -> float:
    """20·log10(peak |x| / RMS) in dB; 0 for a silent signal."""
    x64 = np.asarray(x, np.float64)
    rms = float(np.sqrt(np.mean(x64**2))) if len(x64) else 0.0
    if rms <= 0:
        return 0.0
    return float(20 * np.log10(np.abs(x64).max() / rms))


@register_operator
@dataclass(frozen=True)
class Gain(Operator):
    """Multiply by ``gain_db`` dB (−60–40 dB); samples beyond full scale saturate at ±1 (counted)."""

    gain_db: float
    name = "gain"
    recorded = ("gain_saturated_samples",)
    ranges: ClassVar[dict[str, tuple[float, float, str]]] = {"gain_db": (-60.0, 40.0, "dB")}

    def validate(self) -> None:
        check_ranges(self)

    def columns(self, record: dict[str, Any]) -> dict[str, Any]:
        return {"gain_saturated_samples": record["saturated_samples"]}

    def apply(self, x: np.ndarray, ctx: OpContext) -> tuple[np.ndarray, dict[str, Any]]:
        scaled = np.asarray(x, np.float64) * 10 ** (self.gain_db / 20)
        over = np.abs(scaled) > FULL_SCALE
        y = np.clip(scaled, -FULL_SCALE, FULL_SCALE).astype(np.float32)
        return y, {
            "gain_db": self.gain_db,
            "saturated_samples": int(over.sum()),
            "saturated_share": float(over.mean()) if len(x) else 0.0,
            "crest_factor_in_db": crest_factor_db(x),
            "crest_factor_out_db": crest_factor_db(y),
        }


@register_operator
@dataclass(frozen=True)
class Clip(Operator):
    """Clip at ``threshold`` × the peak (0.01–1) or at ``level_dbfs`` (−60–0 dBFS), one of
    the two; ``mode`` hard (flat top) or tanh (soft saturation with the same ceiling)."""

    threshold: float | None = None
    level_dbfs: float | None = None
    mode: Literal["hard", "tanh"] = "hard"
    name = "clip"
    recorded = ("clipped_share",)
    ranges: ClassVar[dict[str, tuple[float, float, str]]] = {
        "threshold": (0.01, 1.0, "× peak"),
        "level_dbfs": (-60.0, 0.0, "dBFS"),
    }

    def validate(self) -> None:
        if (self.threshold is None) == (self.level_dbfs is None):
            raise OperatorError("clip: give exactly one of threshold (fraction of the peak) or level_dbfs")
        check_ranges(self)

    def columns(self, record: dict[str, Any]) -> dict[str, Any]:
        return {"clipped_share": record["clipped_share"]}

    def apply(self, x: np.ndarray, ctx: OpContext) -> tuple[np.ndarray, dict[str, Any]]:
        x64 = np.asarray(x, np.float64)
        peak = float(np.abs(x64).max()) if len(x64) else 0.0
        if self.threshold is not None:
            if peak <= 0:
                raise OperatorError("clip: the input is digital silence (no peak to clip at a fraction of)")
            t = self.threshold * peak
        else:
            t = 10 ** (self.level_dbfs / 20) * FULL_SCALE  # type: ignore[operator]
        over = np.abs(x64) > t
        y = np.clip(x64, -t, t) if self.mode == "hard" else t * np.tanh(x64 / t)
        y32 = y.astype(np.float32)
        return y32, {
            "mode": self.mode,
            "threshold_abs": t,
            "threshold_dbfs": float(20 * np.log10(t / FULL_SCALE)),
            "input_peak_dbfs": float(20 * np.log10(peak / FULL_SCALE)) if peak > 0 else None,
            "clipped_share": float(over.mean()) if len(x) else 0.0,
            "crest_factor_in_db": crest_factor_db(x),
            "crest_factor_out_db": crest_factor_db(y32),
        }
