"""Crop: keep ``duration_s`` seconds of the utterance (short test or enrolment speech).

Where the window starts (``where``):

* ``start``: at sample 0;
* ``random``: uniformly among every start that keeps the whole window inside the input
  (drawn from the operator's generator);
* ``speech``: where the window holds the most active-speech samples (the activity mask of
  :func:`interbias.operators.levels.active_mask`, the one the noise operator sets SNRs on);
  ties go to the earliest start.

The window is ``round(duration_s · rate)`` samples, exact to the sample. An input no longer than
the window is kept whole (``kept_whole`` in the record; the run counts these in
the run's operations record). numpy only: cropping is slicing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np

from interbias.operators import OpContext, Operator, check_ranges, register_operator
from interbias.operators.levels import active_mask


def speech_window_start(x: np.ndarray, n_keep: int, rate_hz: int) -> int:
    """First start of the ``n_keep``-sample window holding the most active-speech samples."""
    mask = active_mask(x, rate_hz).astype(np.int64)
    csum = np.concatenate([[0], np.cumsum(mask)])
    counts = csum[n_keep:] - csum[: len(x) - n_keep + 1]
    return int(np.argmax(counts))


@register_operator
@dataclass(frozen=True)
class Crop(Operator):
    """Keep ``duration_s`` seconds (0.1–600 s) from the ``start``, a ``random`` start, or the
    window with the most active ``speech``; shorter inputs are kept whole (counted)."""

    duration_s: float
    where: Literal["start", "random", "speech"] = "start"
    name = "crop"
    recorded = ("crop_start_s", "crop_length_s", "crop_kept_whole")
    changes_length = True
    ranges: ClassVar[dict[str, tuple[float, float, str]]] = {"duration_s": (0.1, 600.0, "s")}

    @property
    def stochastic(self) -> bool:  # type: ignore[override]
        return self.where == "random"

    def validate(self) -> None:
        check_ranges(self)

    def columns(self, record: dict[str, Any]) -> dict[str, Any]:
        return {
            "crop_start_s": record["crop_start_s"],
            "crop_length_s": record["crop_length_s"],
            "crop_kept_whole": record["kept_whole"],
        }

    def notice(self, chain: str, records: list[dict[str, Any]]) -> str | None:
        k = sum(bool(r.get("kept_whole")) for r in records)
        if not k:
            return None
        return (
            f"note: {chain}: the crop kept {k} of {len(records)} utterance(s) whole (no longer "
            f"than its {self.duration_s:g} s window): {'all' if k == len(records) else 'those'} "
            "are scored on the audio without the crop"
        )

    def apply(self, x: np.ndarray, ctx: OpContext) -> tuple[np.ndarray, dict[str, Any]]:
        sample_rate_hz = ctx.sample_rate_hz
        n_keep = int(round(self.duration_s * sample_rate_hz))
        n = len(x)
        if n <= n_keep:
            start, y = 0, x
        elif self.where == "start":
            start = 0
        elif self.where == "random":
            start = int(ctx.rng.integers(n - n_keep + 1))
        else:
            start = speech_window_start(x, n_keep, sample_rate_hz)
        if n > n_keep:
            y = x[start : start + n_keep]
        return np.ascontiguousarray(y), {
            "where": self.where,
            "input_s": n / sample_rate_hz,
            "crop_start_s": start / sample_rate_hz,
            "crop_length_s": len(y) / sample_rate_hz,
            "crop_samples": len(y),
            "kept_whole": n <= n_keep,
        }
