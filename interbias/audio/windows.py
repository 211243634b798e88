"""Long recordings embedded by windows (``frontend: {long_audio: window, window_s, hop_s}``).

A waveform longer than ``window_s`` is cut into windows of ``window_s`` starting every
``hop_s`` (the last one ending at the waveform's end, so every sample is covered); its
embedding is the mean of the windows' embeddings, rescaled to unit length (mean pooling). An input shorter
than ``window_s`` is refused by the front end (:func:`interbias.audio.frontend.prepare`: one
counted failure per utterance, the same in every cell); a chain output of at most ``window_s``
(after a crop, say) is one window: itself. The front end does not truncate at
``max_duration_s`` in this mode.

Bounds: ``hop_s`` lies in [``window_s`` / :data:`MAX_OVERLAP`, ``window_s``] (a longer hop would
skip audio between windows; a shorter one stacks more than :data:`MAX_OVERLAP` windows on each
sample), and a waveform needing more than :data:`MAX_WINDOWS` windows is refused (one counted
failure per utterance, :func:`too_many_windows`) rather than embedded in one call of that size.
"""

from __future__ import annotations

import numpy as np

LONG_AUDIO = ("truncate", "window")
#: Most windows that may cover one sample: ``hop_s`` >= ``window_s`` / MAX_OVERLAP.
MAX_OVERLAP = 10
#: Most windows of one waveform (2,048 windows of 3 s at 16 kHz: 393 MB of float32 input).
MAX_WINDOWS = 2048


def window_count(n: int, sample_rate_hz: int, window_s: float, hop_s: float) -> int:
    """``len(window_spans(...))`` without building the spans."""
    win = int(round(window_s * sample_rate_hz))
    hop = max(1, int(round(hop_s * sample_rate_hz)))
    if n <= win:
        return 1
    full = (n - win) // hop + 1
    return full + ((full - 1) * hop + win < n)


def too_many_windows(n: int, sample_rate_hz: int, window_s: float, hop_s: float) -> str | None:
    """Why a waveform of ``n`` samples is not embedded by windows (more than :data:`MAX_WINDOWS`),
    or ``None``."""
    count = window_count(n, sample_rate_hz, window_s, hop_s)
    if count <= MAX_WINDOWS:
        return None
    return (
        f"{n / sample_rate_hz:.1f} s of audio needs {count} windows of {window_s:g} s every {hop_s:g} s, more than "
        f"{MAX_WINDOWS} (frontend.long_audio: window); raise hop_s or window_s, or cut the recording"
    )


def window_spans(n: int, sample_rate_hz: int, window_s: float, hop_s: float) -> list[tuple[int, int]]:
    """(start, end) sample spans of the windows of an ``n``-sample waveform (see module docs)."""
    win = int(round(window_s * sample_rate_hz))
    hop = max(1, int(round(hop_s * sample_rate_hz)))
    if n <= win:
        return [(0, n)]
    spans = [(s, s + win) for s in range(0, n - win + 1, hop)]
    if spans[-1][1] < n:
        spans.append((n - win, n))
    return spans


def pool(vectors: list[np.ndarray]) -> np.ndarray:
    """Mean of window embeddings, rescaled to unit length (float32)."""
    m = np.mean(np.stack(vectors).astype(np.float64), axis=0)
    norm = float(np.linalg.norm(m))
    return (m / norm if norm > 0 else m).astype(np.float32)
