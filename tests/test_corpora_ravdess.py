from __future__ import annotations

from collections import Counter
from pathlib import Path

import fake_corpora
import pytest

from interbias.corpora import CORPORA
from interbias.corpora.ravdess import prepare_ravdess
from interbias.utils.errors import CorpusError


def test_parses_fields_gender_and_skips_song(tmp_path: Path) -> None:
    root = fake_corpora.ravdess(tmp_path / "rav")
    m = prepare_ravdess(root, tmp_path / "cache")
    # 3 actors × (8 emotions × 2 statements + 1 strong) speech files; song files left out
    assert len(m) == 3 * 17
    assert m.speakers() == ["Actor_01", "Actor_02", "Actor_03"]
    by_id = m.by_id()
    u = by_id["Actor_02/03-01-06-01-02-01-02"]
    assert (u.gender, u.style, u.get("intensity"), u.get("statement"), u.text) == (
        "female",
        "fearful",
        "normal",
        "02",
        "Dogs are sitting by the door.",
    )
    assert by_id["Actor_01/03-01-05-02-01-02-01"].get("intensity") == "strong"
    assert {x.gender for x in m if x.speaker in ("Actor_01", "Actor_03")} == {"male"}
    assert "Actor_01/03-02-03-01-01-01-01" not in by_id  # song
    styles = Counter(x.style for x in m)
    assert set(styles) == {"neutral", "calm", "happy", "sad", "angry", "fearful", "disgust", "surprised"}
    assert styles["angry"] == 3 * 3
    assert all(x.duration_s == pytest.approx(1.5) and x.sample_rate_hz == 16000 for x in m)
    assert (root / m.utterances[0].path).is_file()


def test_nested_release_folder(tmp_path: Path) -> None:
    root = fake_corpora.ravdess(tmp_path / "rav", actors=(5,), nested=True)
    m = prepare_ravdess(root)
    assert m.speakers() == ["Actor_05"] and m.utterances[0].path.startswith("Audio_Speech_Actors_01-24/Actor_05/")


def test_malformed_root_says_expected_and_found(tmp_path: Path) -> None:
    (tmp_path / "rav" / "speech").mkdir(parents=True)
    (tmp_path / "rav" / "readme.txt").write_text("x")
    with pytest.raises(CorpusError) as err:
        prepare_ravdess(tmp_path / "rav")
    assert str(err.value) == (
        f"ravdess: {tmp_path / 'rav'} does not look like ravdess: expected Actor_01 … Actor_24 folders of "
        "MM-VV-EE-II-SS-RR-AA.wav files (the Audio_Speech_Actors_01-24 release); found readme.txt, speech/"
    )


def test_bad_file_name_and_actor_mismatch(tmp_path: Path) -> None:
    root = fake_corpora.ravdess(tmp_path / "rav", actors=(1,))
    fake_corpora.tone(root / "Actor_01" / "take1.wav")
    with pytest.raises(
        CorpusError, match=r"expected file names MM-VV-EE-II-SS-RR-AA.wav .*; found Actor_01/take1.wav$"
    ):
        prepare_ravdess(root)
    (root / "Actor_01" / "take1.wav").unlink()
    fake_corpora.tone(root / "Actor_01" / "03-01-01-01-01-01-07.wav")
    with pytest.raises(
        CorpusError, match=r"found Actor_01/03-01-01-01-01-01-07.wav: actor field 07 in folder Actor_01$"
    ):
        prepare_ravdess(root)


def test_registered_adapter_and_header_cache(tmp_path: Path) -> None:
    root = fake_corpora.ravdess(tmp_path / "rav", actors=(1,))
    adapter = CORPORA.get("ravdess")
    first = adapter.prepare(root, tmp_path / "cache", {})
    assert list((tmp_path / "cache" / "corpora" / "headers").glob("ravdess-*.json"))
    assert adapter.prepare(root, tmp_path / "cache", {}).sha256() == first.sha256()
    with pytest.raises(CorpusError, match=r"^ravdess: unknown option 'split'; valid: \(none\)$"):
        adapter.prepare(root, tmp_path / "cache", {"split": "x"})
