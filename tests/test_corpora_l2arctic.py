from __future__ import annotations

from pathlib import Path

import fake_corpora
import pytest

from interbias.corpora.l2arctic import SPEAKERS, prepare_l2arctic
from interbias.utils.errors import CorpusError


def test_speakers_l1_gender_transcripts(tmp_path: Path) -> None:
    root = fake_corpora.l2arctic(tmp_path / "l2")
    m = prepare_l2arctic(root, tmp_path / "cache")
    assert m.speakers() == ["ABA", "HJK", "SKA"] and len(m) == 9  # suitcase_corpus is not a speaker
    u = m.by_id()["SKA/arctic_a0002"]
    assert (u.gender, u.accent, u.get("l1"), u.text, u.sample_rate_hz) == (
        "female",
        "arabic",
        "arabic",
        "Author of the danger trail 2",
        44100,
    )
    assert m.by_id()["HJK/arctic_a0001"].accent == "korean"
    table = list(SPEAKERS.values())
    assert len(SPEAKERS) == 24 and {g for _, g in table} == {"female", "male"}
    for l1 in {a for a, _ in table}:  # two female and two male speakers per L1
        assert sorted(g for a, g in table if a == l1) == ["female", "female", "male", "male"]


def test_malformed_roots(tmp_path: Path) -> None:
    (tmp_path / "l2" / "ABA").mkdir(parents=True)
    with pytest.raises(CorpusError) as err:
        prepare_l2arctic(tmp_path / "l2")
    assert str(err.value) == (
        f"l2arctic: {tmp_path / 'l2'} does not look like l2arctic: expected speaker folders ABA, SKA, … "
        "(the 24 L2-ARCTIC speakers) each with wav/*.wav; found ABA/"
    )
    root = fake_corpora.l2arctic(tmp_path / "l2b")
    fake_corpora.tone(root / "XYZ" / "wav" / "arctic_a0001.wav")
    with pytest.raises(CorpusError, match=r"found unknown speaker folder XYZ$"):
        prepare_l2arctic(root)
