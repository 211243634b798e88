"""The chain's output is checked like an input file: silence made by an operator is a counted
failure, never a measurement.

Levels are mean squares of 20 ms frames in dB re full scale (a sample of 1.0), the framing of
:func:`interbias.operators.levels.active_mask`. The input's speech level ``L_in`` is its
active-speech power (frames within 40 dB of its loudest). The output is **near-silent** when no
output frame reaches the floor ``max(L_in - RELATIVE_FLOOR_DB, ABSOLUTE_FLOOR_DBFS)``:

- ``RELATIVE_FLOOR_DB`` = 60 dB: the 40 dB range that defines active speech plus a 20 dB
  margin. A frame that far below the input's speech holds no speech at the input's level; no
  built-in operator attenuates that much (noise adds energy, codecs, reverb and time scaling keep
  the level within a few dB, packet loss zeroes whole frames), so only silence trips it.
- ``ABSOLUTE_FLOOR_DBFS`` = -90 dBFS: about the quantisation noise of 16-bit audio (one LSB is
  -90.3 dBFS); an output that never rises above it holds nothing a stored file could keep. The
  front end refuses an *input* under the same floor before any chain
  (:func:`interbias.audio.frontend.check_speech_floor`), so whether an utterance holds speech
  is decided once, the same in every cell.

The verdict is the same on every path: the SV executors check each chain's output before
embedding it, the embedding cache serves only entries stored under the current checks
(:data:`interbias.embedding.cache.AUDIO_CHECKS`), and the countermeasure scoring path
(:mod:`interbias.cm.scoring`) runs the same check.

An utterance with at least one frame of signal passes (a heavily degraded utterance is a
measurement of that degradation); an all-zero or constant output always fails.
"""

from __future__ import annotations

import numpy as np

from interbias.audio.frontend import SPEECH_FLOOR_DBFS
from interbias.operators.levels import FRAME_S, active_mask, active_power
from interbias.utils.errors import OperatorError

RELATIVE_FLOOR_DB = 60.0
#: The input's own floor (:func:`interbias.audio.frontend.check_speech_floor`): an input under
#: it never reaches a chain.
ABSOLUTE_FLOOR_DBFS = SPEECH_FLOOR_DBFS


def _db(power: float) -> float:
    return float(10 * np.log10(power)) if power > 0 else float("-inf")


def frame_levels_db(x: np.ndarray, sample_rate_hz: int) -> np.ndarray:
    """Mean square of each whole 20 ms frame of ``x`` (all of ``x`` when shorter), dB re full scale."""
    flen = min(len(x), max(1, int(round(FRAME_S * sample_rate_hz))))
    n = len(x) // flen
    power = (x[: n * flen].astype(np.float64).reshape(n, flen) ** 2).mean(axis=1)
    with np.errstate(divide="ignore"):
        return 10 * np.log10(power)


def input_speech_db(before: np.ndarray, sample_rate_hz: int) -> float:
    """Active-speech level (dBFS) of a chain's input, as :func:`check_chain_output` measures it
    (computed once per input when several chains share it)."""
    try:
        return _db(active_power(before, active_mask(before, sample_rate_hz)))
    except OperatorError:  # a silent input is refused by the front end before the chain runs
        return ABSOLUTE_FLOOR_DBFS


def check_chain_output(
    before: np.ndarray, after: np.ndarray, sample_rate_hz: int, *, speech_db: float | None = None
) -> None:
    """Raise :class:`OperatorError` when the chain turned ``before`` (the front end's input to
    the chain) into near-silence ``after`` (see module docs for the floor and its reasons);
    ``speech_db``: :func:`input_speech_db` of ``before`` when already known."""
    span = float(np.max(after) - np.min(after)) if len(after) else 0.0
    if span == 0.0:
        raise OperatorError("the chain's output is silence (every sample is the same value): nothing to embed")
    if speech_db is None:
        speech_db = input_speech_db(before, sample_rate_hz)
    floor = max(speech_db - RELATIVE_FLOOR_DB, ABSOLUTE_FLOOR_DBFS)
    loudest = float(frame_levels_db(after, sample_rate_hz).max())
    if loudest < floor:
        raise OperatorError(
            f"the chain's output is near-silence: its loudest 20 ms frame is {loudest:.1f} dBFS, under the "
            f"floor {floor:.1f} dBFS (input speech {speech_db:.1f} dBFS - {RELATIVE_FLOOR_DB:g} dB, at least "
            f"{ABSOLUTE_FLOOR_DBFS:g} dBFS): nothing to embed"
        )
