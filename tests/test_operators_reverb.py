"""Reverberation: the simulated bank has the RT60 it is named for (measured independently
from each impulse response), is cached, and the output is aligned and level-matched."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from test_operators import speechlike

from interbias.operators import OpContext, make_operator
from interbias.operators import reverb as R
from interbias.utils.errors import OperatorError
from interbias.utils.seeding import derive_rng

RATE = 16000


def t30(h: np.ndarray, sample_rate_hz: int) -> float:
    """Independent RT60 (ISO 3382 T30): Schroeder backward integration of h², least-squares
    line over the energy-decay curve between −5 and −35 dB, extrapolated to −60 dB."""
    edc = np.flip(np.cumsum(np.flip(h.astype(np.float64) ** 2)))
    edc_db = 10 * np.log10(edc / edc[0])
    i5 = np.argmax(edc_db <= -5)
    i35 = np.argmax(edc_db <= -35)
    t = np.arange(i5, i35) / sample_rate_hz
    slope = np.linalg.lstsq(np.stack([t, np.ones_like(t)], 1), edc_db[i5:i35], rcond=None)[0][0]
    return -60.0 / slope


def ctx(seed: str = "r", cache_dir: Path | None = None) -> OpContext:
    return OpContext(RATE, "u", "s", derive_rng(seed), cache_dir=cache_dir)


@pytest.fixture(scope="module")
def banks(tmp_path_factory) -> dict[float, tuple[list[np.ndarray], list[dict]]]:
    cache = tmp_path_factory.mktemp("rir-cache")
    return {rt: R.room_bank(rt, RATE, 3, cache) for rt in (0.3, 0.6)} | {"cache": cache}  # type: ignore[operator]


@pytest.mark.parametrize("target", [0.3, 0.6])
def test_bank_rt60_within_25_percent(banks, target: float) -> None:
    from pyroomacoustics.experimental import measure_rt60

    irs, rooms = banks[target]
    assert len(irs) == 3
    for h, room in zip(irs, rooms, strict=True):
        assert t30(h, RATE) == pytest.approx(target, rel=0.25)
        assert measure_rt60(h, RATE, decay_db=30) == pytest.approx(target, rel=0.25)
        assert room["rt60_measured_s"] == pytest.approx(t30(h, RATE), rel=0.02)
    # the rooms differ (a bank, not one room three times)
    assert len({tuple(r["dims_m"]) for r in rooms}) == 3


def test_bank_is_cached_on_disk(banks, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = banks["cache"]
    path = R.bank_path(cache, 0.3, RATE, 3)
    assert path.is_file()
    monkeypatch.setattr(R, "_banks", {})

    def no_simulation(*args, **kwargs):
        raise AssertionError("the cached bank should have been read")

    monkeypatch.setattr(R, "simulate_room", no_simulation)
    irs, rooms = R.room_bank(0.3, RATE, 3, cache)
    for a, b in zip(irs, banks[0.3][0], strict=True):
        assert np.array_equal(a, b)
    assert rooms == banks[0.3][1]


def click(n: int, at: int) -> np.ndarray:
    """One unit click: the reverberant output is the (aligned, scaled) impulse response."""
    x = np.zeros(n, np.float32)
    x[at] = 1.0
    return x


def test_direct_path_lands_on_the_click(banks) -> None:
    op = make_operator("reverb", {"rt60_s": 0.6, "bank_size": 3})
    for seed, at in (("a", 1000), ("b", 5000), ("c", 17)):
        y, rec = op.apply(click(2 * RATE, at), ctx(seed, banks["cache"]))
        room = rec["room"]
        distance = np.linalg.norm(np.subtract(room["source_m"], room["mic_m"]))
        # the direct sound, delayed by distance / c in the room, comes out at the click
        assert rec["direct_path_sample"] - 40 == pytest.approx(distance / 343.0 * RATE, abs=0.5)
        direct = np.abs(y[at - 1 : at + 2]).max()
        assert abs(y[at]) == direct and direct >= 0.5 * np.abs(y).max()
        # nothing arrives before it beyond the 81-tap fractional-delay filter (only low-level
        # pre-ringing of the simulator's high-pass filter, no reflection)
        assert np.abs(y[: max(0, at - 41)]).max(initial=0.0) < 0.2 * direct


def test_simulated_reverb_is_aligned_level_matched_and_recorded(banks) -> None:
    x = speechlike("rev", 3 * RATE)
    op = make_operator("reverb", {"rt60_s": 0.3, "bank_size": 3})
    used = set()
    for seed in ("a", "b", "c", "d", "e"):
        y, rec = op.apply(x, ctx(seed, banks["cache"]))
        assert len(y) == len(x) and y.dtype == np.float32
        assert np.sqrt(np.mean(y.astype(np.float64) ** 2)) == pytest.approx(
            np.sqrt(np.mean(x.astype(np.float64) ** 2)), rel=1e-4
        )
        # the output is the recorded IR applied: rebuild it independently
        h = banks[0.3][0][int(rec["ir"].rsplit("/", 1)[1])]
        peak = rec["direct_path_sample"]
        n_fft = len(x) + len(h) - 1  # linear convolution through numpy's FFT
        rebuilt = np.fft.irfft(np.fft.rfft(x, n_fft) * np.fft.rfft(h, n_fft), n_fft)[peak : peak + len(x)]
        rebuilt *= np.sqrt(np.mean(x.astype(np.float64) ** 2) / np.mean(rebuilt**2))
        np.testing.assert_allclose(y, rebuilt, atol=1e-4)
        used.add(rec["ir"])
        assert rec["room"]["rt60_measured_s"] == pytest.approx(0.3, rel=0.25)
    assert len(used) > 1
    # reverberation changes the signal: the tail smears it
    assert np.corrcoef(x, y)[0, 1] < 0.95


def test_user_impulse_responses(tmp_path: Path) -> None:
    d = tmp_path / "irs"
    d.mkdir()
    rng = derive_rng("ir")
    h = np.zeros(4000)
    h[100] = 0.8  # direct path at sample 100 (8 kHz file)
    h[101:] += 0.03 * rng.standard_normal(3899) * np.exp(-np.arange(3899) / 400)
    sf.write(d / "hall.wav", np.stack([h, -h], 1), 8000)  # 2 channels: the first is used
    y, rec = make_operator("reverb", {"ir_dir": str(d)}).apply(click(2 * RATE, 3000), ctx())
    assert rec["ir"] == "hall.wav" and rec["ir_rate_hz"] == 8000 and rec["channels"] == 2
    assert len(y) == 2 * RATE
    assert rec["direct_path_sample"] == pytest.approx(200, abs=1)  # 100 samples at 8 kHz
    assert int(np.argmax(np.abs(y))) == 3000
    assert y[3000] > 0  # the first channel was used (the second is inverted)
    # the tail decays as the file's: energy 50 ms after the click well below the first 10 ms
    assert np.sum(y[3800:3960] ** 2) < 0.5 * np.sum(y[3000:3160] ** 2)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({}, "reverb: give exactly one of rt60_s"),
        ({"rt60_s": 0.5, "ir_dir": "/tmp"}, "reverb: give exactly one of rt60_s"),
        ({"rt60_s": 3.0}, r"reverb.rt60_s: 3.0 s is outside \[0.1, 1.5\]"),
        ({"rt60_s": 0.5, "bank_size": 0}, r"reverb.bank_size: 0 is outside \[1, 64\]"),
        (
            {"ir_dir": "/nonexistent/irs"},
            "reverb: ir_dir /nonexistent/irs does not exist or is not a folder; see docs/guide/operators.md",
        ),
    ],
)
def test_invalid_reverb_parameters(params: dict, message: str) -> None:
    with pytest.raises(OperatorError, match=message):
        make_operator("reverb", params)


def test_empty_ir_dir(tmp_path: Path) -> None:
    with pytest.raises(OperatorError, match=rf"reverb: ir_dir {tmp_path} holds no audio files"):
        make_operator("reverb", {"ir_dir": str(tmp_path)})
