from __future__ import annotations

import json
from pathlib import Path

import fake_corpora
import pytest

from interbias.corpora.ears import prepare_ears
from interbias.utils.errors import CorpusError


def test_styles_ages_and_nonverbal_left_out(tmp_path: Path) -> None:
    root = fake_corpora.ears(tmp_path / "ears")
    m = prepare_ears(root, tmp_path / "cache")
    assert m.speakers() == ["p001", "p002", "p003"]
    assert len(m) == 3 * (len(fake_corpora.EARS_FILES) - 1)
    by_id = m.by_id()
    assert "p001/nonverbal_laughing" not in by_id
    expect = {
        "emo_anger_sentences": ("angry", "anger", "emotion"),
        "emo_neutral_sentences": ("neutral", "neutral", "emotion"),
        "emo_adoration_freeform": ("adoration", "adoration", "emotion"),
        "rainbow_01_regular": ("regular", "regular", "reading"),
        "rainbow_01_whisper": ("whispered", "whisper", "reading"),
        "sentences_02_highpitch": ("high_pitch", "highpitch", "reading"),
        "freeform_speech_01": ("freeform", "freeform", "freeform"),
    }
    for stem, (style, raw, kind) in expect.items():
        u = by_id[f"p002/{stem}"]
        assert (u.style, u.get("corpus_style"), u.get("style_kind")) == (style, raw, kind)
    p1, p2, p3 = by_id["p001/rainbow_01_regular"], by_id["p002/rainbow_01_regular"], by_id["p003/rainbow_01_regular"]
    assert (p1.gender, p1.age_band, p1.get("age_range"), p1.get("native_language")) == (
        "male",
        "adult",
        "36-45",
        "german",
    )
    assert (p2.gender, p2.age_band) == ("female", "young")
    assert p3.age_band == "elderly"
    assert p1.text == "When the sunlight strikes raindrops." and by_id["p001/emo_anger_sentences"].text is None
    assert all(u.sample_rate_hz == 48000 and u.get("pathology") == "none" for u in m)


def test_malformed_roots(tmp_path: Path) -> None:
    (tmp_path / "e" / "audio").mkdir(parents=True)
    with pytest.raises(CorpusError) as err:
        prepare_ears(tmp_path / "e")
    assert str(err.value) == (
        f"ears: {tmp_path / 'e'} does not look like ears: expected speaker_statistics.json and speaker folders "
        "p001, p002, … of .wav files; found audio/"
    )
    root = fake_corpora.ears(tmp_path / "ears")
    stats = json.loads((root / "speaker_statistics.json").read_text())
    del stats["p003"]
    (root / "speaker_statistics.json").write_text(json.dumps(stats))
    with pytest.raises(
        CorpusError,
        match=r"expected an entry for every speaker folder in speaker_statistics.json; found none for p003$",
    ):
        prepare_ears(root)
    root = fake_corpora.ears(tmp_path / "ears2")
    fake_corpora.tone(root / "p001" / "take_7.wav")
    with pytest.raises(CorpusError, match=r"freeform_speech_NN, nonverbal_\*/vegetative_\*; found p001/take_7.wav$"):
        prepare_ears(root)
