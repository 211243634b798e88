from __future__ import annotations

from pathlib import Path

import fake_corpora
import pytest

from interbias.corpora.voxceleb1 import official_trial_lists, prepare_voxceleb1
from interbias.utils.errors import CorpusError


def test_meta_layout_and_trial_lists(tmp_path: Path) -> None:
    root = fake_corpora.voxceleb1(tmp_path / "vox")
    m = prepare_voxceleb1(root, tmp_path / "cache")
    assert m.speakers() == ["id10001", "id10270", "id10309"] and len(m) == 12
    u = m.by_id()["id10270/x6uYqmx31kE/00001"]  # the id is the trial lists' path without .wav
    assert (u.gender, u.session, u.get("nationality"), u.get("set"), u.path) == (
        "male",
        "x6uYqmx31kE",
        "USA",
        "test",
        "wav/id10270/x6uYqmx31kE/00001.wav",
    )
    assert m.by_id()["id10309/0cmPWVALMXM/00002"].gender == "female"
    assert u.get("years_from_first") is None and u.age_band is None
    assert official_trial_lists(root) == [root / "veri_test2.txt"]


def test_dates_and_birth_years_give_drift_and_age(tmp_path: Path) -> None:
    root = fake_corpora.voxceleb1(tmp_path / "vox", dates=True, births=True)
    by_id = prepare_voxceleb1(root).by_id()
    early, late = by_id["id10001/1zcIwhmdeo4/00001"], by_id["id10001/7gWzIy6yIIk/00002"]
    assert (early.get("year"), early.get("years_from_first"), late.get("years_from_first")) == ("2010", "0", "4")
    assert (early.age, early.age_band, late.age, late.age_band) == (33.0, "adult", 37.0, "adult")
    assert "publication" in late.get("proxy")
    same = by_id["id10270/x6uYqmx31kE/00002"]
    assert (same.get("years_from_first"), same.age, same.age_band) == ("0", 40.0, "adult")
    undated = by_id["id10309/0cmPWVALMXM/00001"]
    assert undated.get("year") is None and undated.get("proxy") is None


def test_malformed_roots(tmp_path: Path) -> None:
    (tmp_path / "v" / "vox1_dev_wav").mkdir(parents=True)
    with pytest.raises(CorpusError) as err:
        prepare_voxceleb1(tmp_path / "v")
    assert str(err.value) == (
        f"voxceleb1: {tmp_path / 'v'} does not look like voxceleb1: expected vox1_meta.csv and "
        "wav/idXXXXX/<video>/NNNNN.wav; found vox1_dev_wav/"
    )
    root = fake_corpora.voxceleb1(tmp_path / "vox")
    fake_corpora.tone(root / "wav" / "id19999" / "abc" / "00001.wav")
    with pytest.raises(
        CorpusError, match=r"expected every wav/ speaker listed in vox1_meta.csv; found id19999 not listed$"
    ):
        prepare_voxceleb1(root)
    (root / "vox1_meta.csv").write_text("id,sex\nid10001,m\n")
    with pytest.raises(
        CorpusError,
        match=r"expected vox1_meta.csv columns VoxCeleb1 ID, Gender, Nationality, Set; found columns id, sex$",
    ):
        prepare_voxceleb1(root)
    root = fake_corpora.voxceleb1(tmp_path / "vox2", dates=True)
    (root / "video_dates.csv").write_text("video,date\n1zcIwhmdeo4,May 2010\n")
    with pytest.raises(
        CorpusError, match=r"video_dates.csv video 1zcIwhmdeo4: date 'May 2010' is not YYYY or YYYY-MM-DD$"
    ):
        prepare_voxceleb1(root)


def test_impossible_age_is_an_error(tmp_path: Path) -> None:
    root = fake_corpora.voxceleb1(tmp_path / "vox", dates=True, births=True)
    (root / "speaker_birth_years.csv").write_text("speaker,birth_year\nid10001,2013\n")
    with pytest.raises(CorpusError) as err:
        prepare_voxceleb1(root)
    assert str(err.value) == (
        "voxceleb1: id10001/1zcIwhmdeo4: age -3 from 2010 (video date) minus 2013 (speaker_birth_years.csv) is not in 0..120"
    )
