from __future__ import annotations

from pathlib import Path

import fake_corpora
import pytest

from interbias.corpora.torgo import prepare_torgo
from interbias.utils.errors import CorpusError


def test_speakers_groups_mics_and_prompts(tmp_path: Path) -> None:
    root = fake_corpora.torgo(tmp_path / "torgo")
    m = prepare_torgo(root, tmp_path / "cache")
    assert m.speakers() == ["F01", "FC01", "M01", "MC01"]
    assert len(m) == 4 * 2 * 2 * 2  # speakers × sessions × prompts × mics
    by_id = m.by_id()
    u = by_id["MC01/Session2/head/0002"]
    assert (u.gender, u.get("pathology"), u.get("mic"), u.session, u.text) == (
        "male",
        "none",
        "head",
        "Session2",
        "prompt MC01 Session2 2",
    )
    assert u.path == "MC/MC01/Session2/wav_headMic/0002.wav"
    assert by_id["F01/Session1/array/0001"].get("pathology") == "dysarthria"
    assert by_id["F01/Session1/array/0001"].gender == "female"
    assert {x.get("pathology") for x in m if x.speaker.startswith(("F0", "M0"))} == {"dysarthria"}


def test_malformed_root(tmp_path: Path) -> None:
    (tmp_path / "t" / "data").mkdir(parents=True)
    with pytest.raises(CorpusError) as err:
        prepare_torgo(tmp_path / "t")
    assert str(err.value) == (
        f"torgo: {tmp_path / 't'} does not look like torgo: expected speaker folders F01, FC01, M01, MC01 … "
        "with Session*/wav_arrayMic|wav_headMic/*.wav; found data/"
    )
    (tmp_path / "t" / "F01" / "Session1").mkdir(parents=True)
    with pytest.raises(
        CorpusError,
        match=r"expected Session\*/wav_arrayMic or wav_headMic folders of .wav files; found speaker folders F01 without any$",
    ):
        prepare_torgo(tmp_path / "t")


def test_unreadable_audio_named(tmp_path: Path) -> None:
    root = fake_corpora.torgo(tmp_path / "torgo")
    bad = root / "F01" / "Session1" / "wav_arrayMic" / "0001.wav"
    bad.write_bytes(b"RIFF0000WAVEjunk")
    with pytest.raises(CorpusError, match=rf"^{bad}: cannot read the audio header \("):
        prepare_torgo(root)
