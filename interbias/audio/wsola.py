"""WSOLA: waveform-similarity overlap-add time-scale modification (Verhelst & Roelands, 1993),
the one implementation behind the ``time_scale`` operator (speaking rate) and the corpus's
voice-conversion proxy (pitch shift = stretch + resample).

Output frames of ``frame_s`` (Hann, periodic, which sum to one at half overlap) are laid
down every ``frame_s / 2``; each is read from the input near its nominal position
``(k − 1) · hop / stretch``, shifted by up to ± ``tolerance_s`` to where it best continues the
previous frame (largest *normalised* cross-correlation). Copying whole waveform periods keeps
the pitch and the spectral envelope; only the timing changes.
"""

from __future__ import annotations

import numpy as np

from interbias.utils.errors import OperatorError


def wsola(
    x: np.ndarray,
    stretch: float,
    sample_rate_hz: int,
    *,
    frame_s: float = 0.03,
    tolerance_s: float = 0.01,
    match: str = "normalised",
) -> np.ndarray:
    """Time-stretch ``x`` by ``stretch`` (output length round(len · stretch)) without
    changing its pitch: Hann frames at 50 % overlap, each taken within ±tolerance of its
    nominal input position where it best continues the previous frame: largest normalised
    cross-correlation (``match="normalised"``, the voice-conversion proxy) or largest raw
    cross-correlation (``"raw"``, the time_scale operator: it favours loud segments, so a
    burst's onset is never copied twice into a stretched gap)."""
    if match not in ("normalised", "raw"):
        raise OperatorError(f"wsola: match must be normalised or raw, got {match!r}")
    from scipy.signal import get_window  # imported here: scipy.signal costs a second at start-up

    if stretch <= 0:
        raise OperatorError(f"wsola: stretch must be positive, got {stretch}")
    x = np.asarray(x, dtype=np.float64)
    n = int(round(frame_s * sample_rate_hz))
    n += n % 2
    hop = n // 2
    tol = int(round(tolerance_s * sample_rate_hz))
    win = get_window("hann", n, fftbins=True)
    n_in = len(x)
    n_out = int(round(n_in * stretch))
    n_frames = int(np.ceil(n_out / hop)) + 2
    pad = tol + n
    span = int(np.ceil(n_frames * hop / stretch)) + 1
    xp = np.zeros(pad + max(n_in, span) + 2 * n + 2 * tol)
    xp[pad : pad + n_in] = x
    energy = np.concatenate([[0.0], np.cumsum(xp**2)])
    y = np.zeros(n_frames * hop + n)
    prev = -1
    for k in range(n_frames):
        nominal = pad + int(round((k - 1) * hop / stretch))
        pos = nominal
        if prev >= 0:
            natural = prev + hop
            template = xp[natural : natural + n]
            region = xp[nominal - tol : nominal + tol + n]
            corr = np.correlate(region, template, mode="valid")
            norms = np.sqrt(
                energy[nominal - tol + n : nominal + tol + n + 1] - energy[nominal - tol : nominal + tol + 1]
            )
            if match == "raw":
                pos = nominal - tol + int(np.argmax(corr)) if np.any(corr) else nominal
            elif corr.size and np.any(norms > 0):
                score = np.where(norms > 1e-12, corr / np.maximum(norms, 1e-12), -np.inf)
                pos = nominal - tol + int(np.argmax(score))
        y[k * hop : k * hop + n] += win * xp[pos : pos + n]
        prev = pos
    return y[hop : hop + n_out]
