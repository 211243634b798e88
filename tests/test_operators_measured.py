"""The channel operators (crop, gain, clip, filter, resample, echo, agc, pitch, music noise):
each proven to do what it promises by measuring that property on real speech of the embedded
(synthetic espeak-ng) corpus, refused with one line outside its range, deterministic per seed."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf

from interbias.audio import frontend as audio
from interbias.operators import OPERATORS, OpContext, make_operator, parse_chain
from interbias.operators.dynamics import level_range_db
from interbias.operators.level import crest_factor_db
from interbias.operators.levels import active_mask, active_power
from interbias.utils.errors import OperatorError
from interbias.utils.seeding import derive_rng

RATE = 16000
NEW = ("crop", "gain", "clip", "filter", "resample", "echo", "agc", "pitch")


@pytest.fixture(scope="module")
def voices(tiny_corpus) -> list[np.ndarray]:
    """Two female and two male utterances (about 1.6–2 s each)."""
    by_gender: dict[str, list] = {}
    for u in tiny_corpus.utterances:
        by_gender.setdefault(u.gender, []).append(u)
    picks = by_gender["female"][:1] + by_gender["female"][-1:] + by_gender["male"][:1] + by_gender["male"][-1:]
    return [audio.load(tiny_corpus.resolve(u)).samples for u in picks]


@pytest.fixture(scope="module")
def long_speech(voices) -> np.ndarray:
    """The four utterances end to end (about 7 s): long enough for every crop but 8 s."""
    return np.concatenate(voices)


def run(name: str, x: np.ndarray, seed: str = "t", **params):
    return make_operator(name, params).apply(x, OpContext(RATE, "u", "s", derive_rng(seed)))


def band_energy(x: np.ndarray, low: float, high: float) -> float:
    """Energy of ``x`` between ``low`` and ``high`` Hz (periodogram of the whole signal)."""
    spec = np.abs(np.fft.rfft(np.asarray(x, np.float64))) ** 2
    f = np.fft.rfftfreq(len(x), 1 / RATE)
    return float(spec[(f >= low) & (f < high)].sum())


def change_db(y: np.ndarray, x: np.ndarray, low: float, high: float) -> float:
    return 10 * np.log10(band_energy(y, low, high) / band_energy(x, low, high))


# -- crop ---------------------------------------------------------------------------------


@pytest.mark.parametrize("seconds", [1.0, 2.0, 4.0])
@pytest.mark.parametrize("where", ["start", "random", "speech"])
def test_crop_length_exact_to_the_sample(long_speech, seconds: float, where: str) -> None:
    y, rec = run("crop", long_speech, duration_s=seconds, where=where)
    assert len(y) == int(round(seconds * RATE)) == rec["crop_samples"]
    start = int(round(rec["crop_start_s"] * RATE))
    np.testing.assert_array_equal(y, long_speech[start : start + len(y)])
    assert rec["kept_whole"] is False
    if where == "start":
        assert start == 0


def test_crop_speech_window_holds_the_most_active_speech(long_speech) -> None:
    x = np.concatenate([np.zeros(3 * RATE, np.float32), long_speech[: 2 * RATE]])  # 3 s silence first
    n = RATE
    _, rec = run("crop", x, duration_s=1.0, where="speech")
    mask = active_mask(x, RATE)
    counts = np.convolve(mask.astype(int), np.ones(n, int), mode="valid")
    start = int(round(rec["crop_start_s"] * RATE))
    assert counts[start] == counts.max()
    assert start >= 3 * RATE - n // 2  # not in the silence


def test_crop_shorter_input_kept_whole_and_random_start_follows_the_seed(voices, long_speech) -> None:
    y, rec = run("crop", voices[0], duration_s=8.0)
    np.testing.assert_array_equal(y, voices[0])
    assert rec["kept_whole"] is True and rec["crop_samples"] == len(voices[0])
    starts = {
        run("crop", long_speech, seed=f"s{i}", duration_s=1.0, where="random")[1]["crop_start_s"] for i in range(6)
    }
    assert len(starts) > 1  # the position is drawn
    again = {
        run("crop", long_speech, seed=f"s{i}", duration_s=1.0, where="random")[1]["crop_start_s"] for i in range(6)
    }
    assert starts == again  # and the same per seed


# -- gain and clip ------------------------------------------------------------------------


def test_gain_scales_and_counts_saturation(voices) -> None:
    x = voices[2]
    y, rec = run("gain", x, gain_db=-6.0)
    np.testing.assert_allclose(y, x * 10 ** (-6 / 20), rtol=1e-6)
    assert rec["saturated_samples"] == 0
    y, rec = run("gain", x, gain_db=20.0)
    expected = int((np.abs(x.astype(np.float64) * 10) > 1).sum())
    assert rec["saturated_samples"] == expected > 0
    assert np.abs(y).max() == 1.0
    assert rec["crest_factor_out_db"] < rec["crest_factor_in_db"]


@pytest.mark.parametrize("threshold", [0.5, 0.25, 0.1])
def test_hard_clip_share_ceiling_and_crest_factor(voices, threshold: float) -> None:
    x = voices[1]
    y, rec = run("clip", x, threshold=threshold)
    t = threshold * np.abs(x).max()
    assert np.abs(y).max() == pytest.approx(t, rel=1e-6)
    assert rec["clipped_share"] == pytest.approx(float((np.abs(x) > t).mean()))
    assert rec["clipped_share"] > 0
    assert crest_factor_db(y) < crest_factor_db(x) - 1.0
    assert rec["crest_factor_out_db"] == pytest.approx(crest_factor_db(y))


def test_clip_at_dbfs_and_tanh(voices) -> None:
    x = voices[0]
    y, rec = run("clip", x, level_dbfs=-20.0)
    assert np.abs(y).max() == pytest.approx(0.1, rel=1e-6)
    soft, srec = run("clip", x, level_dbfs=-20.0, mode="tanh")
    assert np.abs(soft).max() < 0.1  # tanh approaches the ceiling without reaching it
    assert srec["clipped_share"] == rec["clipped_share"]
    small = np.abs(x) < 0.01  # far below the knee tanh is transparent
    np.testing.assert_allclose(soft[small], x[small], atol=1e-4)


# -- filters ------------------------------------------------------------------------------


@pytest.mark.parametrize("cutoff", [4000.0, 2833.0, 1666.0, 500.0])
def test_lowpass_removes_the_band_above_the_cutoff(voices, cutoff: float) -> None:
    for x in voices[::2]:
        y, rec = run("filter", x, kind="lowpass", cutoff_hz=cutoff)
        # half an octave above the cutoff (the Butterworth transition band lies below it)
        assert change_db(y, x, 1.5 * cutoff, RATE / 2) <= -40.0
        assert abs(change_db(y, x, 0, 0.5 * cutoff)) < 1.0  # the pass band is kept
        assert rec["library"] == "scipy.signal"


@pytest.mark.parametrize("cutoff", [500.0, 1333.0, 2166.0, 3000.0])
def test_highpass_removes_the_band_below_the_cutoff(voices, cutoff: float) -> None:
    for x in voices[::2]:
        y, _ = run("filter", x, kind="highpass", cutoff_hz=cutoff)
        assert change_db(y, x, 0, cutoff / 1.5) <= -40.0
        assert abs(change_db(y, x, 2 * cutoff, RATE / 2)) < 1.0


def test_narrowband_and_wideband_presets(voices) -> None:
    x = voices[3]
    y, rec = run("filter", x, kind="narrowband")
    assert rec["edges_hz"] == [300.0, 3400.0]
    assert change_db(y, x, 0, 200) <= -40.0
    assert change_db(y, x, 5100, RATE / 2) <= -40.0
    assert abs(change_db(y, x, 600, 2500)) < 1.0
    w, wrec = run("filter", x, kind="wideband")
    assert wrec["edges_hz"] == [50.0, 7000.0]
    assert change_db(w, x, 7000 * 1.12, RATE / 2) <= -20.0  # only 0.16 octave of band left above
    assert abs(change_db(w, x, 200, 5000)) < 1.0
    bp, _ = run("filter", x, kind="bandpass", low_hz=1000, high_hz=2000)
    assert change_db(bp, x, 3000, RATE / 2) <= -40.0 and change_db(bp, x, 0, 666) <= -40.0


def test_shelf_eq_boosts_bass_and_treble(voices) -> None:
    x = voices[2]
    y, rec = run("filter", x, kind="shelf", bass_db=12.0, treble_db=12.0)
    assert rec["library"] == "pedalboard"
    assert change_db(y, x, 20, 50) == pytest.approx(12.0, abs=1.5)  # well below the 100 Hz shelf
    assert change_db(y, x, 6000, RATE / 2) == pytest.approx(12.0, abs=1.0)  # well above 3 kHz
    assert abs(change_db(y, x, 700, 1100)) < 1.0  # between the shelves
    cut, _ = run("filter", x, kind="shelf", treble_db=-12.0)
    assert change_db(cut, x, 6000, RATE / 2) == pytest.approx(-12.0, abs=1.0)


# -- resampling ---------------------------------------------------------------------------


@pytest.mark.parametrize("sample_rate_hz", [12000, 8000, 4000, 2000])
def test_resample_removes_or_folds_the_band_above_the_new_nyquist(voices, sample_rate_hz: int) -> None:
    x = voices[0]
    nyq = sample_rate_hz / 2
    y, rec = run("resample", x, rate_hz=sample_rate_hz)
    z, zrec = run("resample", x, rate_hz=sample_rate_hz, anti_aliasing=False)
    assert len(y) == len(z) == len(x)
    assert rec["anti_aliasing"] is True and zrec["anti_aliasing"] is False
    assert change_db(y, x, nyq, RATE / 2) <= -40.0  # gone, either way
    assert change_db(z, x, nyq, RATE / 2) <= -40.0
    # without the filter the band above the new Nyquist folds into the band below: f lands at
    # |f − k·rate| (nearest k). The components that survive both filters (f below 0.9 × the
    # input's Nyquist, the alias below 0.9 × the new one) carry their energy into z − y.
    spec = np.abs(np.fft.rfft(x.astype(np.float64))) ** 2
    f = np.fft.rfftfreq(len(x), 1 / RATE)
    alias = np.abs(f - sample_rate_hz * np.round(f / sample_rate_hz))
    survives = (f > nyq) & (f < 0.9 * RATE / 2) & (alias < 0.9 * nyq)
    folded = band_energy(z - y, 0, nyq)
    assert 10 * np.log10(folded / spec[survives].sum()) == pytest.approx(0.0, abs=1.5)


def test_resample_aliases_a_tone_only_without_the_filter() -> None:
    t = np.arange(RATE) / RATE
    tone = (0.5 * np.sin(2 * np.pi * 5000 * t)).astype(np.float32)
    y, _ = run("resample", tone, rate_hz=8000)
    z, _ = run("resample", tone, rate_hz=8000, anti_aliasing=False)
    assert band_energy(y, 0, RATE / 2) < 1e-4 * band_energy(tone, 0, RATE / 2)  # ≥ 40 dB down, onset included
    alias = band_energy(z, 2950, 3050)  # 5 kHz folds to 8 − 5 = 3 kHz
    assert alias > 0.5 * band_energy(tone, 4950, 5050)


# -- echo, agc, pitch ---------------------------------------------------------------------


@pytest.mark.parametrize("delay_ms", [125.0, 250.0, 500.0])
def test_echo_shows_as_an_autocorrelation_peak_at_the_delay(long_speech, delay_ms: float) -> None:
    x = long_speech
    y, rec = run("echo", x, delay_ms=delay_ms, decay=0.5)
    d = int(round(delay_ms * RATE / 1000))
    assert rec["delay_samples"] == d

    def peak_lag(s: np.ndarray) -> int:
        spec = np.fft.rfft(s.astype(np.float64), 2 * len(s))
        ac = np.fft.irfft(np.abs(spec) ** 2)[: len(s)]
        lo = int(0.05 * RATE)  # past the pitch-period peaks of speech itself
        return lo + int(np.argmax(ac[lo : int(1.2 * RATE)]))

    assert peak_lag(y) == d
    assert abs(peak_lag(x) - d) > 10  # the input has no peak there


def test_echo_reflections_decay() -> None:
    impulse = np.zeros(4000, np.float32)
    impulse[0] = 1.0
    y, rec = run("echo", impulse, delay_ms=50, decay=0.6, reflections=3)
    d = rec["delay_samples"]
    np.testing.assert_allclose(y[[0, d, 2 * d, 3 * d]], [1.0, 0.6, 0.36, 0.216], rtol=1e-6)
    assert np.count_nonzero(y) == 4


@pytest.mark.parametrize("ratio", [2.0, 4.0, 20.0])
def test_agc_reduces_the_level_range_and_sets_the_level(voices, ratio: float) -> None:
    for x in voices:
        y, rec = run("agc", x, threshold_db=-30.0, ratio=ratio, target_dbfs=-26.0)
        mask = active_mask(x, RATE)
        before, after = level_range_db(x, mask, RATE), level_range_db(y, mask, RATE)
        assert after < before - 3.0
        assert rec["level_range_out_db"] == pytest.approx(after)
        assert 10 * np.log10(active_power(y, mask)) == pytest.approx(-26.0, abs=0.01)


def f0_ratio(y: np.ndarray, x: np.ndarray) -> float:
    """Median over the active-speech frames of x of f0(y) / f0(x), both by librosa's YIN."""
    import librosa

    def track(s: np.ndarray) -> np.ndarray:
        return librosa.yin(s.astype(np.float64), fmin=60, fmax=1000, sr=RATE, frame_length=1024, hop_length=256)

    fx, fy = track(x), track(y)
    active = active_mask(x, RATE)[np.minimum(np.arange(len(fx)) * 256, len(x) - 1)]
    return float(np.median(fy[active] / fx[active]))


