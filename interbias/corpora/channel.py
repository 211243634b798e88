"""Recording sessions of the embedded synthetic corpus: a microphone, a room and a talker's day.

Real corpora never give a speaker's utterances one perfect channel: each recording session has
its own microphone response, level, distance in a room and background, and the talker's pitch
and rate drift a little. Every session of a synthetic voice draws these from a seed derived from
(voice, session), and every utterance of the session shares them:

- **prosody drift** (applied by the synthesiser): espeak pitch and pitch-range offsets, a rate
  factor; each utterance adds a small jitter of its own;
- **room**: none (close talk) or one of a small seeded bank of shoebox rooms simulated with
  pyroomacoustics (the reverb operator's simulator), the reverberant tail after the direct path
  scaled by ``wet`` (a mild, close-microphone room);
- **background**: coloured noise (power ∝ f^−slope) at ``snr_db`` (high: 30–50 dB) on active
  speech power (:func:`interbias.audio.level.active_frame_power`), drawn per utterance;
- **microphone**: a smooth random EQ (a spectral tilt plus a few log-frequency bumps of a few
  dB) between band limits (second-order high-pass, fourth-order low-pass magnitudes);
- **level**: a gain in dB; an utterance whose peak would pass 0.98 is scaled down to 0.98
  (counted per utterance as ``peak_limit_db``, never clipped).

One frequency-domain pass over the whole utterance resamples it from the synthesiser's rate
(an ideal low-pass at the new Nyquist frequency), applies the room, adds the background and
the microphone's zero-phase curve; everything is numpy/scipy FFTs from the derived seeds, so
rebuilds are byte-identical. The rooms are simulated once and cached by the corpus builder.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from interbias.audio.level import active_frame_power

#: RT60s and rooms per RT60 of the bank (12 rooms, a few seconds to simulate; cached).
ROOM_RT60_S = (0.2, 0.3)
ROOMS_PER_RT60 = 6
#: Names the bank's contents in cached copies.
ROOM_BANK_KEY = f"rt{'-'.join(f'{t:g}' for t in ROOM_RT60_S)}x{ROOMS_PER_RT60}"
#: Kept after the direct path: up to 0.35 s of tail is plenty at the ``wet`` gains used.
_TAIL_S = 0.35
_DIRECT_S = 0.0025
#: Points (0 Hz to Nyquist) on which the microphone's curve is evaluated, then interpolated.
_GAIN_POINTS = 1025


@dataclass(frozen=True)
class Session:
    """The channel and prosody drift shared by the utterances of one recording session."""

    session: str
    pitch_offset: int
    range_offset: int
    rate_factor: float
    room: int  # index into the room bank; -1 = close talk (no room)
    wet: float
    highpass_hz: float
    lowpass_hz: float
    tilt_db_per_oct: float
    eq_hz: tuple[float, ...]
    eq_db: tuple[float, ...]
    eq_octaves: tuple[float, ...]
    snr_db: float
    noise_slope: float
    level_db: float

    def attrs(self) -> dict[str, str]:
        """Flat manifest attributes (``ch_*``) that say what this session's channel was."""
        eq = ";".join(
            f"{f:.0f}Hz{g:+.1f}dB/{w:.2f}oct" for f, g, w in zip(self.eq_hz, self.eq_db, self.eq_octaves, strict=True)
        )
        return {
            "ch_pitch_offset": str(self.pitch_offset),
            "ch_range_offset": str(self.range_offset),
            "ch_rate_factor": f"{self.rate_factor:.3f}",
            "ch_room": "none" if self.room < 0 else f"{self.room}",
            "ch_wet": f"{self.wet:.3f}",
            "ch_band_hz": f"{self.highpass_hz:.0f}-{self.lowpass_hz:.0f}",
            "ch_tilt_db_per_oct": f"{self.tilt_db_per_oct:+.2f}",
            "ch_eq": eq,
            "ch_snr_db": f"{self.snr_db:.1f}",
            "ch_noise_slope": f"{self.noise_slope:.2f}",
            "ch_level_db": f"{self.level_db:+.1f}",
        }


def draw_session(name: str, rng: np.random.Generator, n_rooms: int) -> Session:
    """One session's channel from ``rng`` (a generator derived from voice and session)."""
    n_bumps = 4
    close_talk = bool(rng.uniform() < 0.25)
    room = -1 if close_talk or n_rooms == 0 else int(rng.integers(n_rooms))
    return Session(
        session=name,
        pitch_offset=int(rng.integers(-6, 7)),
        range_offset=int(rng.integers(-10, 11)),
        rate_factor=float(rng.uniform(0.93, 1.07)),
        room=room,
        wet=float(rng.uniform(0.15, 0.6)) if room >= 0 else 0.0,
        highpass_hz=float(np.exp(rng.uniform(np.log(60.0), np.log(250.0)))),
        lowpass_hz=float(rng.uniform(3800.0, 7600.0)),
        tilt_db_per_oct=float(rng.uniform(-2.0, 2.0)),
        eq_hz=tuple(float(np.exp(rng.uniform(np.log(200.0), np.log(6000.0)))) for _ in range(n_bumps)),
        eq_db=tuple(float(rng.normal(0.0, 3.5)) for _ in range(n_bumps)),
        eq_octaves=tuple(float(rng.uniform(0.4, 1.5)) for _ in range(n_bumps)),
        snr_db=float(rng.uniform(30.0, 50.0)),
        noise_slope=float(rng.uniform(0.0, 2.0)),
        level_db=float(rng.uniform(-8.0, 3.0)),
    )


