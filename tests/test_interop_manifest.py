"""User manifests: strict validation (one error with counts and the first offending lines) and
audio in any common format and sample rate decoded in process."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from interbias.audio import frontend as audio
from interbias.corpora import read_manifest
from interbias.utils.errors import ManifestError


def tone(sample_rate_hz: int, seconds: float = 1.5, hz: float = 440.0) -> np.ndarray:
    t = np.arange(int(sample_rate_hz * seconds)) / sample_rate_hz
    return (0.3 * np.sin(2 * np.pi * hz * t)).astype(np.float32)


def write_m4a(path: Path, x: np.ndarray, sample_rate_hz: int) -> None:
    """AAC in an MP4 container, encoded in process with PyAV."""
    import av

    with av.open(str(path), "w", format="mp4") as out:
        stream = out.add_stream("aac", rate=sample_rate_hz)
        stream.layout = "mono"
        frame = av.AudioFrame.from_ndarray(x.reshape(1, -1), format="flt", layout="mono")
        frame.sample_rate = sample_rate_hz
        for packet in stream.encode(frame):
            out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)


@pytest.mark.parametrize(
    ("ext", "sample_rate_hz"),
    [("wav", 8000), ("flac", 44100), ("ogg", 22050), ("mp3", 48000), ("m4a", 32000), ("wav", 16000)],
)
def test_formats_and_rates_decode_to_16k(tmp_path: Path, ext: str, sample_rate_hz: int) -> None:
    x = tone(sample_rate_hz)
    path = tmp_path / f"a.{ext}"
    if ext == "m4a":
        write_m4a(path, x, sample_rate_hz)
    else:
        sf.write(path, x, sample_rate_hz)
    loaded = audio.load(path)
    assert loaded.source_rate_hz == sample_rate_hz and loaded.sample_rate_hz == 16000
    # codecs pad or trim a few ms: the duration survives within 60 ms
    assert abs(loaded.duration_s - 1.5) < 0.06
    # the 440 Hz tone is still where it was after decoding and resampling
    spec = np.abs(np.fft.rfft(loaded.samples))
    peak_hz = np.argmax(spec) * 16000 / len(loaded.samples)
    assert abs(peak_hz - 440.0) < 2.0


def write_files(root: Path, names: list[str]) -> None:
    for name in names:
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        sf.write(p, tone(16000), 16000)


def test_good_manifest_any_columns_usable(tmp_path: Path) -> None:
    write_files(tmp_path / "data", ["s1/a.wav", "s2/b.wav"])
    m = tmp_path / "m.csv"
    m.write_text(
        "path,speaker,gender,emotion,date\ns1/a.wav,s1,female,angry,2024-01-02\ns2/b.wav,s2,male,calm,2024-02-03\n"
    )
    man = read_manifest(m, root=tmp_path / "data")
    assert [u.id for u in man] == ["s1/a", "s2/b"]
    assert man.utterances[0].get("emotion") == "angry" and man.utterances[1].get("date") == "2024-02-03"
    assert man.root == tmp_path / "data"


def test_unreadable_paths_one_error_with_counts_and_lines(tmp_path: Path) -> None:
    write_files(tmp_path, ["ok.wav", "ok2.wav"])
    (tmp_path / "empty.wav").write_bytes(b"")
    (tmp_path / "adir.wav").mkdir()
    m = tmp_path / "m.csv"
    m.write_text(
        "path,speaker\nok.wav,s1\nmissing.wav,s1\nempty.wav,s2\nadir.wav,s2\n../outside.wav,s3\nok2.wav,s4\n"
        "gone/x.wav,s5\ngone/y.wav,s5\n"
    )
    with pytest.raises(ManifestError) as exc:
        read_manifest(m)
    assert str(exc.value) == (
        f"{m}: 6 of 8 audio path(s) cannot be read (relative paths resolve against {tmp_path}); first: "
        "line 3 'missing.wav' (no such file), line 4 'empty.wav' (empty file), line 5 'adir.wav' (a folder, not a "
        "file), line 6 '../outside.wav' (escapes the corpus root), line 8 'gone/x.wav' (no such file)"
    )


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files without read permission")
def test_permission_denied(tmp_path: Path) -> None:
    write_files(tmp_path, ["a.wav"])
    (tmp_path / "a.wav").chmod(0)
    m = tmp_path / "m.csv"
    m.write_text("path,speaker\na.wav,s1\n")
    with pytest.raises(
        ManifestError, match=r"1 of 1 audio path\(s\) cannot be read .*line 2 'a.wav' \(permission denied\)"
    ):
        read_manifest(m)


def test_duplicate_ids_list_their_lines(tmp_path: Path) -> None:
    m = tmp_path / "m.csv"
    m.write_text("path,speaker\ns1/a.wav,s1\ns1/a.flac,s1\ns2/b.wav,s2\ns2/b.wav,s2\ns3/c.wav,s3\n")
    with pytest.raises(ManifestError) as exc:
        read_manifest(m)
    assert str(exc.value) == (
        f"{m}: 2 duplicate id(s); first: 's1/a' (lines 2, 3), 's2/b' (lines 4, 5) (4 rows in all; "
        "an id defaults to the path without its extension: give an 'id' column to disambiguate)"
    )


def test_jsonl_lines_count_blank_lines(tmp_path: Path) -> None:
    m = tmp_path / "m.jsonl"
    m.write_text('{"id": "u", "path": "a.wav", "speaker": "s"}\n\n{"id": "u", "path": "b.wav", "speaker": "s"}\n')
    with pytest.raises(ManifestError, match=r"1 duplicate id\(s\); first: 'u' \(lines 1, 3\) \(2 rows in all"):
        read_manifest(m)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("file,spk\na.wav,s\n", "{m}: missing required column(s) path, speaker; found: file, spk"),
        ("path,speaker\n", "{m}: manifest has no rows"),
        (
            "path,speaker\na.wav,\n,s\nb.wav,s\n",
            "{m}: 2 row(s) with an empty path or speaker; first at line(s) 2, 3",
        ),
        (
            "path,speaker,age\na.wav,s,old\n",
            "{m}:2: row 'a' has a non-numeric value: could not convert string to float: 'old'",
        ),
    ],
)
def test_bad_manifest_messages(tmp_path: Path, text: str, message: str) -> None:
    m = tmp_path / "m.csv"
    m.write_text(text)
    with pytest.raises(ManifestError) as exc:
        read_manifest(m)
    assert str(exc.value) == message.format(m=m)


def test_missing_manifest_and_wrong_suffix(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match=r"^manifest .*none.csv does not exist$"):
        read_manifest(tmp_path / "none.csv")
    bad = tmp_path / "m.tsv"
    bad.write_text("path\tspeaker\n")
    with pytest.raises(ManifestError, match=r"m.tsv: manifest files end in .csv or .jsonl$"):
        read_manifest(bad)
