"""Additive noise at a signal-to-noise ratio measured on active speech."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from interbias.errors import OperatorError
from interbias.operators import OPERATORS, OpContext, Operator
from interbias.operators.levels import mix_at_snr


@OPERATORS.register("noise")
@dataclass(frozen=True)
class Noise(Operator):
    """Add noise of ``kind`` at ``snr_db`` (dB, active-speech power over noise power)."""

    kind: Literal["gaussian"]
    snr_db: float
    name = "noise"

    def validate(self) -> None:
        if not -20.0 <= self.snr_db <= 80.0:
            raise OperatorError(f"noise.snr_db: {self.snr_db} dB is outside [-20, 80]")

    def apply(self, x: np.ndarray, ctx: OpContext) -> tuple[np.ndarray, dict[str, Any]]:
        noise = ctx.rng.standard_normal(len(x))
        y, rec = mix_at_snr(x, noise, self.snr_db, ctx.sample_rate_hz)
        return y, {"kind": self.kind, **rec}
