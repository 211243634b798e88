"""Segment rows (``offset``/``duration`` in s, NeMo's convention): the front end reads exactly
that span of the file, each segment keys its own vectors, bad values are refused in one line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from interbias.audio.frontend import FrontEnd, load
from interbias.audio.segments import nearest_sample, span_samples
from interbias.corpora.manifest import Manifest
from interbias.embedding.cache import EmbeddingCache
from interbias.embedding.stage import Embedder, segment_sha256, utterance_sha256
from interbias.encoders import load_encoders
from interbias.operators import Chain
from interbias.utils.errors import AudioError, ManifestError
from interbias.utils.seeding import sha256_file

RATE = 16000


def voice(seconds: float, seed: int) -> np.ndarray:
    """A voiced, amplitude-modulated tone complex with noise (16-bit range), ``seconds`` long."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * RATE)) / RATE
    f0 = 110 + 40 * np.sin(2 * np.pi * 0.7 * t)
    phase = 2 * np.pi * np.cumsum(f0) / RATE
    x = sum(np.sin(k * phase) / k for k in range(1, 12)) * (0.5 + 0.5 * np.sin(2 * np.pi * 3 * t) ** 2)
    return (0.2 * x + 0.01 * rng.standard_normal(len(t))).astype(np.float32)


@pytest.fixture
def recording(tmp_path: Path) -> Path:
    path = tmp_path / "call.wav"
    sf.write(path, voice(6.0, 1), RATE, subtype="PCM_16")
    return path


def test_nearest_sample_rounds_halves_up() -> None:
    assert nearest_sample(0.5 / RATE, RATE) == 1  # half a sample: up
    assert nearest_sample(1.49999 / RATE, RATE) == 1
    assert nearest_sample(0.1, 8000) == 800  # 0.1 × 8000 = 800.0000000000001 in floats
    assert span_samples(1.00003125, 2.0, RATE, 6 * RATE, where="x") == (16001, 32000)  # 16000.5 -> 16001


def test_segment_row_embeds_the_same_vector_as_the_span_cut_to_its_own_file(tmp_path: Path, recording: Path) -> None:
    offset, duration = 1.23456, 2.5
    first, n = 19753, 40000  # 1.23456 s × 16 kHz = 19752.96 -> 19753; 2.5 s × 16 kHz = 40000
    pcm, _ = sf.read(recording, dtype="int16")
    sf.write(tmp_path / "cut.wav", pcm[first : first + n], RATE, subtype="PCM_16")
    csv = tmp_path / "m.csv"
    csv.write_text(f"path,speaker,offset,duration\ncall.wav,a,{offset},{duration}\ncut.wav,a,,\n")
    manifest = Manifest.read(csv)
    seg, cut = manifest.utterances
    assert seg.id == "call@1.23456+2.5" and seg.span == (offset, duration) and cut.span is None

    encoders = load_encoders(["mfcc-stats"], "cpu")
    emb = Embedder(manifest, encoders, EmbeddingCache(tmp_path / "cache.sqlite"), FrontEnd())
    chain = Chain()
    emb.run({chain.fingerprint: (chain, {seg.id, cut.id})})
    assert not emb.failures
    fp = encoders[0].fingerprint
    v_seg, v_cut = emb.vectors[(seg.id, chain.fingerprint, fp)], emb.vectors[(cut.id, chain.fingerprint, fp)]
    assert np.array_equal(v_seg, v_cut)
    assert emb.realised[(seg.id, chain.fingerprint)][0]["frontend"]["segment"] == [first, n]
    assert "segment" not in emb.realised[(cut.id, chain.fingerprint)][0]["frontend"]
    # the segment keys its own vectors: not the file's sha256, not the cut file's
    key = utterance_sha256(seg, manifest)
    assert key == segment_sha256(sha256_file(recording), (offset, duration))
    assert key not in (sha256_file(recording), sha256_file(tmp_path / "cut.wav"))
    assert utterance_sha256(cut, manifest) == sha256_file(tmp_path / "cut.wav")


def test_segments_of_one_recording_are_distinct_utterances(tmp_path: Path, recording: Path) -> None:
    csv = tmp_path / "m.csv"
    csv.write_text("path,speaker,offset,duration\ncall.wav,a,0,2\ncall.wav,a,2,2\ncall.wav,a,4,\n")
    manifest = Manifest.read(csv, check_files=True)
    assert [u.id for u in manifest] == ["call@0+2", "call@2+2", "call@4+end"]
    lens = [len(load(recording, FrontEnd(), span=u.span).samples) for u in manifest]
    assert lens == [2 * RATE, 2 * RATE, 2 * RATE]
    assert len({utterance_sha256(u, manifest) for u in manifest}) == 3
    twice = tmp_path / "twice.csv"
    twice.write_text("id,path,speaker,offset,duration\nx,call.wav,a,0,2\ny,call.wav,a,0,2\n")
    with pytest.raises(ManifestError, match="1 row\\(s\\) name an audio file another row names already"):
        Manifest.read(twice, check_files=True)


