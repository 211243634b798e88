"""Lhotse RecordingSet + SupervisionSet manifests, hand-written in Lhotse's serialised format
(one JSON object per line, optionally gzipped), read without the lhotse package."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from interbias.audio import frontend as audio
from interbias.corpora import load_corpus, read_manifest
from interbias.experiments.schema import CorpusSpec
from interbias.utils.errors import ManifestError


def recording(rid: str, source: str, sample_rate_hz: int, seconds: float, **extra) -> dict:
    """A ``Recording.to_dict()`` as Lhotse writes it."""
    return {
        "id": rid,
        "sources": [{"type": "file", "channels": [0], "source": source}],
        "sampling_rate": sample_rate_hz,
        "num_samples": int(sample_rate_hz * seconds),
        "duration": seconds,
        "channel_ids": [0],
        **extra,
    }


def supervision(sid: str, rid: str, seconds: float, **extra) -> dict:
    """A ``SupervisionSegment.to_dict()`` as Lhotse writes it."""
    return {"id": sid, "recording_id": rid, "start": 0.0, "duration": seconds, "channel": 0, **extra}


def dump(path: Path, records: list[dict]) -> Path:
    text = "".join(json.dumps(r) + "\n" for r in records)
    if path.name.endswith(".gz"):
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            fh.write(text)
    else:
        path.write_text(text)
    return path


def libritts_like(root: Path, suffix: str = ".jsonl.gz") -> tuple[Path, Path]:
    """Two speakers, LibriTTS-style records at 24 kHz (gender F/M, custom orig_text and snr)."""
    recs, sups = [], []
    rng = np.random.default_rng(0)
    for spk, gender in (("8051", "F"), ("5328", "M")):
        for k in range(2):
            rid = f"{spk}_118101_00000{k}_000000"
            rel = f"LibriTTS/train-clean-100/{spk}/118101/{rid}.wav"
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            sf.write(root / rel, (0.1 * rng.standard_normal(24000 * 2)).astype(np.float32), 24000)
            recs.append(recording(rid, rel, 24000, 2.0))
            sups.append(
                supervision(
                    rid,
                    rid,
                    2.0,
                    text="Several arrivals.",
                    language="English",
                    speaker=spk,
                    gender=gender,
                    custom={"orig_text": "Several arrivals.", "snr": 25.03, "age": 41, "tags": ["read", "clean"]},
                )
            )
    return dump(root / f"libritts_recordings_dev{suffix}", recs), dump(
        root / f"libritts_supervisions_dev{suffix}", sups
    )


@pytest.mark.parametrize("suffix", [".jsonl.gz", ".jsonl"])
def test_supervisions_become_utterances(tmp_path: Path, suffix: str) -> None:
    rec_path, sup_path = libritts_like(tmp_path, suffix)
    for given in (tmp_path, sup_path, rec_path):
        man = read_manifest(given)
        assert len(man) == 4 and man.speakers() == ["5328", "8051"]
    man = read_manifest(sup_path)
    u = man.by_id()["8051_118101_000001_000000"]
    assert (u.speaker, u.gender, u.text, u.duration_s, u.sample_rate_hz, u.age) == (
        "8051",
        "F",
        "Several arrivals.",
        2.0,
        24000,
        41.0,
    )
    assert u.get("language") == "English" and u.get("snr") == "25.03" and u.get("orig_text") == "Several arrivals."
    assert u.get("tags") == '["read","clean"]' and u.get("recording_id") is None
    assert man.name == "libritts_dev"
    loaded = audio.load(man.resolve(u))
    assert loaded.source_rate_hz == 24000 and loaded.sample_rate_hz == 16000 and len(loaded.samples) == 32000
    # the same through an experiment's corpus spec (what `corpus: {manifest: DIR}` does)
    via_spec = load_corpus(CorpusSpec("manifest", manifest=str(tmp_path)), cache=tmp_path / "cache")
    assert via_spec.sha256() == man.sha256() and via_spec.name == tmp_path.name


def test_relative_sources_follow_the_data_root(tmp_path: Path) -> None:
    rec_path, sup_path = libritts_like(tmp_path / "audio")
    meta = tmp_path / "meta"
    meta.mkdir()
    moved = [p.rename(meta / p.name) for p in (rec_path, sup_path)]
    with pytest.raises(
        ManifestError, match=r"4 of 4 audio path\(s\) cannot be read \(relative paths resolve against .*meta\)"
    ):
        read_manifest(moved[1])
    assert len(read_manifest(moved[1], root=tmp_path / "audio")) == 4


def write_pair(tmp_path: Path, recs: list[dict], sups: list[dict]) -> Path:
    for r in recs:
        for src in r["sources"]:
            if src["type"] == "file" and not (tmp_path / src["source"]).exists():
                sf.write(tmp_path / src["source"], np.zeros(16000, np.float32) + 0.01, 16000)
    dump(tmp_path / "recordings.jsonl", recs)
    return dump(tmp_path / "supervisions.jsonl", sups)


@pytest.mark.parametrize(
    ("rec_extra", "reason"),
    [
        (
            {"sources": [{"type": "url", "channels": [0], "source": "s3://bucket/a.wav"}]},
            "source type 'url' (only 'file' is read)",
        ),
        (
            {
                "sources": [
                    {"type": "file", "channels": [0], "source": "a.wav"},
                    {"type": "file", "channels": [1], "source": "b.wav"},
                ],
                "channel_ids": [0, 1],
            },
            "2 sources (one file per channel); interbias reads one file per utterance",
        ),
        (
            {"channel_ids": [0, 1], "sources": [{"type": "file", "channels": [0, 1], "source": "a.wav"}]},
            "2 channels; interbias reads mono recordings (a supervision picks one channel)",
        ),
        (
            {"transforms": [{"name": "Speed", "kwargs": {"factor": 1.1}}]},
            "transforms (Speed) that interbias does not reproduce",
        ),
    ],
)
def test_recordings_interbias_cannot_reproduce(tmp_path: Path, rec_extra: dict, reason: str) -> None:
    rec = {**recording("a", "a.wav", 16000, 1.0), **rec_extra}
    sup_path = write_pair(tmp_path, [rec], [supervision("a", "a", 1.0, speaker="s")])
    with pytest.raises(ManifestError) as exc:
        read_manifest(sup_path)
    assert str(exc.value) == (
        f"{tmp_path / 'recordings.jsonl'}: 1 recording(s) interbias cannot read as one whole local file; "
        f"first: line 1 'a': {reason}"
    )


def test_supervision_problems_listed_together(tmp_path: Path) -> None:
    recs = [recording("a", "a.wav", 16000, 1.0), recording("b", "b.wav", 16000, 4.0)]
    sups = [
        supervision("a", "a", 1.0, speaker="s1"),
        {**supervision("b-1", "b", 2.0, speaker="s2"), "start": 2.5},
        {**supervision("b-2", "b", 2.0, speaker="s2"), "start": -1.0},
        supervision("c", "zz", 1.0, speaker="s3"),
        supervision("d", "a", 1.0),
        supervision("e", "a", 1.0, speaker="s4", custom={"speaker": "other"}),
    ]
    sup_path = write_pair(tmp_path, recs, sups)
    with pytest.raises(ManifestError) as exc:
        read_manifest(sup_path)
    assert str(exc.value) == (
        f"{sup_path}: 5 supervision(s) cannot become utterances; first: "
        "line 2 'b-1': covers 2.5-4.5 s of a 4 s recording: it ends past the recording; "
        "line 3 'b-2': start -1 s, duration 2 s: need start >= 0 and duration > 0; "
        "line 4 'c': recording_id 'zz' is not in recordings.jsonl; "
        "line 5 'd': no speaker; supervision 'e': custom key(s) speaker clash with its own fields"
    )


def test_small_offsets_within_tolerance_are_whole_files(tmp_path: Path) -> None:
    rec = recording("a", "a.wav", 16000, 1.0)
    sup = {**supervision("a", "a", 0.99, speaker="s"), "start": 0.01}
    man = read_manifest(write_pair(tmp_path, [rec], [sup]))
    assert [u.id for u in man] == ["a"]


def test_folder_needs_exactly_one_pair(tmp_path: Path) -> None:
    libritts_like(tmp_path)
    dump(tmp_path / "more_supervisions.jsonl", [supervision("x", "y", 1.0, speaker="s")])
    with pytest.raises(ManifestError) as exc:
        read_manifest(tmp_path)
    assert str(exc.value) == (
        f"{tmp_path}: a Lhotse folder needs exactly one recordings and one supervisions manifest "
        "(.jsonl or .jsonl.gz); found 1 and 2"
    )


def test_partner_file_missing(tmp_path: Path) -> None:
    sup = dump(tmp_path / "cv_supervisions_test.jsonl.gz", [supervision("x", "x", 1.0, speaker="s")])
    with pytest.raises(ManifestError) as exc:
        read_manifest(sup)
    assert str(exc.value) == f"{sup}: its Lhotse recordings manifest is missing (looked for cv_recordings_test.jsonl)"


def test_partial_supervisions_become_segment_rows(tmp_path: Path) -> None:
    """Supervisions covering part of a recording are read as offset/duration rows (an end within
    the tolerance past the recording is cut to its end); one covering the file stays whole."""
    sf.write(tmp_path / "b.wav", np.zeros(16000 * 4, dtype=np.float32), 16000)
    recs = [recording("b", "b.wav", 16000, 4.0)]
    sups = [
        supervision("b-1", "b", 2.0, speaker="s"),
        {**supervision("b-2", "b", 2.01, speaker="s"), "start": 2.0},
        supervision("b-all", "b", 4.0, speaker="t"),
    ]
    man = read_manifest(write_pair(tmp_path, recs, sups))
    by_id = man.by_id()
    assert by_id["b-1"].span == (0.0, 2.0)
    assert by_id["b-2"].span == (2.0, 2.0)
    assert by_id["b-2"].duration_s == 2.0
    assert by_id["b-all"].span is None
