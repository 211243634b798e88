"""Packet loss: realised rates and bursts match the model on long inputs; lost frames are
exactly the zeroed (or repeated) frames the record lists."""

from __future__ import annotations

import numpy as np
import pytest

from interbias.operators import OpContext, make_operator
from interbias.operators.packet_loss import burst_lengths
from interbias.utils.errors import OperatorError
from interbias.utils.seeding import derive_rng

RATE = 16000


def ctx(seed: str) -> OpContext:
    return OpContext(RATE, "u", "s", derive_rng(seed))


def long_input(seconds: int) -> np.ndarray:
    """No zero samples anywhere, so a zeroed frame is unambiguous."""
    rng = derive_rng("pl-input")
    return (0.5 + 0.1 * rng.random(seconds * RATE)).astype(np.float32)


@pytest.mark.parametrize("loss_rate", [0.02, 0.1, 0.3])
def test_iid_rate_and_bursts(loss_rate: float) -> None:
    x = long_input(300)  # 15 000 frames
    y, rec = make_operator("packet_loss", {"rate": loss_rate}).apply(x, ctx(f"iid{loss_rate}"))
    frames = y.reshape(-1, 320)
    zeroed = np.flatnonzero((frames == 0).all(axis=1))
    assert zeroed.tolist() == rec["lost_frames"] and rec["n_frames"] == 15000
    realised = len(zeroed) / 15000
    assert realised == rec["loss_rate_realised"]
    assert realised == pytest.approx(loss_rate, abs=4 * np.sqrt(loss_rate * (1 - loss_rate) / 15000))
    # untouched frames are the input's
    kept = np.setdiff1d(np.arange(15000), zeroed)
    assert np.array_equal(frames[kept], x.reshape(-1, 320)[kept])
    # i.i.d. bursts are geometric with mean 1 / (1 - rate)
    lost = np.zeros(15000, bool)
    lost[zeroed] = True
    assert burst_lengths(lost).mean() == pytest.approx(1 / (1 - loss_rate), rel=0.1)


@pytest.mark.parametrize(("loss_rate", "burst"), [(0.05, 2.0), (0.1, 3.0), (0.2, 5.0)])
def test_gilbert_elliott_rate_and_mean_burst(loss_rate: float, burst: float) -> None:
    x = long_input(600)  # 30 000 frames
    op = make_operator("packet_loss", {"rate": loss_rate, "model": "gilbert_elliott", "burst_frames": burst})
    y, rec = op.apply(x, ctx(f"ge{loss_rate}"))
    assert rec["loss_rate_realised"] == pytest.approx(loss_rate, rel=0.15)
    assert rec["mean_burst_frames"] == pytest.approx(burst, rel=0.15)
    lost = (y.reshape(-1, 320) == 0).all(axis=1)
    assert burst_lengths(lost).mean() == pytest.approx(rec["mean_burst_frames"])


def test_repeat_concealment_copies_the_last_received_frame() -> None:
    x = long_input(20)
    y, rec = make_operator("packet_loss", {"rate": 0.3, "concealment": "repeat", "frame_ms": 10}).apply(x, ctx("rep"))
    flen = rec["frame_samples"]
    assert flen == 160
    lost = set(rec["lost_frames"])
    last = None
    for i in range(rec["n_frames"]):
        seg = y[i * flen : (i + 1) * flen]
        if i not in lost:
            assert np.array_equal(seg, x[i * flen : (i + 1) * flen])
            last = seg
        elif last is None:
            assert not seg.any()
        else:
            assert np.array_equal(seg, last)


def test_partial_last_frame_and_zero_rate() -> None:
    x = long_input(2)[:16100]  # 50 full frames + 100 samples
    y, rec = make_operator("packet_loss", {"rate": 0.0}).apply(x, ctx("z"))
    assert rec["n_frames"] == 51 and rec["n_lost"] == 0 and np.array_equal(y, x)


def test_same_seed_same_mask_other_seed_other_mask() -> None:
    x = long_input(10)
    op = make_operator("packet_loss", {"rate": 0.2, "model": "gilbert_elliott"})
    a, b, c = (op.apply(x, ctx(s))[0] for s in ("a", "a", "b"))
    assert a.tobytes() == b.tobytes() and a.tobytes() != c.tobytes()


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"rate": -0.1}, r"packet_loss.rate: -0.1 is outside \[0, 1\)"),
        ({"rate": 1.0}, r"packet_loss.rate: 1.0 is outside \[0, 1\)"),
        ({"rate": 0.1, "burst_frames": 0.5}, r"packet_loss.burst_frames: 0.5 is outside \[1, 1000\] frames"),
        ({"rate": 0.1, "frame_ms": 0}, r"packet_loss.frame_ms: 0.0 ms is outside \[1, 1000\]"),
        (
            {"rate": 0.8, "model": "gilbert_elliott", "burst_frames": 2},
            r"packet_loss.rate: 0.8 is above 0.667, the highest Gilbert–Elliott loss rate with burst_frames=2",
        ),
        ({"rate": 0.1, "model": "markov"}, r"packet_loss.model: 'markov' is not one of iid, gilbert_elliott"),
    ],
)
def test_invalid_parameters(params: dict, message: str) -> None:
    with pytest.raises(OperatorError, match=message):
        make_operator("packet_loss", params)
