"""Resampling of mono signals: the front end's registered resamplers (scipy's polyphase
filter, torchaudio's Hann-windowed sinc re-implemented in numpy), used by the front end, the
operators (noise files, impulse responses, codecs) and the corpus builders. (The synthetic
corpus's channel resamples inside its one frequency-domain pass: an ideal low-pass, see
:func:`interbias.corpora.channel.apply`.)"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from math import gcd
from typing import Any

import numpy as np

from interbias.utils.errors import AudioError


def resample(x: np.ndarray, rate_in: int, rate_out: int, method: str = "polyphase") -> np.ndarray:
    """Resample mono ``x`` with ``method`` (a key of :data:`RESAMPLERS`), float32 out."""
    if rate_in == rate_out:
        return np.asarray(x, dtype=np.float32)
    if method not in RESAMPLERS:
        raise AudioError(f"unknown resampler {method!r}; valid: {', '.join(RESAMPLERS)}")
    return RESAMPLERS[method].fn(np.asarray(x), int(rate_in), int(rate_out)).astype(np.float32)


def _polyphase(x: np.ndarray, rate_in: int, rate_out: int) -> np.ndarray:
    from scipy.signal import resample_poly

    g = gcd(rate_in, rate_out)
    return resample_poly(np.asarray(x, dtype=np.float64), rate_out // g, rate_in // g)


#: torchaudio ``functional.resample`` defaults (the sinc resampler 3D-Speaker and WeSpeaker use).
SINC_WIDTH = 6
SINC_ROLLOFF = 0.99


def sinc_kernel(rate_in: int, rate_out: int) -> tuple[np.ndarray, int]:
    """The Hann-windowed sinc filter bank of torchaudio's ``functional.resample``
    (``sinc_interp_hann``, ``lowpass_filter_width`` 6, ``rolloff`` 0.99): one row per output
    phase, ``2 * width + rate_in`` taps each, rates reduced by their gcd; float32 like torchaudio's."""
    g = gcd(rate_in, rate_out)
    orig, new = rate_in // g, rate_out // g
    base = min(orig, new) * SINC_ROLLOFF
    width = math.ceil(SINC_WIDTH * orig / base)
    idx = np.arange(-width, width + orig, dtype=np.float64)[None, :] / orig
    t = np.arange(0, -new, -1, dtype=np.float64)[:, None] / new + idx
    t = np.clip(t * base, -SINC_WIDTH, SINC_WIDTH)
    window = np.cos(t * math.pi / SINC_WIDTH / 2) ** 2
    t = t * math.pi
    with np.errstate(invalid="ignore", divide="ignore"):
        kernel = np.where(t == 0, 1.0, np.sin(t) / t)
    return (kernel * window * (base / orig)).astype(np.float32), width


def _sinc(x: np.ndarray, rate_in: int, rate_out: int) -> np.ndarray:
    """torchaudio's ``functional.resample`` (Hann sinc) in numpy: the same kernel, padding,
    stride and output length."""
    g = gcd(rate_in, rate_out)
    orig, new = rate_in // g, rate_out // g
    kernel, width = sinc_kernel(rate_in, rate_out)
    padded = np.pad(np.asarray(x, dtype=np.float64), (width, width + orig))
    frames = np.lib.stride_tricks.sliding_window_view(padded, kernel.shape[1])[::orig]
    out = (frames @ kernel.T.astype(np.float64)).reshape(-1)
    return out[: math.ceil(new * len(x) / orig)]


@dataclass(frozen=True)
class FrontEndResampler:
    """One registered resampler: its function and the parameters recorded in fingerprints."""

    fn: Callable[[np.ndarray, int, int], np.ndarray]
    params: Mapping[str, Any]


#: Front-end resamplers by name (``frontend: {resampler: NAME}``).
RESAMPLERS: dict[str, FrontEndResampler] = {
    "polyphase": FrontEndResampler(_polyphase, {"method": "scipy.signal.resample_poly", "window": ["kaiser", 5.0]}),
    "sinc": FrontEndResampler(
        _sinc,
        {
            "method": "torchaudio.functional.resample",
            "resampling_method": "sinc_interp_hann",
            "lowpass_filter_width": SINC_WIDTH,
            "rolloff": SINC_ROLLOFF,
        },
    ),
}


def resampler_record(name: str) -> dict[str, Any]:
    """The name and parameters of resampler ``name``, as recorded in fingerprints and run.json."""
    return {"name": name, **RESAMPLERS[name].params}
