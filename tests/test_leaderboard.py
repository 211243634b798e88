"""Leaderboard on constructed runs whose EERs are known by hand and do not move under resampling.

(:func:`synthetic_runs.pattern_run`: EER 0 for ``perfect``, 1/3 for ``third``, in every replicate.)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from synthetic_runs import PATTERNS, pattern_run
from typer.testing import CliRunner

from interbias import metrics
from interbias.analysis import leaderboard as lb
from interbias.analysis.runs import load
from interbias.analysis.suite import Options
from interbias.cli import app


@pytest.fixture
def runs(tmp_path: Path) -> list[Path]:
    both = {"clean": "perfect", "n10": "perfect"}
    return [
        pattern_run(tmp_path / "r1", 4, {"A": both, "B": {"clean": "third", "n10": "perfect"}, "C": both}),
        pattern_run(tmp_path / "r2", 4, {"D": {"clean": "third", "n10": "third"}}),  # same trial list as r1
        pattern_run(tmp_path / "r3", 5, {"A": both}),  # another trial list of the same experiment
    ]


def test_patterns_have_the_hand_computed_eer() -> None:
    labels = np.array([True] * 3 + [False] * 3)
    assert metrics.eer(np.array([*PATTERNS["perfect"][0], *PATTERNS["perfect"][1]]), labels) == 0.0
    assert metrics.eer(np.array([*PATTERNS["third"][0], *PATTERNS["third"][1]]), labels) == pytest.approx(1 / 3)


def test_values_intervals_and_rank_with_ties(runs: list[Path]) -> None:
    board = lb.build(load(runs[:2], Options(n_boot=50)))
    t = board.table.set_index("model")
    assert [c.label for c in board.columns] == ["S01"]
    assert t.loc[["A", "B", "C", "D"], "S01"].tolist() == pytest.approx([0, 1 / 6, 0, 1 / 3])
    assert t.loc["B", ["S01_lo", "S01_hi"]].tolist() == pytest.approx([1 / 6, 1 / 6])  # every replicate the same
    assert t.loc[["A", "B", "C", "D"], "macro"].tolist() == pytest.approx([0, 1 / 6, 0, 1 / 3])
    assert t.loc[["A", "C", "B", "D"], "rank"].tolist() == [1, 1, 3, 4]  # A and C cannot be separated
    assert t.loc["A", "not_separated_from"] == "C" and t.loc["B", "not_separated_from"] == ""
    pairs = board.pairs.set_index(["model_a", "model_b"])
    assert not pairs.loc[("A", "C"), "separated"] and pairs.loc[("A", "B"), "mean_diff"] == pytest.approx(-1 / 6)
    assert board.notes == []


def test_runs_on_other_trials_are_separate_columns_and_missing_is_said(runs: list[Path]) -> None:
    board = lb.build(load(runs, Options(n_boot=50)))
    labels = [c.label for c in board.columns]
    assert len(labels) == 2 and all(lab.startswith("S01 [") for lab in labels)
    shown = board.display().set_index("model")
    assert shown.loc["B", labels[1]] == "missing" and shown.loc["A", labels[1]] == "0.0000 [0.0000, 0.0000]"
    assert shown.loc[["A", "C", "B", "D"], "rank"].tolist() == ["1", "1", "3", "4"]  # on the shared column only
    text = "\n".join(board.notes)
    assert "S01 was run on 2 different trial lists" in text and "compared only within the same trial list" in text
    assert f"B: missing from {labels[1]}" in text and "rank uses the macro over the columns every encoder has" in text


def test_leaderboard_cli_on_a_folder(runs: list[Path], tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["leaderboard", str(tmp_path), "--bootstrap", "20", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert "note: S01 was run on 2 different trial lists" in res.output
    table = pd.read_csv(tmp_path / "leaderboard.csv")
    assert table["model"].tolist() == ["A", "C", "B", "D"]
    bad = CliRunner().invoke(app, ["leaderboard", str(tmp_path / "nowhere")])
    assert bad.exit_code == 1 and "does not exist" in bad.output
