"""`corpus info --by split,gender`: speakers and utterances per pair of values (the seed
paper's Fig. 2 counts), checked by hand."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from interbias.cli import app
from interbias.corpora.info import crosstab
from interbias.corpora.manifest import Manifest, Utterance


def _manifest(tmp_path) -> Manifest:
    spec = [("a", "f", "train", 3), ("b", "f", "test", 2), ("c", "m", "train", 1), ("d", "m", "train", 2)]
    utts = [
        Utterance(id=f"{s}{i}", path=f"{s}{i}.wav", speaker=s, gender=g, attrs={"split": sp})
        for s, g, sp, n in spec
        for i in range(n)
    ]
    return Manifest("toy", tmp_path, (*utts, Utterance(id="x", path="x.wav", speaker="x", gender="f")))


def test_crosstab_counts_speakers_and_utterances(tmp_path) -> None:
    counts, rows, cols = crosstab(_manifest(tmp_path), "split", "gender")
    assert rows == ["test", "train"] and cols == ["f", "m"]
    assert counts == {("test", "f"): (1, 2), ("train", "f"): (1, 3), ("train", "m"): (2, 3)}  # x has no split


def test_cli_by(tmp_path) -> None:
    path = tmp_path / "m.csv"
    _manifest(tmp_path).write(path)
    done = CliRunner().invoke(app, ["data", "info", str(path), "--by", "split,gender"])
    assert done.exit_code == 0, done.output
    lines = done.output.splitlines()
    assert lines[2].split() == ["test", "1", "/", "2", "0", "/", "0"]
    assert lines[3].split() == ["train", "1", "/", "3", "2", "/", "3"]
    cells = json.loads(CliRunner().invoke(app, ["data", "info", str(path), "--by", "split,gender", "--json"]).output)
    assert {"split": "train", "gender": "m", "speakers": 2, "utterances": 3} in cells
    bad = CliRunner().invoke(app, ["data", "info", str(path), "--by", "split"])
    assert bad.exit_code != 0 and "give two attributes as ROWS,COLUMNS" in bad.output
