from __future__ import annotations

from pathlib import Path

import fake_corpora
import numpy as np
import pytest

from interbias.audio import frontend as audio
from interbias.corpora.commonvoice import normalise_accent, prepare_commonvoice
from interbias.utils.errors import CorpusError


def test_tsv_attributes_normalised(tmp_path: Path) -> None:
    root = fake_corpora.commonvoice(tmp_path / "cv")
    m = prepare_commonvoice(root, tmp_path / "cache")
    assert len(m) == 6 and m.speakers() == ["aaa111", "bbb222", "ccc333", "ddd444"]
    by_id = m.by_id()
    u1, u3, u5, u6 = (by_id[f"common_voice_en_{i}"] for i in (1, 3, 5, 6))
    assert (u1.gender, u1.age_band, u1.accent, u1.get("age_bin"), u1.text) == (
        "female",
        "young",
        "us",
        "twenties",
        "sentence 0",
    )
    assert (u3.gender, u3.age_band, u3.accent, u3.get("gender_label")) == ("male", "elderly", "gb", "male_masculine")
    # two accents listed: no single accent; the raw text is kept
    assert (u5.gender, u5.age_band, u5.accent, u5.get("accents")) == (
        None,
        "adult",
        None,
        "Scottish English|England English",
    )
    assert (u6.gender, u6.age_band, u6.accent) == ("non-binary", None, "kenyan_english")
    assert u1.path == "clips/common_voice_en_1.mp3" and u1.duration_s == 1.0  # clip_durations.tsv
    assert u6.duration_s == 2.25


def test_mp3_clips_decode_in_process(tmp_path: Path) -> None:
    root = fake_corpora.commonvoice(tmp_path / "cv", durations=False)
    m = prepare_commonvoice(root)
    u = m.by_id()["common_voice_en_3"]
    assert u.sample_rate_hz == 48000 and u.duration_s == pytest.approx(1.5, abs=0.06)
    loaded = audio.load(m.resolve(u))
    assert loaded.source_rate_hz == 48000 and loaded.sample_rate_hz == 16000
    assert abs(loaded.duration_s - 1.5) < 0.06 and np.abs(loaded.samples).max() > 0.2


def test_split_option_and_accent_codes(tmp_path: Path) -> None:
    root = fake_corpora.commonvoice(tmp_path / "cv")
    assert len(prepare_commonvoice(root, options={"split": "test"})) == 2
    assert normalise_accent("West Indies and Bermuda (Bahamas, Bermuda, Jamaica, Trinidad)") == "wi"
    assert normalise_accent("scotland") == "sc" and normalise_accent("") is None


def test_malformed_roots(tmp_path: Path) -> None:
    (tmp_path / "cv" / "en").mkdir(parents=True)
    with pytest.raises(CorpusError) as err:
        prepare_commonvoice(tmp_path / "cv")
    assert str(err.value) == (
        f"commonvoice: {tmp_path / 'cv'} does not look like commonvoice: expected a Common Voice locale folder: "
        "validated.tsv (client_id, path, age, gender, accents) and clips/*.mp3; found en/"
    )
    root = fake_corpora.commonvoice(tmp_path / "cv2")
    (root / "clips" / "common_voice_en_4.mp3").unlink()
    with pytest.raises(
        CorpusError, match=r"1 clip\(s\) listed in .*validated.tsv are not in .*clips; first: common_voice_en_4.mp3$"
    ):
        prepare_commonvoice(root)
    (root / "validated.tsv").write_text("id\tfile\nx\ty.mp3\n")
    with pytest.raises(CorpusError, match=r"expected validated.tsv columns client_id, path; found columns id, file$"):
        prepare_commonvoice(root)
