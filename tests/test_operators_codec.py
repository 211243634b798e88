"""Codec round trips: each codec acts (vs a resample-only control), keeps length and rate,
and comes back time-aligned; unavailable backends are reported, never faked."""

from __future__ import annotations

import re

import numpy as np
import pytest
from scipy.signal import resample_poly

from interbias.audio import frontend as audio
from interbias.operators import OpContext, make_operator, parse_chain
from interbias.operators import codec as C
from interbias.utils.errors import OperatorError
from interbias.utils.seeding import derive_rng

RATE = 16000
#: aptX HD codes 6 bits per sample (24-bit ADPCM in 4 sub-bands): it is built to be nearly
#: transparent and measures 39-42 dB on speech, so the "clearly changed" bar is 45 dB for it.
SNR_CEILING_DB = {"aptx_hd": 45.0}
#: A vocoder (Codec 2) synthesises its own phase, so the waveform criterion does not apply:
#: alignment is judged on 10 ms RMS envelopes, whose peak lags scatter by a few ms around the
#: true delay on speech (parameters are sent every 10-20 ms): median within ±2 ms, each ±5 ms.
VOCODER_MEDIAN_S, VOCODER_EACH_S = 0.002, 0.005


@pytest.fixture(scope="module")
def signals(tiny_corpus) -> list[np.ndarray]:
    """Real (synthetic-voice) speech of three speakers: a female and a male voice at least."""
    by_gender: dict[str, list] = {}
    for u in tiny_corpus.utterances:
        by_gender.setdefault(u.gender, []).append(u)
    picks = [by_gender["female"][0], by_gender["male"][0], by_gender["male"][-1]]
    return [audio.load(tiny_corpus.resolve(u)).samples for u in picks]


def run_codec(name: str, x: np.ndarray, sample_rate_hz: int = RATE, **params):
    op = make_operator("codec", {"codec": name, **params})
    return op.apply(x, OpContext(sample_rate_hz, "u", "s", derive_rng("test")))


