"""Shoebox rooms for reverberation (the reverb operator's ``rt60_s`` bank and the synthetic
corpus's session rooms): pyroomacoustics' image-source method with wall absorption and
reflection order from Sabine's formula (``inverse_sabine``); room sizes and source/microphone
positions from generators derived from (RT60, rate, room index). Because the image method
overshoots long RT60s, each room is re-simulated (up to 4 times) with the requested RT60 scaled
by target/measured until its measured RT60 (Schroeder T30) is within 10 % of the target.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from interbias.utils.errors import OperatorError
from interbias.utils.seeding import derive_rng

#: Bump when the room simulation changes: cached banks of older versions are not reused.
BANK_VERSION = 1
#: Accept a simulated room when its measured RT60 is within this share of the target.
RT60_TOLERANCE = 0.10
_MAX_TRIES = 4


def schroeder_rt60(h: np.ndarray, rate_hz: int, decay_db: float = 30.0) -> float:
    """RT60 from the Schroeder energy-decay curve EDC(t) = Σ_{τ≥t} h(τ)²: the least-squares
    line through EDC between −5 dB and −(5 + decay_db) dB, extrapolated to −60 dB."""
    energy = np.cumsum(np.asarray(h, np.float64)[::-1] ** 2)[::-1]
    if energy[0] <= 0:
        raise OperatorError("impulse response is silent: no RT60")
    edc = 10 * np.log10(np.maximum(energy / energy[0], 1e-300))
    sel = np.flatnonzero((edc <= -5.0) & (edc >= -5.0 - decay_db))
    if len(sel) < 2 or edc.min() > -5.0 - decay_db:
        raise OperatorError(f"impulse response does not decay by {5 + decay_db:g} dB: cannot measure RT60")
    t = sel / rate_hz
    slope, _ = np.polyfit(t, edc[sel], 1)
    return float(-60.0 / slope)


def direct_path_onset(h: np.ndarray, rate_hz: int) -> int:
    """Index of the direct path in a measured IR: the first sample reaching half the largest
    magnitude, then the largest sample within the next 1 ms. (An early reflection can exceed
    the sampled direct path, so the global maximum is not used.)"""
    mag = np.abs(np.asarray(h, np.float64))
    if not mag.any():
        raise OperatorError("impulse response is silent")
    first = int(np.argmax(mag >= 0.5 * mag.max()))
    return first + int(np.argmax(mag[first : first + max(1, int(0.001 * rate_hz)) + 1]))


@dataclass(frozen=True)
class SimulatedRoom:
    dims_m: list[float]
    source_m: list[float]
    mic_m: list[float]
    absorption: float
    max_order: int
    rt60_requested_s: float
    rt60_measured_s: float
    #: Where the direct sound arrives: distance / c · rate plus pyroomacoustics' fixed delay
    #: of half its fractional-delay filter.
    direct_path_sample: int


def simulate_room(rt60_s: float, rate_hz: int, index: int) -> tuple[np.ndarray, SimulatedRoom]:
    """One shoebox room of the bank and its impulse response (see the module docstring)."""
    try:
        import pyroomacoustics as pra
    except ImportError as exc:
        raise OperatorError(f"reverb: rt60_s needs pyroomacoustics to simulate rooms ({exc})") from exc

    rng = derive_rng("rir-bank", BANK_VERSION, rt60_s, rate_hz, index)
    for _ in range(20):  # draw rooms until Sabine's formula has a solution for this RT60
        dims = np.array([rng.uniform(4.0, 10.0), rng.uniform(3.0, 7.0), rng.uniform(2.5, 4.0)])
        try:
            pra.inverse_sabine(rt60_s, dims)
            break
        except ValueError:
            continue
    else:
        raise OperatorError(f"reverb: no shoebox room of 4–10 × 3–7 × 2.5–4 m has RT60 {rt60_s} s")
    while True:
        src = [float(rng.uniform(0.5, d - 0.5)) for d in dims]
        mic = [float(rng.uniform(0.5, d - 0.5)) for d in dims]
        if np.linalg.norm(np.subtract(src, mic)) >= 1.0:
            break
    requested = rt60_s
    best: tuple[float, np.ndarray, SimulatedRoom] | None = None
    for _ in range(_MAX_TRIES):
        try:
            absorption, max_order = pra.inverse_sabine(requested, dims)
        except ValueError:
            break
        room = pra.ShoeBox(dims, fs=rate_hz, materials=pra.Material(float(absorption)), max_order=int(max_order))
        room.add_source(src)
        room.add_microphone(mic)
        room.compute_rir()
        h = np.asarray(room.rir[0][0], np.float64)
        measured = schroeder_rt60(h, rate_hz)
        distance = float(np.linalg.norm(np.subtract(src, mic)))
        direct = int(round(distance / room.c * rate_hz)) + pra.constants.get("frac_delay_length") // 2
        info = SimulatedRoom(
            dims_m=[float(d) for d in dims],
            source_m=src,
            mic_m=mic,
            absorption=float(absorption),
            max_order=int(max_order),
            rt60_requested_s=float(requested),
            rt60_measured_s=measured,
            direct_path_sample=direct,
        )
        error = abs(measured - rt60_s) / rt60_s
        if best is None or error < best[0]:
            best = (error, h, info)
        if error <= RT60_TOLERANCE:
            break
        requested *= rt60_s / measured
    if best is None:
        raise OperatorError(f"reverb: could not simulate a room with RT60 {rt60_s} s")
    return best[1], best[2]
