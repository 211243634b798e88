"""The ADD 2023 adapter on fake trees: Track 2 regions in samples, Track 3 classes, one line per
malformed label file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from typer.testing import CliRunner

from interbias.cli import app
from interbias.corpora.add2023 import prepare_add2023
from interbias.utils.errors import CorpusError


def tree(root: Path, track: int, split: str, lines: list[str], wavs: dict[str, float]) -> Path:
    folder = root / f"track{track}" / split
    (folder / "wav").mkdir(parents=True, exist_ok=True)
    (folder / "label.txt").write_text("".join(line + "\n" for line in lines))
    for utt, seconds in wavs.items():
        sf.write(str(folder / "wav" / f"{utt}.wav"), np.zeros(int(seconds * 16000), dtype=np.float32), 16000)
    return root


def test_track2_tree(tmp_path):
    tree(tmp_path, 2, "train", ["a 0.00-0.50-T/0.50-0.75-F/0.75-1.00-T 0", "b 0-1.0-T 1"], {"a": 1.0, "b": 1.0})
    tree(tmp_path, 2, "test", ["c.wav 0-0.2-F/0.2-0.5-T 0"], {"c": 0.5})
    m = prepare_add2023(tmp_path, tmp_path, {})
    by = m.by_id()
    assert sorted(by) == ["eval/c", "train/a", "train/b"]
    assert by["train/a"].get("fake_regions") == "8000-12000" and by["train/a"].get("label") == "spoof"
    assert by["train/b"].get("label") == "bonafide" and by["train/b"].get("fake_regions") is None
    assert by["eval/c"].get("split") == "eval" and by["eval/c"].get("fake_regions") == "0-3200"
    assert m.resolve(by["eval/c"]) == tmp_path / "track2" / "test" / "wav" / "c.wav"


def test_track3_tree_and_cli(tmp_path):
    tree(tmp_path, 3, "train", ["x 0", "y 3", "z.wav 5"], {"x": 0.1, "y": 0.1, "z": 0.1})
    m = prepare_add2023(tmp_path, tmp_path, {"track": "3"})
    assert [(u.id, u.get("label"), u.get("algorithm")) for u in m] == [
        ("train/x", "bonafide", "0"), ("train/y", "spoof", "3"), ("train/z", "spoof", "5"),
    ]  # fmt: skip
    out = tmp_path / "m.jsonl"
    res = CliRunner().invoke(app, ["data", "prepare", "add2023", "--root", str(tmp_path), "--set", "track=3",
                                   "--out", str(out)])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert json.loads(out.read_text().splitlines()[1])["algorithm"] == "3"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("a 0-1-T", "expected 'UTT_ID START-END-T/START-END-F/... LABEL', got 'a 0-1-T'"),
        ("a 0-1-Q 1", "segment '0-1-Q' is not START-END-T or START-END-F (seconds)"),
        ("a 0-0.5-T/0.4-1-F 0", "segment '0.4-1-F' overlaps the previous one (which ends at 0.5 s)"),
        ("a 0.5-1-T/0-0.5-F 0", "segment '0-0.5-F' is out of order (starts before the previous segment)"),
        ("a 0-1-T/1-2-F 1", "label 1 disagrees with the segments (0 = fake exactly when a segment is F)"),
        ("a 0-1-T 7", "label '7' is not 1 (genuine) or 0 (fake)"),
        ("a 0-0.5-T/0.5-1.5-F 0", "fake segment ends at 1.5 s, after the audio's end (1 s)"),
        ("b 0-1-T 1", "audio {root}/track2/train/wav/b.wav does not exist"),
    ],
)
def test_malformed_track2_lines_are_one_line_each(tmp_path, line, message):
    tree(tmp_path, 2, "train", ["a 0-1-T 1", line] if line.startswith("b") else [line], {"a": 1.0})
    with pytest.raises(CorpusError) as exc:
        prepare_add2023(tmp_path, tmp_path, {})
    lineno = 2 if line.startswith("b") else 1
    assert str(exc.value) == f"{tmp_path}/track2/train/label.txt:{lineno}: " + message.format(root=tmp_path)


def test_malformed_files_and_options(tmp_path):
    tree(tmp_path, 3, "dev", ["x 0", "x 1"], {"x": 0.1})
    with pytest.raises(CorpusError, match=r"dev/label.txt:2: utterance 'x' is listed twice$"):
        prepare_add2023(tmp_path, tmp_path, {"track": 3})
    tree(tmp_path, 3, "dev", ["x 0 extra"], {})
    with pytest.raises(CorpusError, match=r"label.txt:1: expected 'UTT_ID CLASS', got 'x 0 extra'$"):
        prepare_add2023(tmp_path, tmp_path, {"track": 3})
    (tmp_path / "track3" / "dev" / "label.txt").write_text("\n")
    with pytest.raises(CorpusError, match=r"label.txt has no lines$"):
        prepare_add2023(tmp_path, tmp_path, {"track": 3})
    with pytest.raises(CorpusError, match="holds none of the split folders train, dev, eval, test"):
        prepare_add2023(tmp_path, tmp_path, {"track": 2})
    with pytest.raises(CorpusError, match="track '1': this adapter reads Track 2 or 3"):
        prepare_add2023(tmp_path, tmp_path, {"track": 1})
    with pytest.raises(CorpusError, match="unknown option 'round'"):
        prepare_add2023(tmp_path, tmp_path, {"round": 1})