def test_speaker_level_attributes_still_checked_across_segments(tmp_path: Path, recording: Path) -> None:
    from interbias.corpora.manifest import check_speaker_attributes

    csv = tmp_path / "m.csv"
    csv.write_text("path,speaker,gender,offset,duration\ncall.wav,a,female,0,2\ncall.wav,a,male,2,2\n")
    with pytest.raises(ManifestError, match="'gender' differs within 1 speaker"):
        check_speaker_attributes(Manifest.read(csv), ["gender"])


@pytest.mark.parametrize(
    ("offset", "duration", "message"),
    [
        ("-1", "2", "offset must be >= 0 s, got '-1'"),
        ("1", "0", "duration must be > 0 s, got '0'"),
        ("1", "-2", "duration must be > 0 s, got '-2'"),
        ("one", "2", "offset must be a finite number of seconds, got 'one'"),
        ("1", "nan", "duration must be a finite number of seconds, got 'nan'"),
        ("1", "inf", "duration must be a finite number of seconds, got 'inf'"),
    ],
)
def test_bad_offset_or_duration_is_one_manifest_error(tmp_path: Path, offset: str, duration: str, message: str) -> None:
    csv = tmp_path / "m.csv"
    csv.write_text(f"path,speaker,offset,duration\ncall.wav,a,{offset},{duration}\n")
    with pytest.raises(ManifestError) as exc:
        Manifest.read(csv)
    assert str(exc.value) == f"{csv}:2: row 'call.wav': {message}"


def test_bad_json_offset_is_one_manifest_error(tmp_path: Path) -> None:
    jsonl = tmp_path / "m.jsonl"
    jsonl.write_text('{"path": "call.wav", "speaker": "a", "offset": [1]}\n')
    with pytest.raises(ManifestError, match="'offset' must be text or a number, got a list"):
        Manifest.read(jsonl)


@pytest.mark.parametrize(
    ("span", "message"),
    [
        ((5.0, 2.0), "segment 5 s + 2 s reaches 1.000 s past the end of the 6.000 s file"),
        ((6.0, 1.0), "segment offset 6 s is at or past the end of the 6.000 s file"),
        ((0.0, 0.00001), "segment duration 1e-05 s holds no sample at 16000 Hz"),
    ],
)
def test_span_past_the_end_is_a_counted_failure(tmp_path: Path, recording: Path, span: tuple, message: str) -> None:
    with pytest.raises(AudioError) as exc:
        load(recording, FrontEnd(), span=span)
    assert str(exc.value) == f"{recording}: {message}"
    csv = tmp_path / "m.csv"
    csv.write_text(f"id,path,speaker,offset,duration\nlate,call.wav,a,{span[0]},{span[1]}\n")
    manifest = Manifest.read(csv)
    emb = Embedder(manifest, load_encoders(["mfcc-stats"], "cpu"), EmbeddingCache(tmp_path / "c.sqlite"), FrontEnd())
    chain = Chain()
    emb.run({chain.fingerprint: (chain, {"late"})})
    assert emb.failures == {("late", chain.fingerprint): f"{recording}: {message}"}


def test_a_run_on_segment_rows_with_trim_records_both(tmp_path: Path, session_cache: Path, tiny_corpus) -> None:
    """The tiny corpus with each utterance read as a segment of itself (from 0.1 s on) under
    --trim-silence: results count the segments and trims, run.json records trim_silence, and
    the run id differs from the untrimmed run's."""
    import dataclasses
    import json

    from conftest import tiny_experiment
    from run_helpers import run_in_process

    utts = tuple(dataclasses.replace(u, path=str(tiny_corpus.resolve(u)), sha256=None, offset=0.1) for u in tiny_corpus)
    Manifest(tiny_corpus.name, tmp_path, utts).write(tmp_path / "segments.csv")
    exp = tiny_experiment(tmp_path, trials={"targets": 6, "min_speakers": 4})
    out = run_in_process(exp, tmp_path, session_cache, manifest=tmp_path / "segments.csv", trim_silence=True)
    res = out.results
    from interbias.run.rundir import RunDir

    trials = RunDir(out.run_dir).read_trials()
    for row in res.itertuples(index=False):  # every (utterance, side) embedded was read as a segment
        sub = trials.for_stratum(row.stratum)
        assert row.n_segments + row.n_failed == sub["enrol"].nunique() + sub["test"].nunique()
    assert (res["n_segments"] > 0).all() and "n_trimmed" in res.columns
    run_json = json.loads((out.run_dir / "run.json").read_text())
    assert run_json["frontend"]["trim_silence"] is True
    assert run_json["experiment"]["frontend"]["trim_silence"] is True
    plain = run_in_process(exp, tmp_path / "plain", session_cache, manifest=tmp_path / "segments.csv")
    assert plain.run_dir.name != out.run_dir.name and "n_trimmed" not in plain.results.columns
    assert "trim_silence" not in json.loads((plain.run_dir / "run.json").read_text())["frontend"]