def control(x: np.ndarray, codec_rate: int, sample_rate_hz: int = RATE) -> np.ndarray:
    """Resample-only control: down to the codec's rate and back, no codec (scipy directly)."""
    from math import gcd

    g = gcd(sample_rate_hz, codec_rate)
    down = (
        resample_poly(x.astype(np.float64), codec_rate // g, sample_rate_hz // g) if codec_rate != sample_rate_hz else x
    )
    back = (
        resample_poly(down, sample_rate_hz // g, codec_rate // g)
        if codec_rate != sample_rate_hz
        else x.astype(np.float64)
    )
    out = np.zeros(len(x))
    out[: min(len(x), len(back))] = back[: len(x)]
    return out.astype(np.float32)


def snr_db(ref: np.ndarray, y: np.ndarray) -> float:
    ref = ref.astype(np.float64)
    return float(10 * np.log10(np.sum(ref**2) / np.sum((ref - y.astype(np.float64)) ** 2)))


def peak_lag(ref: np.ndarray, y: np.ndarray, max_lag: int) -> int:
    """Lag L in [-max_lag, max_lag] maximising sum_t ref[t]·y[t + L] (one dot product per lag)."""
    ref, y = ref.astype(np.float64), y.astype(np.float64)
    n = min(len(ref), len(y))

    def dot(lag: int) -> float:
        return float(np.dot(ref[: n - lag], y[lag:n])) if lag >= 0 else float(np.dot(ref[-lag:n], y[: n + lag]))

    lags = np.arange(-max_lag, max_lag + 1)
    return int(lags[np.argmax([dot(int(lag)) for lag in lags])])


def rms_envelope(x: np.ndarray, window: int) -> np.ndarray:
    return np.sqrt(np.convolve(x.astype(np.float64) ** 2, np.ones(window) / window, mode="same"))


AVAILABLE = [c for c, problem in C.availability().items() if problem is None]


@pytest.mark.parametrize("name", list(C.CODECS))
def test_codec_acts_keeps_length_and_rate_and_is_aligned(name: str, signals) -> None:
    if name not in AVAILABLE:
        with pytest.raises(OperatorError, match=f"codec '{name}' is unavailable on this machine: "):
            make_operator("codec", {"codec": name})
        return
    envelope_lags = []
    for x in signals:
        y, rec = run_codec(name, x)
        assert y.dtype == np.float32 and len(y) == len(x) and np.isfinite(y).all()
        ctrl = control(x, rec["codec_rate_hz"])
        assert y.tobytes() != ctrl.tobytes()
        snr_in = snr_db(x, y)
        assert np.isfinite(snr_in) and snr_in < SNR_CEILING_DB.get(name, 40.0), (name, snr_in)
        # The codec adds its own distortion beyond the resampling of the control.
        assert snr_db(ctrl, y) < 60.0, (name, snr_db(ctrl, y))
        if C.CODECS[name].vocoder:
            w = int(0.01 * RATE)
            envelope_lags.append(peak_lag(rms_envelope(x, w), rms_envelope(y, w), int(0.05 * RATE)))
        else:
            assert abs(peak_lag(x, y, 400)) <= 1, (name, peak_lag(x, y, 400))
            # ... and the aligned output tracks the input (not merely peaks near zero lag).
            assert np.corrcoef(x, y)[0, 1] > 0.5
    if envelope_lags:
        assert abs(np.median(envelope_lags)) <= VOCODER_MEDIAN_S * RATE, envelope_lags
        assert max(map(abs, envelope_lags)) <= VOCODER_EACH_S * RATE, envelope_lags


@pytest.mark.parametrize("name", [c for c in AVAILABLE if C.fixed_bitrate(c, RATE) is None])
def test_encoded_size_matches_the_bitrate(name: str, signals) -> None:
    """The encoder really ran at the requested bitrate: bytes·8/duration near the nominal."""
    _, rec = run_codec(name, signals[0])
    assert rec["bitrate_realised_bps"] == pytest.approx(rec["bitrate"], rel=0.25)


@pytest.mark.parametrize(
    ("name", "low", "high"),
    [("g726", 16000, 40000), ("opus", 8000, 48000), ("mp3", 16000, 64000), ("sbc", 32000, 128000)],
)
def test_lower_bitrate_distorts_more(name: str, low: int, high: int, signals) -> None:
    x = signals[0]
    y_low, _ = run_codec(name, x, bitrate=low)
    y_high, _ = run_codec(name, x, bitrate=high)
    assert snr_db(x, y_low) < snr_db(x, y_high) - 1.0


@pytest.mark.parametrize(
    ("sample_rate_hz", "names"), [(8000, ["opus", "aac", "aptx", "pcm_mulaw"]), (44100, ["opus", "sbc", "g722"])]
)
def test_other_input_rates_keep_length_and_alignment(sample_rate_hz: int, names: list[str], signals) -> None:
    x = audio.resample(signals[0], RATE, sample_rate_hz)
    for name in names:
        y, rec = run_codec(name, x, sample_rate_hz=sample_rate_hz)
        assert len(y) == len(x), name
        assert abs(peak_lag(x, y, 400)) <= 1, (name, sample_rate_hz, rec)


def test_codec_rate_override_runs_at_that_rate(signals) -> None:
    y, rec = run_codec("aptx", signals[0], codec_rate_hz=48000)
    assert rec["codec_rate_hz"] == 48000 and rec["bitrate"] == 4 * 2 * 48000
    assert len(y) == len(signals[0]) and abs(peak_lag(signals[0], y, 400)) <= 1


def test_deterministic_bytes(signals) -> None:
    a, _ = run_codec("opus", signals[0])
    b, _ = run_codec("opus", signals[0])
    assert a.tobytes() == b.tobytes()


def test_codec_through_a_chain_records_what_ran(signals) -> None:
    chain = parse_chain([{"op": "codec", "codec": "gsm"}], where="t")
    assert chain.label == "codec(codec=gsm,bitrate=13000)"
    _y, rec = chain.apply(signals[0], utterance_sha256="u", make_ctx=lambda rng: OpContext(RATE, "u", "s", rng))
    assert rec[0]["name"] == "codec" and rec[0]["codec_rate_hz"] == 8000 and rec[0]["encoded_bytes"] > 0
    # the default bitrate is part of the fingerprint: explicit and implicit defaults are one condition
    assert parse_chain([{"op": "codec", "codec": "gsm", "bitrate": 13000}], where="t").fingerprint == chain.fingerprint


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"codec": "opus", "bitrate": 1000}, r"codec.bitrate: 1000 bit/s is outside 6000–510000 bit/s for opus"),
        (
            {"codec": "amr_nb", "bitrate": 8000},
            r"codec.bitrate: 8000 bit/s is not available for amr_nb \(allowed: 4750,",
        ),
        ({"codec": "aptx", "bitrate": 100000}, r"codec.bitrate: aptx has no rate control"),
        (
            {"codec": "g722", "codec_rate_hz": 8000},
            r"codec.codec_rate_hz: g722 does not run at 8000 Hz \(allowed: 16000\)",
        ),
        ({"codec": "flac"}, r"codec.codec: 'flac' is not one of pcm_mulaw, pcm_alaw"),
    ],
)
def test_invalid_parameters_are_named(params: dict, message: str) -> None:
    with pytest.raises(OperatorError, match=message):
        make_operator("codec", params)


def test_missing_ffmpeg_reports_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(C, "_backend_problems", {})
    monkeypatch.setattr(C.shutil, "which", lambda name: None)
    with pytest.raises(
        OperatorError,
        match=re.escape(
            "codec 'speex' is unavailable on this machine: needs the ffmpeg command with the libspeex encoder; "
            "no ffmpeg on PATH; see docs/guide/operators.md"
        ),
    ):
        make_operator("codec", {"codec": "speex"})
    assert C.availability()["codec2"] == "needs the ffmpeg command with the libcodec2 encoder; no ffmpeg on PATH"
    assert C.availability()["gsm"] is None  # in-process codecs do not need it


def test_a_failing_encoder_is_an_operator_error(monkeypatch: pytest.MonkeyPatch, signals) -> None:
    def broken(*args, **kwargs):
        raise RuntimeError("Invalid data found when processing input")

    monkeypatch.setitem(C._BACKENDS, "soundfile", broken)
    monkeypatch.setattr(C, "_delays", {})
    with pytest.raises(OperatorError, match="codec 'gsm' failed: Invalid data found when processing input"):
        run_codec("gsm", signals[0])
