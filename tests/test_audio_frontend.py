"""The front end's resampler is a recorded choice (issue 14, section 6) and audio without any
signal is a failed utterance with its reason (section 2)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from interbias.audio import frontend as audio
from interbias.utils.errors import AudioError
from interbias.utils.seeding import canonical_json, sha256_text

FAST = settings(
    max_examples=40, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck)
)
RATES = [8000, 11025, 16000, 22050, 44100, 48000]


@pytest.mark.parametrize(("rate_in", "rate_out"), [(8000, 16000), (44100, 16000), (11025, 16000), (16000, 8000)])
def test_sinc_matches_torchaudio_functional_resample(rate_in: int, rate_out: int) -> None:
    torch = pytest.importorskip("torch")
    functional = pytest.importorskip("torchaudio.functional")
    x = (np.random.default_rng(rate_in).standard_normal(rate_in // 2 + 13) * 0.3).astype(np.float32)
    want = functional.resample(torch.from_numpy(x), rate_in, rate_out).numpy()
    got = audio.resample(x, rate_in, rate_out, "sinc")
    assert got.shape == want.shape and got.dtype == np.float32
    # torchaudio sums in float32, interbias in float64: agreement to float32 accumulation error
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-4)
    # and it is a different filter from the polyphase default above 4 kHz
    if rate_in == 8000:
        assert np.abs(got - audio.resample(x, rate_in, rate_out)).max() > 1e-3


def test_the_default_fingerprint_and_cache_key_are_unchanged() -> None:
    from interbias.embedding.cache import cache_chain_key
    from interbias.operators import Chain

    old = {"sample_rate_hz": 16000, "min_duration_s": 1.0, "max_duration_s": 10.0}
    assert audio.FrontEnd().fingerprint() == old
    assert (
        cache_chain_key(Chain(), frozenset(), audio.FrontEnd())
        == f"{Chain().key(frozenset())}@fe{sha256_text(canonical_json(old))[:8]}"
    )
    sinc = audio.FrontEnd(resampler="sinc")
    assert sinc.fingerprint()["resampler"] == {
        "name": "sinc",
        "method": "torchaudio.functional.resample",
        "resampling_method": "sinc_interp_hann",
        "lowpass_filter_width": 6,
        "rolloff": 0.99,
    }
    assert cache_chain_key(Chain(), frozenset(), sinc) != cache_chain_key(Chain(), frozenset(), audio.FrontEnd())


def test_the_record_names_the_resampler_with_its_parameters() -> None:
    rec = audio.FrontEnd().record()
    assert rec["resampler"] == {"name": "polyphase", "method": "scipy.signal.resample_poly", "window": ["kaiser", 5.0]}
    assert {k: rec[k] for k in ("sample_rate_hz", "min_duration_s", "max_duration_s")} == audio.FrontEnd().fingerprint()


def test_prepare_uses_the_front_ends_resampler() -> None:
    x = np.sin(np.linspace(0, 400, 16000)).astype(np.float32) * 0.5
    a = audio.prepare(x, 8000, audio.FrontEnd(resampler="sinc"), where="x")
    b = audio.prepare(x, 8000, audio.FrontEnd(), where="x")
    np.testing.assert_array_equal(a.samples, audio.resample(x, 8000, 16000, "sinc"))
    assert not np.array_equal(a.samples, b.samples)


def test_unknown_resampler_is_refused(tmp_path) -> None:
    from conftest import tiny_experiment

    from interbias.experiments.schema import load_experiment
    from interbias.utils.errors import ConfigError

    assert (
        load_experiment(tiny_experiment(tmp_path, name="S", frontend={"resampler": "sinc"})).frontend.resampler
        == "sinc"
    )
    with pytest.raises(ConfigError, match=r"frontend.resampler: 'soxr' is not one of polyphase, sinc"):
        load_experiment(tiny_experiment(tmp_path, name="Q", frontend={"resampler": "soxr"}))


def test_rate_changes_count_up_and_down_separately() -> None:
    assert audio.rate_changes([8000, 8000, 16000, 44100, 11025], 16000) == {
        "n_resampled": 4,
        "n_upsampled": 3,
        "n_downsampled": 1,
        "upsampled_from": "8000;11025",
        "downsampled_from": "44100",
    }


@FAST
@given(st.lists(st.sampled_from(RATES), max_size=30), st.sampled_from(RATES))
def test_generated_rate_changes_add_up(rates: list[int], target: int) -> None:
    c = audio.rate_changes(rates, target)
    assert c["n_upsampled"] == sum(r < target for r in rates)
    assert c["n_downsampled"] == sum(r > target for r in rates)
    assert c["n_resampled"] == c["n_upsampled"] + c["n_downsampled"]
    assert c["upsampled_from"] == ";".join(str(r) for r in sorted({r for r in rates if r < target}))


@pytest.mark.parametrize(
    ("value", "what"), [(0.0, "all samples are zero"), (0.25, "all samples hold the constant value 0.25")]
)
def test_audio_without_signal_is_refused_with_the_reason(value: float, what: str) -> None:
    x = np.full(32000, value, dtype=np.float32)
    with pytest.raises(AudioError) as info:
        audio.prepare(x, 16000, audio.FrontEnd(), where="f.wav")
    assert str(info.value) == f"f.wav: no signal ({what}); nothing to embed"


def test_a_silent_file_is_refused_by_load(tmp_path) -> None:
    import soundfile as sf

    sf.write(str(tmp_path / "z.wav"), np.zeros(32000, dtype=np.int16), 16000, subtype="PCM_16")
    with pytest.raises(AudioError, match=r"z.wav: no signal \(all samples are zero\)"):
        audio.load(tmp_path / "z.wav")


@FAST
@given(
    st.floats(min_value=-1, max_value=1, allow_nan=False, width=32),
    st.integers(min_value=16000, max_value=40000),
    st.one_of(st.none(), st.floats(min_value=1e-3, max_value=0.5)),
)
def test_generated_constant_audio_is_refused_and_any_signal_passes(level: float, n: int, bump: float | None) -> None:
    x = np.full(n, level, dtype=np.float32)
    if bump is None:
        with pytest.raises(AudioError, match="no signal"):
            audio.prepare(x, 16000, audio.FrontEnd(), where="g")
    else:
        x[n // 2] = np.float32(level + bump if level < 0.5 else level - bump)
        assert audio.prepare(x, 16000, audio.FrontEnd(), where="g").samples.size == n


def test_paths_that_are_not_files_say_what_they_are(tmp_path) -> None:
    import os

    os.mkfifo(tmp_path / "fifo.wav")
    (tmp_path / "dir.wav").mkdir()
    os.symlink(tmp_path / "b.wav", tmp_path / "a.wav")
    os.symlink(tmp_path / "a.wav", tmp_path / "b.wav")
    os.symlink(tmp_path / "nothing", tmp_path / "dangling.wav")
    for name, what in (
        ("fifo.wav", "is a FIFO (named pipe), not a file"),
        ("dir.wav", "is a folder, not a file"),
        ("a.wav", "is a symbolic-link loop"),
        ("dangling.wav", "is a dangling symbolic link"),
        ("missing.wav", "file does not exist"),
    ):
        with pytest.raises(AudioError) as info:
            audio.load(tmp_path / name)
        assert str(info.value) == f"{tmp_path / name}: {what}"


def _click(seconds: float = 2.0, rate: int = 16000, offset: float = 0.0) -> np.ndarray:
    """A 1 ms impulse of amplitude 0.5 in the middle of ``seconds`` of digital silence (at ``offset``)."""
    x = np.full(int(seconds * rate), offset, dtype=np.float32)
    x[len(x) // 2 : len(x) // 2 + rate // 1000] += 0.5
    return x


@pytest.mark.parametrize("offset", [0.0, 0.2])
def test_a_click_in_digital_silence_is_refused_as_an_utterance_with_its_reason(offset: float) -> None:
    """Without a VAD the minimum duration applies to the audio that holds signal: the click's
    one 20 ms frame (a constant DC offset is no signal)."""
    with pytest.raises(AudioError) as info:
        audio.prepare(_click(offset=offset), 16000, audio.FrontEnd(), where="click.wav", vad=True)
    assert str(info.value) == (
        "click.wav: only 0.020 s of its 2.000 s holds signal above -90 dBFS (the rest is digital silence), "
        "shorter than the minimum 1 s; nothing to embed"
    )
    # audio that is not an utterance to embed (noise, other talkers) is loaded as before
    assert audio.prepare(_click(offset=offset), 16000, audio.FrontEnd(), where="click.wav").samples.size == 32000


def test_speech_padded_with_digital_silence_counts_its_signal_only() -> None:
    rate = 16000
    tone = (0.3 * np.sin(2 * np.pi * 220 * np.arange(rate) / rate)).astype(np.float32)
    short = np.concatenate([np.zeros(rate // 2, np.float32), tone[: int(0.9 * rate)], np.zeros(rate, np.float32)])
    with pytest.raises(AudioError, match=r"only 0\.900 s of its 2\.400 s holds signal"):
        audio.prepare(short, rate, audio.FrontEnd(), where="s.wav", vad=True)
    enough = np.concatenate([np.zeros(rate // 2, np.float32), tone, np.zeros(rate, np.float32)])
    assert audio.prepare(enough, rate, audio.FrontEnd(), where="e.wav", vad=True).samples.size == len(enough)
    # a recording's noise floor (-60 dBFS) is signal: the rule catches digital silence, not quiet rooms
    noisy = enough + np.float32(1e-3) * np.random.default_rng(0).standard_normal(len(enough)).astype(np.float32)
    noisy[: rate // 2] = np.float32(1e-3)
    assert audio.signal_duration_s(noisy[rate // 2 :], rate) == pytest.approx(len(noisy[rate // 2 :]) / rate)


@FAST
@given(st.integers(min_value=1, max_value=5000), st.integers(min_value=8000, max_value=48000), st.integers(0, 2**31))
def test_signal_duration_equals_a_frame_by_frame_restatement(n: int, rate: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * rng.choice([0.0, 1e-6, 1e-3], size=n)).astype(np.float32)
    flen = max(1, round(0.02 * rate))
    held = 0
    for start in range(0, n, flen):
        frame = x[start : start + flen].astype(np.float64)
        if np.mean((frame - frame.mean()) ** 2) >= 1e-9:
            held += len(frame)
    assert audio.signal_duration_s(x, rate) == pytest.approx(held / rate, abs=1e-12)
