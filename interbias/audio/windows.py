"""Long recordings embedded by windows (``frontend: {long_audio: window, window_s, hop_s}``).

A waveform longer than ``window_s`` is cut into windows of ``window_s`` starting every
``hop_s`` (the last one ending at the waveform's end, so every sample is covered); its
embedding is the mean of the windows' embeddings, rescaled to unit length (mean pooling). An input shorter
than ``window_s`` is refused by the front end (:func:`interbias.audio.frontend.prepare`: one
counted failure per utterance, the same in every cell); a chain output of at most ``window_s``
(after a crop, say) is one window: itself. The front end does not truncate at
``max_duration_s`` in this mode.
"""

from __future__ import annotations

import numpy as np

LONG_AUDIO = ("truncate", "window")


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
