"""Signal levels: active-speech power and exact SNR mixing."""

from __future__ import annotations

import numpy as np

from interbias.errors import OperatorError

#: Frame length for the activity decision, seconds.
FRAME_S = 0.02
#: A frame is active when its energy is within this many dB of the loudest frame.
ACTIVE_RANGE_DB = 40.0


def active_mask(x: np.ndarray, sample_rate_hz: int) -> np.ndarray:
    """Per-sample boolean mask of active speech.

    20 ms frames whose mean square lies within 40 dB of the loudest frame's are active
    (an energy detector; the trailing partial frame inherits the last frame's decision).
    """
    n = len(x)
    flen = max(1, int(round(FRAME_S * sample_rate_hz)))
    nframes = max(1, n // flen)
    framed = x[: nframes * flen].astype(np.float64).reshape(nframes, flen)
    energy = (framed**2).mean(axis=1)
    peak = energy.max()
    if peak <= 0:
        raise OperatorError("signal is digital silence: no active speech to set an SNR against")
    active = energy >= peak * 10 ** (-ACTIVE_RANGE_DB / 10)
    mask = np.repeat(active, flen)
    if len(mask) < n:
        mask = np.concatenate([mask, np.full(n - len(mask), active[-1])])
    return mask


def active_power(x: np.ndarray, mask: np.ndarray) -> float:
    """Mean square of ``x`` over the samples where ``mask`` is true."""
    return float(np.mean(x[mask].astype(np.float64) ** 2))


def mix_at_snr(
    speech: np.ndarray, noise: np.ndarray, snr_db: float, sample_rate_hz: int
) -> tuple[np.ndarray, dict[str, float]]:
    """speech + g·noise with g chosen so that P_speech / P_noise = 10^(snr/10) exactly,
    both powers measured on the active-speech samples of ``speech``."""
    mask = active_mask(speech, sample_rate_hz)
    p_s = active_power(speech, mask)
    p_n = active_power(noise, mask)
    if p_n <= 0:
        raise OperatorError("noise segment is silent over the active speech")
    gain = np.sqrt(p_s / (p_n * 10 ** (snr_db / 10)))
    scaled = noise.astype(np.float64) * gain
    out = speech.astype(np.float64) + scaled
    achieved = 10 * np.log10(p_s / active_power(scaled, mask))
    return out.astype(np.float32), {
        "snr_db_achieved": float(achieved),
        "noise_gain": float(gain),
        "active_share": float(mask.mean()),
    }
