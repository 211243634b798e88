"""Time scale: duration divided by the factor, pitch kept, events moved to t / factor."""

from __future__ import annotations

import numpy as np
import pytest

from interbias.operators import OpContext, make_operator, parse_chain
from interbias.utils.errors import OperatorError
from interbias.utils.seeding import derive_rng

RATE = 16000


def tone_bursts(f0: float = 150.0, seconds: float = 4.0) -> tuple[np.ndarray, np.ndarray]:
    """A harmonic complex (F0 ``f0``, 10 harmonics) in 0.3 s bursts starting at known times."""
    t = np.arange(int(seconds * RATE)) / RATE
    tone = sum(np.sin(2 * np.pi * k * f0 * t) / k for k in range(1, 11))
    onsets = np.arange(0.25, seconds - 0.4, 0.6)
    env = np.zeros_like(t)
    for o in onsets:
        env[(t >= o) & (t < o + 0.3)] = 1.0
    return (0.3 * tone * env).astype(np.float32), onsets


def dominant_f0(y: np.ndarray) -> float:
    """Frequency of the largest spectral peak, refined by parabolic interpolation."""
    spec = np.abs(np.fft.rfft(y * np.hanning(len(y)), n=8 * len(y)))
    k = int(np.argmax(spec))
    a, b, c = np.log(spec[k - 1 : k + 2])
    return (k + 0.5 * (a - c) / (a - 2 * b + c)) * RATE / (8 * len(y))


def detected_onsets(y: np.ndarray) -> np.ndarray:
    env = np.convolve(np.abs(y), np.ones(160) / 160, mode="same")
    on = env > 0.5 * env.max()
    return np.flatnonzero(np.diff(on.astype(int)) == 1) / RATE


@pytest.mark.parametrize("factor", [0.5, 0.7, 0.85, 1.15, 1.3, 2.0])
def test_duration_pitch_and_timing(factor: float) -> None:
    x, onsets = tone_bursts()
    chain = parse_chain([{"op": "time_scale", "factor": factor}], where="t")
    y, rec = chain.apply(x, utterance_sha256="u", make_ctx=lambda rng: OpContext(RATE, "u", "s", rng))
    ratio = len(y) / len(x)
    assert ratio == pytest.approx(1 / factor, rel=0.02)
    assert rec[0]["duration_ratio"] == pytest.approx(ratio)
    assert dominant_f0(y) == pytest.approx(dominant_f0(x), rel=0.01)
    found, original = detected_onsets(y), detected_onsets(x)
    assert len(found) == len(original) == len(onsets)
    # events move to t / factor: the line through (input time, output time) has slope
    # 1 / factor; WSOLA shifts every event by less than one 25 ms frame
    slope, _intercept = np.polyfit(original, found, 1)
    assert slope == pytest.approx(1 / factor, rel=0.01)
    np.testing.assert_allclose(found, original / factor, atol=0.025)


def test_factor_one_is_nearly_transparent() -> None:
    x, _ = tone_bursts(f0=173.0)
    y, _ = make_operator("time_scale", {"factor": 1.0}).apply(x, OpContext(RATE, "u", "s", derive_rng("t")))
    assert len(y) == len(x)
    inner = slice(RATE // 10, -RATE // 10)
    assert np.corrcoef(x[inner], y[inner])[0, 1] > 0.99


@pytest.mark.parametrize("factor", [0.4, 2.5, 0.0])
def test_factor_outside_range(factor: float) -> None:
    with pytest.raises(OperatorError, match=rf"time_scale.factor: {factor} is outside \[0.5, 2.0\]"):
        make_operator("time_scale", {"factor": factor})
