"""Noise: exact SNR on active speech, the right colour, recorded segments that reproduce the
noise, babble/crosstalk that never use the trial's speakers, and one clear error for a
missing noise folder."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from scipy.signal import welch
from test_operators import speechlike
from typer.testing import CliRunner

from interbias.audio import frontend as audio
from interbias.cli import app
from interbias.operators import OpContext, make_operator, parse_chain
from interbias.operators.levels import active_mask, active_power
from interbias.utils.errors import OperatorError
from interbias.utils.seeding import derive_rng

RATE = 16000


def ctx(seed: str = "n", **kw) -> OpContext:
    return OpContext(kw.pop("rate", RATE), kw.pop("uid", "u"), kw.pop("speaker", "s"), derive_rng(seed), **kw)


def achieved_snr(x: np.ndarray, y: np.ndarray) -> float:
    mask = active_mask(x, RATE)
    return float(10 * np.log10(active_power(x, mask) / active_power(y.astype(np.float64) - x, mask)))


@pytest.mark.parametrize("kind", ["gaussian", "pink", "brown"])
@pytest.mark.parametrize("snr", [-5.0, 5.0, 20.0])
def test_synthetic_kinds_hit_the_snr(kind: str, snr: float) -> None:
    x = speechlike("noise")
    y, rec = make_operator("noise", {"kind": kind, "snr_db": snr}).apply(x, ctx())
    assert abs(achieved_snr(x, y) - snr) < 0.2
    assert rec["snr_db_achieved"] == pytest.approx(snr, abs=1e-6)


@pytest.mark.parametrize(("kind", "slope"), [("gaussian", 0.0), ("pink", -1.0), ("brown", -2.0)])
def test_noise_colour_has_the_expected_spectral_slope(kind: str, slope: float) -> None:
    """log10 PSD against log10 f between 100 Hz and 4 kHz (Welch estimate, least squares)."""
    x = np.zeros(10 * RATE, np.float32)
    x[::97] = 1.0  # a sparse click train: the noise dominates the difference
    y, _ = make_operator("noise", {"kind": kind, "snr_db": 0.0}).apply(x, ctx(kind))
    f, p = welch(y.astype(np.float64) - x, fs=RATE, nperseg=4096)
    band = (f >= 100) & (f <= 4000)
    fitted = np.polyfit(np.log10(f[band]), np.log10(p[band]), 1)[0]
    assert fitted == pytest.approx(slope, abs=0.15)


# --------------------------------------------------------------------------- environmental


@pytest.fixture
def noise_dir(tmp_path: Path) -> Path:
    d = tmp_path / "noises"
    d.mkdir()
    rng = derive_rng("noise-files")
    # an 8 kHz stereo file (resampled and downmixed on use) and a short 16 kHz file (looped)
    sf.write(d / "hum.wav", np.stack([np.sin(np.arange(8000 * 6) * 0.3), rng.standard_normal(8000 * 6) * 0.1], 1), 8000)
    sf.write(d / "short.flac", (rng.standard_normal(RATE // 2) * 0.2).astype(np.float32), RATE)
    (d / "notes.txt").write_text("not audio")
    return d


def expected_noise(folder: Path, rec: dict, n: int) -> np.ndarray:
    """The noise the record says was used, rebuilt from the file (independently decoded)."""
    data, sample_rate_hz = sf.read(folder / rec["file"], always_2d=True)
    mono = audio.resample(data.mean(axis=1), sample_rate_hz, RATE).astype(np.float64)
    off = int(round(rec["offset_s"] * RATE))
    return mono[(off + np.arange(n)) % len(mono)]


def test_environmental_noise_uses_the_recorded_segment(noise_dir: Path) -> None:
    x = speechlike("env", 3 * RATE)
    op = make_operator("noise", {"kind": "environmental", "snr_db": 5, "noise_dir": str(noise_dir)})
    files = set()
    for seed in ("a", "b", "c", "d", "e", "f"):
        y, rec = op.apply(x, ctx(seed))
        files.add(rec["file"])
        assert abs(achieved_snr(x, y) - 5.0) < 0.2
        assert rec["looped"] == (rec["file"] == "short.flac")
        noise = (y.astype(np.float64) - x) / rec["noise_gain"]
        np.testing.assert_allclose(noise, expected_noise(noise_dir, rec, len(x)), atol=2e-4)
    assert files == {"hum.wav", "short.flac"}


def test_environmental_noise_dir_from_the_environment(noise_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INTERBIAS_NOISE_DIR", str(noise_dir))
    op = make_operator("noise", {"kind": "environmental", "snr_db": 5})
    assert op.noise_dir == str(noise_dir)  # resolved now: part of the fingerprint
    _y, rec = op.apply(speechlike("env"), ctx())
    assert rec["noise_dir"] == str(noise_dir)


def test_missing_or_empty_noise_dir_is_one_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("INTERBIAS_NOISE_DIR", raising=False)
    with pytest.raises(OperatorError) as err:
        make_operator("noise", {"kind": "environmental", "snr_db": 5})
    assert str(err.value) == (
        "noise kind=environmental needs a folder of noise recordings: set the noise_dir parameter or the "
        "INTERBIAS_NOISE_DIR environment variable (interbias ships no noise recordings; see docs/guide/operators.md)"
    )
    missing = tmp_path / "nowhere"
    with pytest.raises(OperatorError) as err:
        make_operator("noise", {"kind": "environmental", "snr_db": 5, "noise_dir": str(missing)})
    assert str(err.value) == (
        f"noise kind=environmental: noise_dir {missing} does not exist or is not a folder; see docs/guide/operators.md"
    )
    monkeypatch.setenv("INTERBIAS_NOISE_DIR", str(missing))
    with pytest.raises(OperatorError) as err:
        make_operator("noise", {"kind": "environmental", "snr_db": 5})
    assert str(err.value) == (
        f"noise kind=environmental: INTERBIAS_NOISE_DIR {missing} does not exist or is not a folder; "
        "see docs/guide/operators.md"
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "readme.txt").write_text("x")
    with pytest.raises(OperatorError, match=rf"noise_dir {empty} holds no audio files \(.wav, .flac"):
        make_operator("noise", {"kind": "environmental", "snr_db": 5, "noise_dir": str(empty)})


def test_cli_degrade_with_missing_noise_dir_is_one_line(tmp_path: Path) -> None:
    src = tmp_path / "in.wav"
    sf.write(src, speechlike("cli"), RATE)
    res = CliRunner().invoke(
        app,
        ["data", "degrade", str(src), str(tmp_path / "out.wav"), "--op",
         f"noise:kind=environmental,snr_db=5,noise_dir={tmp_path / 'none'}"],
    )  # fmt: skip
    assert res.exit_code == 1
    assert (
        res.output
        == f"error: noise kind=environmental: noise_dir {tmp_path / 'none'} does not exist or is not a folder; "
        "see docs/guide/operators.md\n"
    )
    assert not (tmp_path / "out.wav").exists()


def test_a_corrupt_noise_file_is_an_operator_error(tmp_path: Path) -> None:
    (tmp_path / "bad.wav").write_bytes(b"RIFF....not really a wav file")
    op = make_operator("noise", {"kind": "environmental", "snr_db": 5, "noise_dir": str(tmp_path)})
    with pytest.raises(OperatorError, match=r"noise kind=environmental: cannot use noise file .*bad.wav: "):
        op.apply(speechlike("x"), ctx())


# --------------------------------------------------------------------------- babble / crosstalk


def talker_noise(corpus, rec: dict, n: int) -> np.ndarray:
    """Rebuild a babble mix from the record: each talker at unit active power, looped."""
    by_id = corpus.by_id()
    mix = np.zeros(n)
    for t in rec["talkers"]:
        s = audio.load(corpus.resolve(by_id[t["utterance"]])).samples.astype(np.float64)
        s = s / np.sqrt(active_power(s, active_mask(s, RATE)))
        off = int(round(t["offset_s"] * RATE))
        mix += s[(off + np.arange(n)) % len(s)]
    return mix


@pytest.mark.parametrize(("kind", "n_talkers"), [("babble", 6), ("babble", 3), ("crosstalk", 1)])
def test_talkers_never_include_the_trials_speakers(tiny_corpus, kind: str, n_talkers: int) -> None:
    speakers = sorted({u.speaker for u in tiny_corpus.utterances})
    params = {"kind": kind, "snr_db": 5}
    if kind == "babble":
        params["n_talkers"] = n_talkers
    op = make_operator("noise", params)
    assert op.draws_talkers
    for i, u in enumerate(tiny_corpus.utterances[::7]):
        x = audio.load(tiny_corpus.resolve(u)).samples
        # the utterance's own speaker plus a few partners (as the runner passes them)
        excluded = frozenset(speakers[j % len(speakers)] for j in range(i, i + 3))
        c = OpContext(RATE, u.id, u.speaker, derive_rng("babble", u.id), corpus=tiny_corpus,
                      exclude_speakers=excluded | {u.speaker})  # fmt: skip
        y, rec = op.apply(x, c)
        used = [t["speaker"] for t in rec["talkers"]]
        assert len(used) == n_talkers and len(set(used)) == n_talkers
        assert not set(used) & (excluded | {u.speaker})
        assert abs(achieved_snr(x, y) - 5.0) < 0.2
        noise = (y.astype(np.float64) - x) / rec["noise_gain"]
        np.testing.assert_allclose(noise, talker_noise(tiny_corpus, rec, len(x)), atol=2e-3)


def test_the_talker_index_is_what_a_scan_of_the_manifest_gives_and_is_built_once(tiny_corpus) -> None:
    from interbias.operators.noise import talker_index

    index = talker_index(tiny_corpus)
    assert talker_index(tiny_corpus) is index  # one index per corpus object
    speakers = sorted({u.speaker for u in tiny_corpus.utterances})
    for k in range(len(speakers)):
        exclude = frozenset(speakers[k : k + 3])
        scanned: dict[str, list] = {}
        for u in tiny_corpus.utterances:
            if u.speaker not in exclude:
                scanned.setdefault(u.speaker, []).append(u)
        assert index.speakers_outside(exclude) == tuple(sorted(scanned))
        for spk, utts in scanned.items():
            assert index.by_speaker[spk] == tuple(sorted(utts, key=lambda u: u.id))
    # the same draw from the same generator, whichever way the pool is found
    op = make_operator("noise", {"kind": "babble", "snr_db": 5, "n_talkers": 3})
    u = tiny_corpus.utterances[0]
    x = audio.load(tiny_corpus.resolve(u)).samples
    first = op.apply(x, OpContext(RATE, u.id, u.speaker, derive_rng("i"), corpus=tiny_corpus))
    index.outside.clear()
    again = op.apply(x, OpContext(RATE, u.id, u.speaker, derive_rng("i"), corpus=tiny_corpus))
    assert first[0].tobytes() == again[0].tobytes() and first[1] == again[1]


def test_babble_key_includes_the_exclusions_but_gaussian_does_not() -> None:
    babble = parse_chain([{"op": "noise", "kind": "babble", "snr_db": 5}], where="t")
    gauss = parse_chain([{"op": "noise", "kind": "gaussian", "snr_db": 5}], where="t")
    assert babble.draws_talkers and not gauss.draws_talkers
    assert babble.key(frozenset({"a"})) != babble.key(frozenset({"b"}))
    assert gauss.key(frozenset({"a"})) == gauss.key(frozenset({"b"})) == gauss.fingerprint


def test_too_few_other_speakers_or_no_corpus(tiny_corpus) -> None:
    speakers = {u.speaker for u in tiny_corpus.utterances}
    u = tiny_corpus.utterances[0]
    x = audio.load(tiny_corpus.resolve(u)).samples
    op = make_operator("noise", {"kind": "babble", "snr_db": 5, "n_talkers": 6})
    keep = sorted(speakers - {u.speaker})[:5]
    c = OpContext(RATE, u.id, u.speaker, derive_rng("x"), corpus=tiny_corpus,
                  exclude_speakers=frozenset(speakers - set(keep)))  # fmt: skip
    with pytest.raises(OperatorError, match=r"noise kind=babble needs 6 other speaker\(s\); the corpus has 5 outside"):
        op.apply(x, c)
    with pytest.raises(
        OperatorError, match="noise kind=crosstalk draws other talkers from a corpus, but none was given"
    ):
        make_operator("noise", {"kind": "crosstalk", "snr_db": 5}).apply(x, ctx())


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"kind": "crosstalk", "snr_db": 5, "n_talkers": 3}, "noise.n_talkers: applies only to kind=babble"),
        ({"kind": "babble", "snr_db": 5, "n_talkers": 1}, r"noise.n_talkers: 1 is outside \[2, 64\]"),
        ({"kind": "pink", "snr_db": 5, "noise_dir": "/tmp"}, "noise.noise_dir: applies only to kind=environmental"),
        ({"kind": "brown", "snr_db": -30}, r"noise.snr_db: -30.0 dB is outside \[-20, 80\]"),
    ],
)
def test_invalid_noise_parameters(params: dict, message: str) -> None:
    with pytest.raises(OperatorError, match=message):
        make_operator("noise", params)


def test_labels_of_existing_conditions_are_unchanged() -> None:
    """Optional parameters left out do not enter labels or fingerprints."""
    chain = parse_chain([{"op": "noise", "kind": "gaussian", "snr_db": 10}], where="t")
    assert chain.label == "noise(kind=gaussian,snr_db=10.0)"
    assert chain.records() == [{"name": "noise", "kwargs": {"kind": "gaussian", "snr_db": 10.0}, "version": 1}]
