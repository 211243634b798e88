"""The embedded factorial corpus: grid facts from the spec, and byte-identical rebuilds."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from interbias.cli import app
from interbias.corpora import CORPORA, channel
from interbias.corpora.channel import Session
from interbias.corpora.manifest import Manifest
from interbias.corpora.synthetic import SENTENCES, SESSION_SENTENCES, STYLES, VERSION, SyntheticSpec, build, make_voices
from interbias.utils.errors import CorpusError

runner = CliRunner()
#: 2 accents × 2 genders × 1 age band × 1 voice, 2 styles, 2 sentences: 16 utterances.
SMALL = {
    "accents": ["us", "sc"],
    "age_bands": ["elderly"],
    "voices_per_cell": 1,
    "styles": ["neutral", "whispered"],
    "n_sentences": 2,
}


def test_full_spec_is_the_factorial_grid_without_building() -> None:
    spec = SyntheticSpec()
    voices = make_voices(spec)
    assert len(voices) >= 48 and len({v.id for v in voices}) == len(voices)
    assert {v.gender for v in voices} == {"female", "male"}
    assert {v.age_band for v in voices} == {"young", "adult", "elderly"}
    assert len({v.accent for v in voices}) >= 4
    assert len(spec.styles) >= 7 and set(spec.styles) >= {
        "neutral",
        "happy",
        "sad",
        "angry",
        "fearful",
        "calm",
        "whispered",
    }
    assert spec.n_sentences >= 20 and len(set(SENTENCES[: spec.n_sentences])) == spec.n_sentences
    # every cell of gender × age band × accent holds the same number of voices
    cells = {(v.gender, v.age_band, v.accent) for v in voices}
    assert len(cells) * spec.voices_per_cell == len(voices)
    # no two voices share their settings
    settings = [
        tuple(v.__dict__[k] for k in v.__dict__ if k not in ("id", "gender", "age_band", "accent")) for v in voices
    ]
    assert len(set(settings)) == len(settings)
    # voice settings are derived from the voice id: the same in any subset spec
    sub = make_voices(SyntheticSpec(accents=("sc",), genders=("male",)))
    full = {v.id: v for v in voices}
    assert all(full[v.id] == v for v in sub)


def test_styles_and_ages_are_marked_as_proxies(tiny_corpus) -> None:
    assert all(u.get("proxy") == "age_band,style" for u in tiny_corpus)
    assert set(STYLES) == {"neutral", "happy", "sad", "angry", "fearful", "calm", "whispered"}
    adapter = CORPORA.get("synthetic")
    assert not adapter.needs_root and {"gender", "age_band", "accent", "style"} <= adapter.provides()


def _audio_hashes(manifest: Manifest) -> dict[str, str]:
    return {u.id: hashlib.sha256(manifest.resolve(u).read_bytes()).hexdigest() for u in manifest}


def test_two_builds_in_two_caches_are_byte_identical(tmp_path: Path) -> None:
    spec = SyntheticSpec.from_options(dict(SMALL))
    a, sa = build(spec, tmp_path / "a", workers=2)
    b, sb = build(spec, tmp_path / "b", workers=1)
    assert sa > 0 and sb > 0
    assert len(a) == 16 and a.sha256() == b.sha256()
    ha, hb = _audio_hashes(a), _audio_hashes(b)
    assert ha == hb and {u.id: u.sha256 for u in a} == ha  # recorded hashes are the files' hashes
    assert (a.root / "manifest.jsonl").read_bytes() == (b.root / "manifest.jsonl").read_bytes()
    assert len(set(ha.values())) == len(ha)  # no two utterances are the same audio
    again, seconds = build(spec, tmp_path / "a")
    assert seconds == 0.0 and again.sha256() == a.sha256()


def test_cli_build_prints_counts_and_seconds_then_reuses(tmp_path: Path) -> None:
    args = ["data", "build", "synthetic", "--cache-dir", str(tmp_path)]
    args += [f"--set={k}={','.join(v) if isinstance(v, list) else v}" for k, v in SMALL.items()]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith("synthetic: built in ") and " s with " in res.stdout
    assert "synthetic: 16 utterances, 4 speakers" in res.stdout
    assert "    whispered                     4 speakers        8 utterances" in res.stdout
    assert res.stderr.startswith("synthetic corpus: rendering: 16 to do\n")  # progress goes to stderr
    again = runner.invoke(app, args + ["--json"])
    info = json.loads(again.output)
    assert info["built_now"] is False and info["build_seconds"] > 0 and info["n_speakers"] == 4
    assert info["manifest_sha256"] == Manifest.read(Path(info["manifest"])).sha256()


def test_cli_build_rejects_other_corpora_and_bad_options(tmp_path: Path) -> None:
    res = runner.invoke(app, ["data", "build", "ravdess"])
    assert res.exit_code == 1
    assert res.output.strip() == (
        "error: 'synthetic' and 'same-text' are built; a corpus on disk is prepared: "
        "interbias data prepare ravdess --root DIR"
    )
    res = runner.invoke(app, ["data", "build", "synthetic", "--set", "accents=us,xx", "--cache-dir", str(tmp_path)])
    assert res.output.strip().startswith("error: synthetic: unknown accent 'xx'; valid: us, gb")
    with pytest.raises(CorpusError, match="unknown option 'voices'"):
        SyntheticSpec.from_options({"voices": 3})


@pytest.mark.slow
def test_full_corpus_builds_identically_twice(tmp_path: Path) -> None:
    a, sa = build(SyntheticSpec(), tmp_path / "a")
    b, _ = build(SyntheticSpec(), tmp_path / "b")
    assert len(a) == 48 * 7 * 20 and len(a.speakers()) == 48
    assert a.sha256() == b.sha256() and _audio_hashes(a) == _audio_hashes(b)
    print(f"full synthetic build: {sa:.1f} s")


def test_sessions_share_a_channel_and_differ_between_sessions(tiny_corpus) -> None:
    assert all(u.get("corpus_version") == str(VERSION) == "3" for u in tiny_corpus)
    by_session: dict[str, list] = {}
    for u in tiny_corpus:
        assert u.session is not None and u.session.startswith(f"{u.speaker}/{u.style}-")
        by_session.setdefault(u.session, []).append(u)
    channel_keys = sorted(k for k in tiny_corpus.utterances[0].attrs if k.startswith("ch_"))
    assert {"ch_band_hz", "ch_eq", "ch_level_db", "ch_room", "ch_snr_db", "ch_pitch_offset"} <= set(channel_keys)
    sig = {s: {tuple(u.attrs[k] for k in channel_keys) for u in us} for s, us in by_session.items()}
    assert all(len(v) == 1 for v in sig.values())  # one channel per session
    per_speaker: dict[str, set] = {}
    for s, us in by_session.items():
        assert len(us) <= SESSION_SENTENCES
        per_speaker.setdefault(us[0].speaker, set()).update(sig[s])
    # TINY has 5 sentences: two sessions per voice, each with its own channel
    assert all(len(v) == 2 for v in per_speaker.values())


def test_speakers_spread_evenly_over_the_cells() -> None:
    spec = SyntheticSpec().with_speakers(96)
    voices = make_voices(spec)
    assert len(voices) == 96 and spec.voices_per_cell == 4
    cells = Counter((v.gender, v.age_band, v.accent) for v in voices)
    assert set(cells.values()) == {4} and len(cells) == spec.n_cells() == 24
    # the default corpus's voices are the first of every cell of a larger build
    assert {v.id: v for v in make_voices(SyntheticSpec())}.items() <= {v.id: v for v in voices}.items()
    with pytest.raises(CorpusError, match="multiple of the 24 cells"):
        SyntheticSpec().with_speakers(50)
    res = runner.invoke(app, ["data", "build", "synthetic", "--speakers", "30"])
    assert res.exit_code == 1 and res.output.startswith("error: synthetic: --speakers must be a multiple of the 24")


def _flat_session(**kw) -> Session:
    base = dict(
        session="t-1",
        pitch_offset=0,
        range_offset=0,
        rate_factor=1.0,
        room=-1,
        wet=0.0,
        highpass_hz=1.0,
        lowpass_hz=1e6,
        tilt_db_per_oct=0.0,
        eq_hz=(1000.0,),
        eq_db=(0.0,),
        eq_octaves=(1.0,),
        snr_db=30.0,
        noise_slope=0.0,
        level_db=0.0,
    )
    base.update(kw)
    return Session(**base)


def _tone_bursts(sample_rate_hz: int = 16000) -> np.ndarray:
    t = np.arange(2 * sample_rate_hz) / sample_rate_hz
    x = 0.3 * np.sin(2 * np.pi * 440.0 * t)
    x[: sample_rate_hz // 2] = 0.0  # half a second of silence: not active speech
    return x


def test_background_noise_lands_at_the_session_snr_on_active_speech() -> None:
    x = _tone_bursts()
    for snr in (30.0, 45.0):
        y, extra = channel.apply(x, _flat_session(snr_db=snr), [], np.random.default_rng(1), 16000)
        noise = y - x
        speech = np.mean(x[8000:] ** 2)  # the active part, computed directly
        assert 10 * np.log10(speech / np.mean(noise**2)) == pytest.approx(snr, abs=0.3)
        assert extra == {"peak_limit_db": "0.00"}


def test_microphone_band_limits_and_level() -> None:
    sample_rate_hz = 16000
    t = np.arange(sample_rate_hz) / sample_rate_hz
    mic = _flat_session(highpass_hz=200.0, lowpass_hz=4000.0, snr_db=120.0, level_db=-6.0)
    gains = {}
    for f in (50.0, 1000.0, 7000.0):
        x = 0.1 * np.sin(2 * np.pi * f * t)
        y, _ = channel.apply(x, mic, [], np.random.default_rng(0), sample_rate_hz)
        gains[f] = 20 * np.log10(np.std(y[2000:-2000]) / np.std(x[2000:-2000]))
    assert gains[1000.0] == pytest.approx(-6.0, abs=0.3)
    assert gains[50.0] < -6.0 - 20 and gains[7000.0] < -6.0 - 15  # 2nd-order HP, 4th-order LP
    loud, extra = channel.apply(
        0.5 * np.sin(2 * np.pi * 300 * t), _flat_session(level_db=12.0), [], np.random.default_rng(0), sample_rate_hz
    )
    assert np.max(np.abs(loud)) == pytest.approx(0.98) and float(extra["peak_limit_db"]) < -5.0


def test_a_room_adds_a_tail_after_the_direct_path() -> None:
    h = np.zeros(800)
    h[0], h[400] = 1.0, 0.5
    x = np.zeros(4000)
    x[1000] = 0.5
    y, _ = channel.apply(x, _flat_session(room=0, wet=0.4, snr_db=150.0), [h], np.random.default_rng(0), 16000)
    assert y[1000] == pytest.approx(0.5, abs=1e-3) and y[1400] == pytest.approx(0.5 * 0.5 * 0.4, abs=1e-3)
    assert abs(y[1200]) < 1e-3  # nothing between the direct path and the reflection


def test_the_channel_pass_resamples_from_the_synthesiser_rate() -> None:
    rate_in, sample_rate_hz = 22050, 16000
    t = np.arange(int(1.5 * rate_in)) / rate_in
    x = 0.2 * np.sin(2 * np.pi * 1000.0 * t) + 0.2 * np.sin(2 * np.pi * 9000.0 * t)  # 9 kHz: above 8 kHz
    y, _ = channel.apply(
        x, _flat_session(snr_db=150.0), [], np.random.default_rng(0), sample_rate_hz, in_rate_hz=rate_in
    )
    assert len(y) == round(len(x) * sample_rate_hz / rate_in)
    ref = 0.2 * np.sin(2 * np.pi * 1000.0 * np.arange(len(y)) / sample_rate_hz)  # the 9 kHz tone is gone, not aliased
    assert np.max(np.abs(y[1000:-1000] - ref[1000:-1000])) < 2e-3
