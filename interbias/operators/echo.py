"""Echo: delayed, decaying copies of the signal added to it (a line echo, a hands-free loop).

``y[n] = x[n] + Σ_{k=1..reflections} decay^k · x[n − k·d]`` with ``d = round(delay_ms · rate /
1000)`` samples; the output keeps the input's length (the tail past the end is cut). numpy
only: integer-sample delays and a sum are exact, where a delay line with feedback and a
dry/wet mix (pedalboard's ``Delay``) would also rescale the direct sound.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from interbias.operators import OpContext, Operator, check_ranges, register_operator


@register_operator
@dataclass(frozen=True)
class Echo(Operator):
    """Add ``reflections`` (1–10) copies delayed by k × ``delay_ms`` (1–2000 ms) at amplitude
    ``decay``^k (0–0.95)."""

    delay_ms: float
    decay: float = 0.5
    reflections: int = 1
    name = "echo"
    recorded = ("echo_delay_samples",)
    ranges: ClassVar[dict[str, tuple[float, float, str]]] = {
        "delay_ms": (1.0, 2000.0, "ms"),
        "decay": (0.0, 0.95, "(amplitude ratio)"),
        "reflections": (1, 10, "(copies)"),
    }

    def validate(self) -> None:
        check_ranges(self)

    def columns(self, record: dict[str, Any]) -> dict[str, Any]:
        return {"echo_delay_samples": record["delay_samples"]}

    def notice(self, chain: str, records: list[dict[str, Any]]) -> str | None:
        k = sum(int(r.get("reflections_applied", self.reflections)) < self.reflections for r in records)
        if not k:
            return None
        return (
            f"note: {chain}: the echo added fewer than {self.reflections} reflection(s) to {k} of "
            f"{len(records)} utterance(s) (its {self.delay_ms:g} ms delay reaches past the end of the "
            "file; reflections_applied in operations.parquet)"
        )

    def apply(self, x: np.ndarray, ctx: OpContext) -> tuple[np.ndarray, dict[str, Any]]:
        d = max(1, int(round(self.delay_ms * ctx.sample_rate_hz / 1000)))
        x64 = np.asarray(x, np.float64)
        y = x64.copy()
        used = 0
        for k in range(1, self.reflections + 1):
            lag = k * d
            if lag >= len(x64):
                break
            y[lag:] += self.decay**k * x64[: len(x64) - lag]
            used += 1
        out = y.astype(np.float32)
        return out, {
            "delay_samples": d,
            "reflections_applied": used,
            "samples_over_full_scale": int((np.abs(out) > 1.0).sum()),
        }
