"""Resampling: down to ``rate_hz`` and back to the input's rate (bandwidth loss or aliasing).

Who computes what: scipy.signal's polyphase resampler (``resample_poly``) with a sharper
FIR than its default, designed by ``scipy.signal.firwin``: Kaiser window (β = 8, about 80 dB
stop band), cutoff at 0.9 × the lower Nyquist frequency, 128·max(L, M) + 1 taps, so the band
above the new Nyquist is gone (not merely attenuated by the default filter's ~20 dB near it).

* ``anti_aliasing: true``: down with the polyphase resampler, whose filter removes the band
  above the new Nyquist frequency (``rate_hz / 2``) before decimating;
* ``anti_aliasing: false``: up by L with that resampler (image rejection only: it passes
  the original band up to 0.9 × its Nyquist frequency), then every M-th sample is kept with no filter
  (``rate_hz / rate = L / M`` in lowest terms): the band above the new Nyquist folds
  (aliases) into the band below;

then back up to the input's rate with the same resampler in both cases, cut (or
zero-padded by at most a few samples) to the input's length.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from math import gcd
from typing import Any, ClassVar

import numpy as np

from interbias.operators import OpContext, Operator, check_ranges, register_operator
from interbias.utils.errors import OperatorError

#: Kaiser β, cutoff (share of the lower Nyquist frequency) and half length (× max(L, M)).
KAISER_BETA = 8.0
CUTOFF_SHARE = 0.9
HALF_LENGTH = 64


@lru_cache(maxsize=32)
def sharp_fir(up: int, down: int) -> np.ndarray:
    """Low-pass FIR at the upsampled rate for ``resample_poly(x, up, down, window=h)``."""
    from scipy.signal import firwin

    top = max(up, down)
    return firwin(2 * HALF_LENGTH * top + 1, CUTOFF_SHARE / top, window=("kaiser", KAISER_BETA))


def sharp_resample(x: np.ndarray, rate_in: int, rate_out: int) -> np.ndarray:
    """``x`` from ``rate_in`` to ``rate_out`` by scipy.signal.resample_poly with :func:`sharp_fir`."""
    from scipy.signal import resample_poly

    g = gcd(rate_in, rate_out)
    up, down = rate_out // g, rate_in // g
    return resample_poly(np.asarray(x, np.float64), up, down, window=sharp_fir(up, down))


def downsample(x: np.ndarray, rate_in: int, rate_out: int, anti_aliasing: bool) -> np.ndarray:
    """``x`` at ``rate_out`` (< ``rate_in``), filtered first or not (see the module docs)."""
    if anti_aliasing:
        return sharp_resample(x, rate_in, rate_out)
    g = gcd(rate_in, rate_out)
    up, down = rate_out // g, rate_in // g
    return sharp_resample(x, rate_in, rate_in * up)[::down]


@register_operator
@dataclass(frozen=True)
class Resample(Operator):
    """Down to ``rate_hz`` (1000–48000 Hz, below the input's rate) and back up, with or
    without the ``anti_aliasing`` filter (band removed above rate_hz/2, or folded below it)."""

    rate_hz: int
    anti_aliasing: bool = True
    name = "resample"
    recorded = ("resample_rate_hz",)
    ranges: ClassVar[dict[str, tuple[float, float, str]]] = {"rate_hz": (1000, 48000, "Hz")}

    def validate(self) -> None:
        check_ranges(self)

    def columns(self, record: dict[str, Any]) -> dict[str, Any]:
        return {"resample_rate_hz": record["rate_hz"]}

    def apply(self, x: np.ndarray, ctx: OpContext) -> tuple[np.ndarray, dict[str, Any]]:
        sample_rate_hz = ctx.sample_rate_hz
        if self.rate_hz >= sample_rate_hz:
            raise OperatorError(
                f"resample.rate_hz: {self.rate_hz} Hz is not below the input's rate ({sample_rate_hz} Hz)"
            )
        low = downsample(np.asarray(x, np.float32), sample_rate_hz, self.rate_hz, self.anti_aliasing)
        back = sharp_resample(low, self.rate_hz, sample_rate_hz)
        n = len(x)
        y = back[:n] if len(back) >= n else np.concatenate([back, np.zeros(n - len(back), np.float32)])
        return y.astype(np.float32), {
            "library": "scipy.signal.resample_poly + firwin",
            "rate_hz": self.rate_hz,
            "nyquist_hz": self.rate_hz / 2,
            "anti_aliasing": self.anti_aliasing,
            "padded_samples": max(0, n - len(back)),
        }
