"""Time-scale modification (speaking rate) with the pitch preserved: WSOLA.

Waveform-similarity overlap-add (Verhelst & Roelands, 1993): output frames of 25 ms are
laid down every 12.5 ms (Hann windows, which sum to one at half overlap); each is read from
the input near ``k · 12.5 ms · factor``, shifted by up to ±6.25 ms to where it best matches
(largest cross-correlation) the natural continuation of the previous frame. Copying whole
waveform periods keeps the pitch and the spectral envelope; only the timing changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from interbias.errors import OperatorError
from interbias.operators import OPERATORS, OpContext, Operator

FRAME_S = 0.025
TOLERANCE_S = 0.00625


def wsola(x: np.ndarray, factor: float, rate_hz: int) -> np.ndarray:
    """``x`` played ``factor`` times faster at the same pitch; length ``round(len(x) / factor)``."""
    n_out = int(round(len(x) / factor))
    frame = max(4, 2 * int(round(FRAME_S * rate_hz / 2)))
    hop = frame // 2
    tol = max(1, int(round(TOLERANCE_S * rate_hz)))
    window = np.hanning(frame + 1)[:frame]  # periodic Hann: shifted copies at half overlap sum to 1
    # Frame k covers output samples [(k - 1)·hop, (k - 1)·hop + frame): frame 0 starts half a
    # frame early so every output sample lies under two windows.
    n_frames = n_out // hop + 3
    margin = frame + tol  # zeros around the input so every candidate segment exists
    need = int(np.ceil(n_frames * hop * factor)) + frame + 2 * tol
    xp = np.zeros(margin + max(len(x), need) + margin)
    xp[margin : margin + len(x)] = x
    out = np.zeros(n_frames * hop + frame)
    norm = np.zeros_like(out)
    prev = 0
    for k in range(n_frames):
        nominal = margin + int(round((k - 1) * hop * factor))
        if k == 0:
            pos = nominal
        else:
            template = xp[prev + hop : prev + hop + frame]
            region = xp[nominal - tol : nominal + tol + frame]
            corr = np.correlate(region, template, mode="valid")
            pos = nominal - tol + int(np.argmax(corr)) if np.any(corr) else nominal
        out[k * hop : k * hop + frame] += window * xp[pos : pos + frame]
        norm[k * hop : k * hop + frame] += window
        prev = pos
    y = out[hop : hop + n_out] / np.maximum(norm[hop : hop + n_out], 1e-3)
    return y


@OPERATORS.register("time_scale")
@dataclass(frozen=True)
class TimeScale(Operator):
    """Speaking rate × ``factor`` (0.5–2.0), pitch preserved: output duration = input / factor."""

    factor: float
    name = "time_scale"
    ranges: ClassVar[dict[str, tuple[float, float, str]]] = {"factor": (0.5, 2.0, "× speaking rate")}
    changes_length = True

    def validate(self) -> None:
        if not 0.5 <= self.factor <= 2.0:
            raise OperatorError(f"time_scale.factor: {self.factor} is outside [0.5, 2.0]")

    def apply(self, x: np.ndarray, ctx: OpContext) -> tuple[np.ndarray, dict[str, Any]]:
        y = wsola(np.asarray(x, np.float64), self.factor, ctx.sample_rate_hz).astype(np.float32)
        return y, {
            "method": "wsola",
            "input_s": len(x) / ctx.sample_rate_hz,
            "output_s": len(y) / ctx.sample_rate_hz,
            "duration_ratio": len(y) / len(x),
        }
