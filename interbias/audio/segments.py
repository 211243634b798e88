"""The part of a file the front end reads: a segment's samples, and digital-silence padding.

A manifest row may name a span of its recording (``offset`` and ``duration`` in seconds, NeMo's
convention). :func:`span_samples` turns it into samples the way Lhotse's
``compute_num_samples`` does: ``offset × rate`` and ``duration × rate`` are each rounded to
8 decimals, then to the nearest whole sample with halves rounded up. The segment is samples
``[first, first + n)`` of the decoded file, so a segment of ``duration`` holds the same number
of samples wherever it starts; a span that starts at or reaches past the end of the file is
refused, never shortened.

Digital silence is a run of samples within :data:`DIGITAL_SILENCE` of zero (one 16-bit step):
:func:`padding` counts it at either end of a file, :func:`trim_padding` removes it (the front
end's ``trim_silence`` option).
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

import numpy as np

from interbias.utils.errors import AudioError

#: Magnitude (full scale 1.0) at or under which a sample is digital silence: one step of 16-bit PCM.
DIGITAL_SILENCE = 1.0 / 32768


def nearest_sample(seconds: float, rate_hz: int) -> int:
    """``seconds × rate_hz`` rounded to 8 decimals, then to the nearest integer, halves up
    (Lhotse's ``compute_num_samples``)."""
    return int(Decimal(round(seconds * rate_hz, 8)).quantize(Decimal(0), rounding=ROUND_HALF_UP))


def span_samples(
    offset_s: float | None, duration_s: float | None, rate_hz: int, n_frames: int, *, where: str
) -> tuple[int, int]:
    """(first sample, number of samples) of the span ``offset_s`` + ``duration_s`` of a file of
    ``n_frames`` samples at ``rate_hz`` (offset ``None``: 0; duration ``None``: to the end).
    A span that starts at or past the end, reaches past it or holds no sample is an
    :class:`AudioError` naming ``where``."""
    offset = float(offset_s or 0.0)
    first = nearest_sample(offset, rate_hz)
    total = n_frames / rate_hz
    if first >= n_frames:
        raise AudioError(f"{where}: segment offset {offset:g} s is at or past the end of the {total:.3f} s file")
    n = n_frames - first if duration_s is None else nearest_sample(float(duration_s), rate_hz)
    if n <= 0:
        raise AudioError(f"{where}: segment duration {duration_s:g} s holds no sample at {rate_hz} Hz")
    if first + n > n_frames:
        raise AudioError(
            f"{where}: segment {offset:g} s + {duration_s:g} s reaches {(first + n - n_frames) / rate_hz:.3f} s past "
            f"the end of the {total:.3f} s file"
        )
    return first, n


def padding(x: np.ndarray) -> tuple[int, int]:
    """(leading, trailing) samples of digital silence of mono ``x``: how many samples at each end
    lie within :data:`DIGITAL_SILENCE` of zero (all of ``x`` as leading when it is silence
    throughout, trailing 0)."""
    loud = np.flatnonzero(np.abs(x) > DIGITAL_SILENCE)
    if loud.size == 0:
        return len(x), 0
    return int(loud[0]), int(len(x) - 1 - loud[-1])


def trim_padding(x: np.ndarray) -> tuple[np.ndarray, int, int]:
    """``x`` without its leading and trailing digital silence, and the samples removed at each
    end; audio that is silence throughout is returned whole (the front end's signal checks
    refuse it with their own reason)."""
    lead, trail = padding(x)
    if lead == len(x):
        return x, 0, 0
    return x[lead : len(x) - trail], lead, trail
