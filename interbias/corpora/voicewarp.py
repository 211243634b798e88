"""Signal processing of the voice-conversion *proxy* attack: pitch and formant warping.

A source talker's utterance is moved toward a target voice in two steps, both deterministic
(no random draws) and length-preserving:

1. :func:`pitch_shift` multiplies every frequency by ``pitch_ratio``: WSOLA time stretch by
   the ratio (waveform-similarity overlap-add, :func:`interbias.audio.wsola.wsola`), then polyphase resampling back
   to the original length.
2. :func:`warp_formants` moves the spectral envelope by ``factor`` while keeping the
   excitation: per 10 ms frame an LPC envelope 1/|A₁(ω)|² is fitted (autocorrelation method,
   30 ms Hann window), the residual e = A₁·x is re-filtered through σ₂/A₂ where A₂ is the
   LPC fit (Levinson on the inverse FFT) of the warped envelope 1/|A₁(ω/factor)|² and σ₂² its
   prediction error, so a formant at f moves to f·factor.

:func:`convert` chains both so that F0 scales by ``pitch_ratio`` and formants by
``formant_ratio`` (step 2 uses factor = formant_ratio / pitch_ratio, undoing step 1's
formant shift), and matches the output's RMS to the input's. This is a proxy of voice
conversion for offline tests, not a neural converter.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
from scipy.signal import get_window, lfilter, resample_poly

from interbias.audio.wsola import wsola
from interbias.utils.errors import OperatorError


def pitch_shift(x: np.ndarray, ratio: float, sample_rate_hz: int) -> tuple[np.ndarray, float]:
    """Multiply every frequency of ``x`` by ``ratio`` (≈, a rational P/Q with Q ≤ 200),
    keeping its length. Returns the output and the realised ratio P/Q."""
    if not 0.25 <= ratio <= 4.0:
        raise OperatorError(f"pitch_shift: ratio {ratio} is outside [0.25, 4]")
    frac = Fraction(ratio).limit_denominator(200)
    realised = frac.numerator / frac.denominator
    n = len(x)
    if frac == 1:
        return np.asarray(x, dtype=np.float64).copy(), 1.0
    stretched = wsola(x, realised, sample_rate_hz)
    y = resample_poly(stretched, frac.denominator, frac.numerator)
    if len(y) < n:
        y = np.concatenate([y, np.zeros(n - len(y))])
    return y[:n], realised


def levinson(r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Levinson–Durbin over the last axis: autocorrelations r[..., 0..p] -> LPC polynomials
    [1, a₁…a_p] (shape [..., p + 1]) and prediction-error powers (shape [...])."""
    r = np.array(r, dtype=np.float64, copy=True)
    r[..., 0] *= 1.0 + 1e-9  # white-noise correction: keeps the recursion positive definite
    order = r.shape[-1] - 1
    a = np.zeros(r.shape)
    a[..., 0] = 1.0
    err = r[..., 0].copy()
    for i in range(1, order + 1):
        acc = np.einsum("...j,...j->...", a[..., :i], r[..., i:0:-1])
        k = -acc / np.where(err > 0, err, 1.0)
        prev = a[..., :i].copy()
        a[..., 1 : i + 1] += k[..., None] * prev[..., ::-1]
        err = err * (1.0 - k**2)
    return a, np.maximum(err, 0.0)


def warp_formants(
    x: np.ndarray,
    factor: float,
    sample_rate_hz: int,
    *,
    order: int = 18,
    hop_s: float = 0.01,
    window_s: float = 0.03,
    n_bins: int = 513,
) -> np.ndarray:
    """Move the LPC spectral envelope of ``x`` by ``factor`` (formant f -> f·factor), frame by
    frame, keeping the LPC residual as excitation (see the module docstring)."""
    if not 0.5 <= factor <= 2.0:
        raise OperatorError(f"warp_formants: factor {factor} is outside [0.5, 2]")
    x = np.asarray(x, dtype=np.float64)
    hop = int(round(hop_s * sample_rate_hz))
    w = int(round(window_s * sample_rate_hz))
    win = get_window("hann", w, fftbins=False)
    starts = np.arange(0, len(x), hop)
    xp = np.concatenate([np.zeros(w), x, np.zeros(w + hop)])
    idx = (w + starts + hop // 2 - w // 2)[:, None] + np.arange(w)[None, :]
    frames = xp[idx] * win
    nfft = 1 << int(np.ceil(np.log2(2 * w)))
    spec = np.fft.rfft(frames, nfft)
    r1 = np.fft.irfft(np.abs(spec) ** 2, nfft)[:, : order + 1]
    silent = r1[:, 0] <= 1e-12
    r1[silent] = np.eye(1, order + 1)[0]
    a1, _ = levinson(r1)
    omega = np.linspace(0.0, np.pi, n_bins)
    basis = np.exp(-1j * np.outer(np.arange(order + 1), np.minimum(omega / factor, np.pi)))
    env = 1.0 / np.abs(a1 @ basis) ** 2
    a2, err2 = levinson(np.fft.irfft(env, axis=-1)[:, : order + 1])
    gain = np.sqrt(err2)
    a1[silent], a2[silent], gain[silent] = np.eye(1, order + 1)[0], np.eye(1, order + 1)[0], 1.0
    out = np.zeros(len(x))
    zi_a = np.zeros(order)
    zi_s = np.zeros(order)
    for m, start in enumerate(starts.tolist()):
        frame = x[start : start + hop]
        e, zi_a = lfilter(a1[m], [1.0], frame, zi=zi_a)
        yk, zi_s = lfilter([gain[m]], a2[m], e, zi=zi_s)
        out[start : start + len(frame)] = yk
    return out


def convert(
    x: np.ndarray, sample_rate_hz: int, *, pitch_ratio: float, formant_ratio: float
) -> tuple[np.ndarray, dict[str, Any]]:
    """F0 × ``pitch_ratio`` and formants × ``formant_ratio``; output RMS = input RMS (peak
    kept ≤ 0.98 by a further gain). Returns float32 samples and a record of what was done."""
    x = np.asarray(x, dtype=np.float64)
    shifted, realised = pitch_shift(x, pitch_ratio, sample_rate_hz)
    factor = formant_ratio / realised
    y = warp_formants(shifted, factor, sample_rate_hz)
    if not np.isfinite(y).all():
        raise OperatorError("voice conversion proxy produced non-finite samples")
    rms_x = float(np.sqrt(np.mean(x**2)))
    rms_y = float(np.sqrt(np.mean(y**2)))
    if rms_y <= 0:
        raise OperatorError("voice conversion proxy produced silence")
    gain = rms_x / rms_y
    peak = float(np.max(np.abs(y))) * gain
    if peak > 0.98:
        gain *= 0.98 / peak
    return (y * gain).astype(np.float32), {
        "pitch_ratio": realised,
        "formant_ratio": formant_ratio,
        "envelope_factor": factor,
        "gain": gain,
    }
