"""The ASVspoof 5 adapter on a fake tree in the release's layout."""

from __future__ import annotations

from pathlib import Path

import fake_corpora
import pytest

from interbias.corpora import CORPORA
from interbias.corpora.asvspoof5 import prepare_asvspoof5
from interbias.utils.errors import CorpusError, ManifestError


@pytest.mark.parametrize("in_folder", [True, False])
def test_protocol_columns_labels_gender_and_splits(tmp_path: Path, in_folder: bool) -> None:
    root = fake_corpora.asvspoof5(tmp_path / "a5", in_protocol_folder=in_folder)
    m = prepare_asvspoof5(root)
    assert len(m) == sum(len(r) for r in fake_corpora.ASVSPOOF5.values())
    by = m.by_id()
    u = by["T_0000000002"]
    assert (u.speaker, u.gender, u.get("label"), u.get("split"), u.get("attack"), u.get("attack_tag")) == (
        "T_0001", "female", "spoof", "train", "A05", "AC3",
    )  # fmt: skip
    assert u.path == "flac_T/T_0000000002.flac" and m.resolve(u).is_file()
    b = by["E_0000000001"]
    assert (b.get("label"), b.get("attack"), b.get("split"), b.get("codec"), b.get("codec_q"), b.get("codec_seed")) == (
        "bonafide", "bonafide", "eval", "C05", "4", "1",
    )  # fmt: skip
    assert by["T_0000000001"].get("codec") is None  # '-' is absent, not a value
    assert by["D_0000000001"].gender == "male" and by["E_0000000003"].get("attack") == "A32"
    assert {s: {u.get("split") for u in m if u.speaker == s} for s in ("T_0001", "D_0002", "E_0002")} == {
        "T_0001": {"train"}, "D_0002": {"dev"}, "E_0002": {"eval"},
    }  # fmt: skip
    assert "asvspoof5" in CORPORA


def test_splits_option_reads_a_subset(tmp_path: Path) -> None:
    root = fake_corpora.asvspoof5(tmp_path / "a5")
    m = prepare_asvspoof5(root, options={"splits": "dev,eval"})
    assert {u.get("split") for u in m} == {"dev", "eval"} and len(m) == 6
    with pytest.raises(CorpusError, match=r"splits 'test': valid: train, dev, eval"):
        prepare_asvspoof5(root, options={"splits": "test"})


def _rewrite(root: Path, name: str, old: str, new: str) -> None:
    p = root / "ASVspoof5_protocols" / name
    p.write_text(p.read_text().replace(old, new, 1))


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (" F ", " X ", r"ASVspoof5.train.tsv:1: SPEAKER_GENDER 'X' is not F or M"),
        ("bonafide -\n", "genuine -\n", r"ASVspoof5.train.tsv:1: KEY 'genuine' is not bonafide or spoof"),
        (
            " - - - - bonafide",
            " - - - bonafide",
            r"ASVspoof5.train.tsv:1: expected 10 columns \(SPEAKER_ID .* TMP\), got 9",
        ),
    ],
)
def test_malformed_protocol_lines(tmp_path: Path, old: str, new: str, message: str) -> None:
    root = fake_corpora.asvspoof5(tmp_path / "a5")
    _rewrite(root, "ASVspoof5.train.tsv", old, new)
    with pytest.raises(CorpusError, match=message):
        prepare_asvspoof5(root)


def test_missing_audio_and_layout_and_speaker_overlap(tmp_path: Path) -> None:
    root = fake_corpora.asvspoof5(tmp_path / "a5")
    (root / "flac_D" / "D_0000000002.flac").unlink()
    with pytest.raises(
        CorpusError, match=r"ASVspoof5.dev.track_1.tsv lists 1 file\(s\) absent .* first: D_0000000002.flac"
    ):
        prepare_asvspoof5(root)
    root = fake_corpora.asvspoof5(tmp_path / "b5")
    _rewrite(root, "ASVspoof5.eval.track_1.tsv", "E_0002 ", "T_0002 ")  # a train speaker in eval
    with pytest.raises(
        ManifestError, match=r"1 speaker\(s\) appear in more than one split .* first: T_0002 in eval, train"
    ):
        prepare_asvspoof5(root)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(CorpusError, match=r"does not look like asvspoof5: expected ASVspoof5_protocols/"):
        prepare_asvspoof5(empty)