def room_bank(rate_hz: int) -> list[np.ndarray]:
    """The bank's impulse responses: direct path at sample 0, normalised to a unit direct peak,
    the tail cut at ``_TAIL_S``."""
    from interbias.audio.rooms import direct_path_onset, simulate_room

    out = []
    for rt60 in ROOM_RT60_S:
        for k in range(ROOMS_PER_RT60):
            h, _ = simulate_room(rt60, rate_hz, k)
            onset = direct_path_onset(h, rate_hz)
            h = np.asarray(h[onset : onset + int(_TAIL_S * rate_hz)], dtype=np.float64)
            out.append(h / abs(h[0]))
    return out


def _gain_curve(session: Session, freqs: np.ndarray) -> np.ndarray:
    """Linear magnitude of the microphone: tilt, bumps and band limits at ``freqs`` (Hz)."""
    f = np.maximum(freqs, 1.0)
    octaves = np.log2(f / 1000.0)
    db = session.tilt_db_per_oct * octaves
    for fc, g, w in zip(session.eq_hz, session.eq_db, session.eq_octaves, strict=True):
        db = db + g * np.exp(-0.5 * (np.log2(f / fc) / w) ** 2)
    mag = 10.0 ** (db / 20.0)
    mag *= (f / session.highpass_hz) ** 2 / np.sqrt(1.0 + (f / session.highpass_hz) ** 4)
    mag /= np.sqrt(1.0 + (f / session.lowpass_hz) ** 8)
    mag[freqs <= 0] = 0.0
    return mag


def apply(
    x: np.ndarray,
    session: Session,
    rooms: list[np.ndarray],
    rng: np.random.Generator,
    rate_hz: int,
    *,
    in_rate_hz: int | None = None,
) -> tuple[np.ndarray, dict[str, str]]:
    """``x`` recorded through ``session``: room, background, microphone, level, at ``rate_hz``.

    ``x`` at ``in_rate_hz`` (default ``rate_hz``) is resampled in the same frequency-domain pass
    (an ideal low-pass at the lower Nyquist frequency; the length scales with the rate).
    Returns float64 samples and per-utterance attributes (``peak_limit_db``)."""
    from fractions import Fraction

    from scipy.fft import irfft, next_fast_len, rfft

    x = np.asarray(x, dtype=np.float64)
    ratio = Fraction(int(in_rate_hz or rate_hz), int(rate_hz))  # in/out = a/b, FFT lengths a·k and b·k
    a, b = ratio.numerator, ratio.denominator
    n = int(round(len(x) * b / a))
    tail = len(rooms[session.room]) if session.room >= 0 else 0
    # room for the room's tail and the zero-phase filters' two-sided responses
    k = next_fast_len(-(-(n + max(tail, 4096)) // b), real=True)
    nfft = b * k
    spec = rfft(x, a * k)
    if a != b:
        spec = spec[: nfft // 2 + 1] * (b / a)
        if nfft % 2 == 0:
            spec[-1] = spec[-1].real  # the new Nyquist bin of a real signal
    if session.room >= 0:
        h = rooms[session.room].copy()
        h[int(_DIRECT_S * rate_hz) :] *= session.wet
        spec *= rfft(h, nfft)
    speech = active_frame_power(irfft(spec, nfft)[:n], rate_hz)
    freqs = np.fft.rfftfreq(nfft, 1.0 / rate_hz)
    noise = rng.standard_normal(len(freqs)) + 1j * rng.standard_normal(len(freqs))
    noise *= np.maximum(freqs, 20.0) ** (-session.noise_slope / 2.0)
    noise[0] = 0.0
    power = np.abs(noise) ** 2
    nyquist = float(power[-1]) if nfft % 2 == 0 else 0.0  # an even length's last bin counts once
    noise_power = (2.0 * float(np.sum(power[1:])) - nyquist) / nfft**2  # Parseval
    noise *= np.sqrt(speech / noise_power * 10.0 ** (-session.snr_db / 10.0))
    grid = np.linspace(0.0, rate_hz / 2.0, _GAIN_POINTS)  # the curve is smooth: interpolate it
    y = irfft((spec + noise) * np.interp(freqs, grid, _gain_curve(session, grid)), nfft)[:n]
    y *= 10.0 ** (session.level_db / 20.0)
    peak = float(np.max(np.abs(y))) if n else 0.0
    limit_db = 0.0
    if peak > 0.98:
        limit_db = 20.0 * np.log10(0.98 / peak)
        y *= 0.98 / peak
    return y, {"peak_limit_db": f"{limit_db:.2f}"}
