"""Automatic gain control: a compressor, then make-up gain to a target speech level.

Who computes what: pedalboard's ``Compressor`` (Spotify, C++: a feed-forward compressor with
``threshold_db``, ``ratio``, ``attack_ms``, ``release_ms``) does the level-dependent gain;
with ``target_dbfs`` the output is then scaled (numpy) so its active-speech level —
10·log10 of the mean square over the input's active samples
(:func:`interbias.operators.levels.active_mask`) — is ``target_dbfs``, saturating at full
scale (counted), as a phone front end's AGC does.

The record gives the level range before and after: the 95th minus the 5th percentile of
the 20 ms frame levels (dB) over the active frames of the input.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from interbias.operators import OpContext, Operator, check_ranges, register_operator
from interbias.operators.levels import FRAME_S, active_mask, active_power


def frame_levels_db(x: np.ndarray, mask: np.ndarray, rate_hz: int) -> np.ndarray:
    """10·log10 mean square of each whole 20 ms frame whose samples are all active."""
    flen = max(1, int(round(FRAME_S * rate_hz)))
    n = len(x) // flen
    if n == 0:
        return np.zeros(0)
    frames = np.asarray(x[: n * flen], np.float64).reshape(n, flen)
    active = mask[: n * flen].reshape(n, flen).all(axis=1)
    power = (frames[active] ** 2).mean(axis=1)
    return 10 * np.log10(np.maximum(power, 1e-20))


def level_range_db(x: np.ndarray, mask: np.ndarray, rate_hz: int) -> float:
    """95th − 5th percentile of the active 20 ms frame levels, dB (0 with fewer than 2 frames)."""
    levels = frame_levels_db(x, mask, rate_hz)
    if len(levels) < 2:
        return 0.0
    p5, p95 = np.percentile(levels, [5, 95])
    return float(p95 - p5)


@register_operator
@dataclass(frozen=True)
class Agc(Operator):
    """Compress above ``threshold_db`` (−80–0 dBFS) by ``ratio`` (1–100) with ``attack_ms`` and
    ``release_ms``, then, with ``target_dbfs`` (−60–0), bring active speech to that level."""

    threshold_db: float = -30.0
    ratio: float = 4.0
    attack_ms: float = 5.0
    release_ms: float = 100.0
    target_dbfs: float | None = None
    name = "agc"
    recorded = ("agc_level_range_in_db", "agc_level_range_out_db")
    ranges: ClassVar[dict[str, tuple[float, float, str]]] = {
        "threshold_db": (-80.0, 0.0, "dBFS"),
        "ratio": (1.0, 100.0, ": 1"),
        "attack_ms": (0.1, 500.0, "ms"),
        "release_ms": (1.0, 5000.0, "ms"),
        "target_dbfs": (-60.0, 0.0, "dBFS"),
    }

    def validate(self) -> None:
        check_ranges(self)

    def columns(self, record: dict[str, Any]) -> dict[str, Any]:
        return {
            "agc_level_range_in_db": record["level_range_in_db"],
            "agc_level_range_out_db": record["level_range_out_db"],
        }

    def apply(self, x: np.ndarray, ctx: OpContext) -> tuple[np.ndarray, dict[str, Any]]:
        import pedalboard

        sample_rate_hz = ctx.sample_rate_hz
        comp = pedalboard.Compressor(
            threshold_db=self.threshold_db, ratio=self.ratio, attack_ms=self.attack_ms, release_ms=self.release_ms
        )
        y = np.asarray(comp(np.asarray(x, np.float32), float(sample_rate_hz)), np.float64).reshape(-1)[: len(x)]
        mask = active_mask(x, sample_rate_hz)
        level_in = 10 * np.log10(active_power(x, mask))
        gain_db = 0.0
        if self.target_dbfs is not None:
            p = active_power(y, mask)
            gain_db = self.target_dbfs - 10 * np.log10(p) if p > 0 else 0.0
            y = y * 10 ** (gain_db / 20)
        over = np.abs(y) > 1.0
        out = np.clip(y, -1.0, 1.0).astype(np.float32)
        return out, {
            "library": "pedalboard.Compressor",
            "active_level_in_dbfs": float(level_in),
            "active_level_out_dbfs": float(10 * np.log10(max(active_power(out, mask), 1e-20))),
            "makeup_gain_db": float(gain_db),
            "level_range_in_db": level_range_db(x, mask, sample_rate_hz),
            "level_range_out_db": level_range_db(out, mask, sample_rate_hz),
            "saturated_samples": int(over.sum()),
        }