@pytest.mark.parametrize("semitones", [-12.0, -6.0, -3.0, 3.0, 6.0, 12.0])
def test_pitch_ratio_within_two_percent_duration_kept(voices, semitones: float) -> None:
    for x in (voices[0], voices[2]):
        y, rec = run("pitch", x, semitones=semitones)
        assert len(y) == len(x)
        assert rec["ratio"] == pytest.approx(2 ** (semitones / 12))
        assert f0_ratio(y, x) == pytest.approx(2 ** (semitones / 12), rel=0.02)
        assert abs(f0_ratio(x, x) - 1.0) < 1e-9


# -- music noise --------------------------------------------------------------------------


def write_music(folder, seconds: float = 5.0) -> None:
    """A chord progression with a beat (a stand-in recording the test writes itself)."""
    t = np.arange(int(seconds * 22050)) / 22050
    chord = sum(np.sin(2 * np.pi * f * t) for f in (220.0, 277.2, 329.6, 440.0))
    beat = (np.sin(2 * np.pi * 2 * t) > 0.6).astype(float)
    sf.write(folder / "song.wav", 0.1 * chord * (0.5 + beat), 22050)


@pytest.mark.parametrize("snr", [20.0, 10.0, 0.0])
def test_music_noise_at_the_requested_active_speech_snr(voices, tmp_path, snr: float) -> None:
    write_music(tmp_path)
    x = voices[1]
    y, rec = run("noise", x, kind="music", snr_db=snr, noise_dir=str(tmp_path))
    mask = active_mask(x, RATE)
    achieved = 10 * np.log10(active_power(x, mask) / active_power(y.astype(np.float64) - x, mask))
    assert achieved == pytest.approx(snr, abs=0.01)
    assert rec["file"] == "song.wav" and 0 <= rec["offset_s"] <= 5.0


