"""Active-speech level, the one detector the corpus and the operators share, and exact SNR mixing.

The detector: 20 ms frames (``frame_s``) whose mean square lies within ``range_db`` of the
loudest frame's are active speech. Two measures use it:

- :func:`active_mask` + :func:`active_power` (operators, ``range_db`` 40): the mean square over
  the active *samples* (a trailing partial frame inherits the last frame's decision);
- :func:`active_frame_power` (the synthetic corpus's background level, ``range_db`` 30): the
  mean of the active frames' mean squares (a trailing partial frame is dropped).

Both equal the mean square over active speech when the length is a whole number of frames;
they are kept apart so that the corpus and the reference run stay byte-identical.
"""

from __future__ import annotations

import numpy as np

from interbias.utils.errors import OperatorError

#: Frame length for the activity decision, seconds.
FRAME_S = 0.02
#: A frame is active when its energy is within this many dB of the loudest frame (operators).
ACTIVE_RANGE_DB = 40.0


def frame_energies(x: np.ndarray, sample_rate_hz: int, frame_s: float = FRAME_S) -> tuple[np.ndarray, int]:
    """Mean square of each whole frame of ``frame_s`` seconds (float64) and the frame length in
    samples; a trailing partial frame is not included."""
    flen = max(1, int(round(frame_s * sample_rate_hz)))
    nframes = len(x) // flen
    framed = np.asarray(x[: nframes * flen], dtype=np.float64).reshape(nframes, flen)
    return (framed**2).mean(axis=1), flen


def active_frames(energy: np.ndarray, range_db: float = ACTIVE_RANGE_DB) -> np.ndarray:
    """Frames whose energy is within ``range_db`` dB of the largest (``energy`` not empty)."""
    return energy >= energy.max() * 10 ** (-range_db / 10)


def active_mask(x: np.ndarray, sample_rate_hz: int, range_db: float = ACTIVE_RANGE_DB) -> np.ndarray:
    """Per-sample boolean mask of active speech.

    20 ms frames whose mean square lies within 40 dB (``range_db``) of the loudest frame's are
    active (an energy detector; the trailing partial frame inherits the last frame's decision;
    a signal shorter than a frame is one frame).
    """
    n = len(x)
    energy, flen = frame_energies(x, sample_rate_hz)
    if not len(energy):
        energy, flen = np.asarray([float(np.mean(np.asarray(x, np.float64) ** 2))]), max(1, n)
    if energy.max() <= 0:
        raise OperatorError("signal is digital silence: no active speech to set an SNR against")
    active = active_frames(energy, range_db)
    mask = np.repeat(active, flen)
    if len(mask) < n:
        mask = np.concatenate([mask, np.full(n - len(mask), active[-1])])
    return mask[:n]


def active_power(x: np.ndarray, mask: np.ndarray) -> float:
    """Mean square of ``x`` over the samples where ``mask`` is true."""
    return float(np.mean(x[mask].astype(np.float64) ** 2))


def active_frame_power(x: np.ndarray, sample_rate_hz: int, range_db: float = 30.0) -> float:
    """Mean power of the 20 ms frames within ``range_db`` (30) dB of the loudest frame; the mean
    square of ``x`` when it is shorter than a frame."""
    energy, _ = frame_energies(x, sample_rate_hz)
    if not len(energy):
        return float(np.mean(x**2))
    return float(np.mean(energy[active_frames(energy, range_db)]))


#: A signal whose variance over its active samples is below this share of their mean square is
#: constant (a DC offset, no speech): no SNR is set against it.
CONSTANT_SHARE = 1e-6


def check_varies(active: np.ndarray, power: float) -> None:
    """:class:`OperatorError` when the active samples are constant (a DC offset and nothing else):
    their "speech level" would be the offset's, and an SNR against it would say nothing of speech."""
    spread = float(np.var(active.astype(np.float64))) if len(active) else 0.0
    if spread <= CONSTANT_SHARE * power:
        level = float(np.mean(active.astype(np.float64))) if len(active) else 0.0
        raise OperatorError(
            f"signal is constant (a DC offset of {level:.4g}, no variation): no speech to set an SNR against"
        )


def mix_at_snr(
    speech: np.ndarray, noise: np.ndarray, snr_db: float, sample_rate_hz: int
) -> tuple[np.ndarray, dict[str, float]]:
    """speech + g·noise with g chosen so that P_speech / P_noise = 10^(snr/10) exactly,
    both powers measured on the active-speech samples of ``speech``."""
    mask = active_mask(speech, sample_rate_hz)
    p_s = active_power(speech, mask)
    check_varies(speech[mask], p_s)
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
