"""Time-scale modification (speaking rate) with the pitch preserved: WSOLA
(:func:`interbias.audio.wsola.wsola`, shared with the corpus's voice-conversion proxy) with
25 ms frames every 12.5 ms, each read near ``k · 12.5 ms · factor`` and shifted by up to
±6.25 ms to where it best continues the previous frame (largest raw cross-correlation).

Version 2: the one WSOLA of :mod:`interbias.audio.wsola` (no division by the window sum, which is one
at half overlap; nominal positions from the stretch ``round(len / factor) / len``; output length
``round(len / factor)`` as before). Outputs differ from version 1 in the last bits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from interbias.audio.wsola import wsola
from interbias.operators import OpContext, Operator, register_operator
from interbias.utils.errors import OperatorError

FRAME_S = 0.025
TOLERANCE_S = 0.00625


@register_operator
@dataclass(frozen=True)
class TimeScale(Operator):
    """Speaking rate × ``factor`` (0.5–2.0), pitch preserved: output duration = input / factor."""

    factor: float
    name = "time_scale"
    recorded = ()  # its record stays in the realised column
    ranges: ClassVar[dict[str, tuple[float, float, str]]] = {"factor": (0.5, 2.0, "× speaking rate")}
    changes_length = True
    #: 2: the shared WSOLA of interbias.audio.wsola (see the module docstring).
    version = 2

    def validate(self) -> None:
        if not 0.5 <= self.factor <= 2.0:
            raise OperatorError(f"time_scale.factor: {self.factor} is outside [0.5, 2.0]")

    def apply(self, x: np.ndarray, ctx: OpContext) -> tuple[np.ndarray, dict[str, Any]]:
        stretch = int(round(len(x) / self.factor)) / len(x) if len(x) else 1.0 / self.factor
        y = wsola(x, stretch, ctx.sample_rate_hz, frame_s=FRAME_S, tolerance_s=TOLERANCE_S, match="raw").astype(
            np.float32
        )
        return y, {
            "method": "wsola",
            "input_s": len(x) / ctx.sample_rate_hz,
            "output_s": len(y) / ctx.sample_rate_hz,
            "duration_ratio": len(y) / len(x),
        }