def test_music_needs_its_folder(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("INTERBIAS_MUSIC_DIR", raising=False)
    with pytest.raises(
        OperatorError, match=r"noise kind=music needs a folder of music recordings.*INTERBIAS_MUSIC_DIR"
    ):
        make_operator("noise", {"kind": "music", "snr_db": 5})
    with pytest.raises(OperatorError, match=r"noise kind=music: noise_dir .* holds no audio files"):
        make_operator("noise", {"kind": "music", "snr_db": 5, "noise_dir": str(tmp_path)})
    write_music(tmp_path)
    monkeypatch.setenv("INTERBIAS_MUSIC_DIR", str(tmp_path))
    assert make_operator("noise", {"kind": "music", "snr_db": 5}).noise_dir == str(tmp_path)


# -- every operator together; refusals; listing ---------------------------------------------

ALL = [
    {"op": "crop", "duration_s": 1.5, "where": "random"},
    {"op": "gain", "gain_db": 6},
    {"op": "clip", "threshold": 0.5},
    {"op": "filter", "kind": "narrowband"},
    {"op": "filter", "kind": "shelf", "bass_db": 6, "treble_db": -6},
    {"op": "resample", "rate_hz": 8000, "anti_aliasing": False},
    {"op": "echo", "delay_ms": 125, "decay": 0.4, "reflections": 2},
    {"op": "agc", "ratio": 4, "target_dbfs": -26},
    {"op": "pitch", "semitones": 2},
    {"op": "noise", "kind": "pink", "snr_db": 15},
]


def test_chain_of_all_runs_and_is_deterministic_per_seed(long_speech) -> None:
    chain = parse_chain(ALL, where="t")

    def go(sha: str):
        return chain.apply(long_speech, utterance_sha256=sha, make_ctx=lambda rng: OpContext(RATE, "u", "s", rng))

    y1, r1 = go("a")
    y2, r2 = go("a")
    y3, r3 = go("b")
    assert len(y1) == int(round(1.5 * RATE)) and np.isfinite(y1).all()
    assert [r["name"] for r in r1] == [item["op"] for item in ALL]
    np.testing.assert_array_equal(y1, y2)
    assert r1 == r2
    assert r1[0]["crop_start_s"] != r3[0]["crop_start_s"] or not np.array_equal(y1, y3)


@pytest.mark.parametrize(
    ("name", "params", "message"),
    [
        ("crop", {"duration_s": 0.05}, r"crop.duration_s: 0.05 s is outside \[0.1, 600\]"),
        ("crop", {"duration_s": 2, "where": "end"}, r"crop.where: 'end' is not one of start, random, speech"),
        ("gain", {"gain_db": 50}, r"gain.gain_db: 50 dB is outside \[-60, 40\]"),
        ("clip", {"threshold": 1.5}, r"clip.threshold: 1.5 × peak is outside \[0.01, 1\]"),
        ("clip", {"level_dbfs": 3}, r"clip.level_dbfs: 3 dBFS is outside \[-60, 0\]"),
        ("clip", {}, r"clip: give exactly one of threshold"),
        ("clip", {"threshold": 0.5, "level_dbfs": -6}, r"clip: give exactly one of threshold"),
        ("filter", {"kind": "lowpass"}, r"filter kind=lowpass needs cutoff_hz"),
        ("filter", {"kind": "lowpass", "cutoff_hz": 5}, r"filter.cutoff_hz: 5 Hz is outside \[20, 48000\]"),
        ("filter", {"kind": "bandpass", "low_hz": 3000, "high_hz": 300}, r"low_hz 3000 Hz must be below high_hz"),
        (
            "filter",
            {"kind": "narrowband", "cutoff_hz": 1000},
            r"filter.cutoff_hz: applies only to kind=lowpass/highpass",
        ),
        ("filter", {"kind": "shelf"}, r"filter kind=shelf needs bass_db or treble_db"),
        ("filter", {"kind": "shelf", "bass_db": 30}, r"filter.bass_db: 30 dB is outside \[-24, 24\]"),
        ("filter", {"kind": "lowpass", "cutoff_hz": 1000, "order": 40}, r"filter.order: 40 .*outside \[1, 16\]"),
        ("resample", {"rate_hz": 500}, r"resample.rate_hz: 500 Hz is outside \[1000, 48000\]"),
        ("echo", {"delay_ms": 3000}, r"echo.delay_ms: 3000 ms is outside \[1, 2000\]"),
        ("echo", {"delay_ms": 100, "decay": 1.2}, r"echo.decay: 1.2 .*outside \[0, 0.95\]"),
        ("agc", {"ratio": 0.5}, r"agc.ratio: 0.5 : 1 is outside \[1, 100\]"),
        ("pitch", {"semitones": 13}, r"pitch.semitones: 13 semitones is outside \[-12, 12\]"),
    ],
)
def test_out_of_range_is_one_line(name: str, params: dict, message: str) -> None:
    with pytest.raises(OperatorError, match=message) as info:
        make_operator(name, params)
    assert "\n" not in str(info.value)


def test_rate_dependent_refusals_at_apply_time(voices) -> None:
    with pytest.raises(OperatorError, match=r"filter: 9000 Hz is at or above the Nyquist frequency \(8000 Hz\)"):
        run("filter", voices[0], kind="lowpass", cutoff_hz=9000)
    with pytest.raises(OperatorError, match=r"resample.rate_hz: 16000 Hz is not below the input's rate"):
        run("resample", voices[0], rate_hz=16000)


def test_listing_gives_units_and_ranges() -> None:
    for name in NEW:
        cls = OPERATORS.get(name)
        described = {p["name"]: p for p in cls.describe_params()}
        assert cls.ranges, name
        for pname, (low, high, unit) in cls.ranges.items():
            assert described[pname]["range"] == [low, high] and described[pname]["unit"] == unit


def test_duration_grid_on_either_side(tmp_path) -> None:
    """The SV duration grid (1, 2, 4, 8 s) as levels of a factor on the enrolment or the test side."""
    import yaml

    from interbias.experiments.schema import load_experiment

    grid = {"full": [], **{f"d{s}": [{"op": "crop", "duration_s": s, "where": "speech"}] for s in (1, 2, 4, 8)}}
    for side in ("enrol", "test", "both"):
        path = tmp_path / f"grid_{side}.yaml"
        factor = {"name": "dur", "type": "acoustic", "apply_to": side, "reference": "full", "levels": grid}
        path.write_text(yaml.safe_dump({"name": "G", "corpus": "synthetic", "factors": [factor]}))
        cells = {dict(c.levels)["dur"]: c for c in load_experiment(path).cells()}
        crop = cells["d2"]
        assert crop.enrol_chain.label == ("crop(duration_s=2.0,where=speech)" if side != "test" else "clean")
        assert crop.test_chain.label == ("crop(duration_s=2.0,where=speech)" if side != "enrol" else "clean")
