"""Leaderboard on constructed runs whose EERs are known by hand and do not move under resampling.

(:func:`synthetic_runs.pattern_run`: EER 0 for ``perfect``, 1/3 for ``third``, in every replicate.)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm
from statsmodels.stats.multitest import multipletests
from synthetic_runs import PATTERNS, pattern_run
from typer.testing import CliRunner

from interbias.analysis.across import leaderboard as lb
from interbias.analysis.across.runs import load
from interbias.analysis.suite import Options
from interbias.cli import app
from interbias.metrics import verification as metrics
from interbias.utils.seeding import derive_rng


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
    # replicates that never move have no p-value: nothing is separated, every encoder ranks 1
    assert t.loc[["A", "C", "B", "D"], "rank"].tolist() == [1, 1, 1, 1]
    assert t.loc["A", "not_separated_from"] == "B, C, D"
    pairs = board.pairs.set_index(["model_a", "model_b"])
    assert list(board.pairs.columns) == lb.PAIR_COLUMNS
    assert pairs.loc[("A", "B"), "observed_diff"] == pytest.approx(-1 / 6) and pairs.loc[("A", "B"), "se"] == 0
    assert pairs.p_value.isna().all() and not pairs.separated.any()
    assert board.notes == []


def test_runs_on_other_trials_are_separate_columns_and_missing_is_said(runs: list[Path]) -> None:
    board = lb.build(load(runs, Options(n_boot=50)))
    labels = [c.label for c in board.columns]
    assert len(labels) == 2 and all(lab.startswith("S01 [") for lab in labels)
    shown = board.display().set_index("model")
    assert shown.loc["B", labels[1]] == "missing" and shown.loc["A", labels[1]] == "0.0000 [0.0000, 0.0000]"
    assert shown.loc[["A", "C", "B", "D"], "rank"].tolist() == ["1", "1", "1", "1"]  # on the shared column only
    text = "\n".join(board.notes)
    assert "S01 was run on 2 different trial lists" in text and "compared only within the same trial list" in text
    assert f"B: missing from {labels[1]}" in text and "rank uses the macro over the columns every encoder has" in text


def test_leaderboard_cli_on_a_folder(runs: list[Path], tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["runs", "leaderboard", str(tmp_path), "--bootstrap", "20", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert "note: S01 was run on 2 different trial lists" in res.output
    table = pd.read_csv(tmp_path / "leaderboard.csv")
    assert table["model"].tolist() == ["A", "B", "C", "D"]  # one rank: by name
    bad = CliRunner().invoke(app, ["runs", "leaderboard", str(tmp_path / "nowhere")])
    assert bad.exit_code == 1 and "does not exist" in bad.output


def test_chain_ranks_follow_non_transitive_separations() -> None:
    """P is separated from X, X from Y, but P not from Y: 1 + 'encoders separated and better'
    would give X and Y the same rank 2 although X is separated from Y; the chain gives 1, 2, 3."""
    observed = {"P": 0.05, "X": 0.10, "Y": 0.12, "Z": 0.30}
    pairs = pd.DataFrame(
        [
            ("P", "X", -0.05, True),
            ("X", "Y", -0.02, True),
            ("P", "Y", -0.07, False),
            ("P", "Z", -0.25, False),
            ("X", "Z", -0.20, False),
            ("Y", "Z", -0.18, False),
        ],
        columns=["model_a", "model_b", "observed_diff", "separated"],
    )
    rank, ties = lb.chain_ranks(observed, pairs)
    assert rank == {"P": 1, "X": 2, "Y": 3, "Z": 1}
    assert ties["P"] == ["Y", "Z"] and ties["X"] == ["Z"]
    for r in pairs[pairs.separated].itertuples(index=False):  # never a shared rank, the better one above
        assert rank[r.model_a] < rank[r.model_b]


def test_rank_encoders_separates_on_the_holm_adjusted_paired_difference() -> None:
    rng = derive_rng("test-leaderboard", "constructed")
    shared = rng.normal(0, 0.01, 400)
    reps = {"A": 0.10 + shared, "B": 0.11 + shared + rng.normal(0, 0.002, 400), "C": 0.30 + rng.normal(0, 0.05, 400)}
    observed = {"A": 0.10, "B": 0.11, "C": 0.30}
    rank, ties, pairs = lb.rank_encoders(["A", "B", "C"], observed, reps, 0.95)
    p = pairs.set_index(["model_a", "model_b"])
    assert p.loc[("A", "B"), "observed_diff"] == pytest.approx(-0.01)  # the data's difference, not the replicates'
    se = float(np.std(reps["A"] - reps["B"], ddof=1))
    assert p.loc[("A", "B"), "se"] == pytest.approx(se)
    assert p.loc[("A", "B"), "p_value"] == pytest.approx(2 * norm.sf(0.01 / se))
    want = multipletests(pairs.p_value.to_numpy(), method="holm")[1]
    assert pairs.p_holm.to_numpy() == pytest.approx(want)
    assert p.loc[("A", "B"), "separated"] and p.loc[("A", "C"), "separated"] and p.loc[("B", "C"), "separated"]
    assert rank == {"A": 1, "B": 2, "C": 3} and ties == {"A": [], "B": [], "C": []}


#: Simulated leaderboards of equal encoders.
NULL_RUNS, N_ENCODERS = 100, 10


def test_ten_equal_encoders_are_rarely_separated() -> None:
    """10 encoders of the same quality on one speaker-clustered trial list (each draws its own
    speaker effects and noise from the same model): some pair is separated after Holm in at most
    7 % of simulated runs."""
    from synthetic_runs import ScoreModel, clustered_scores, clustered_trials

    from interbias.analysis.stats.bootstrap import Resampler, TrialDesign
    from interbias.metrics.weighted import metric_batch, sort_cell

    trials = clustered_trials({"all": 20}, 6, 6)
    design = TrialDesign.from_frame(trials)
    labels = trials["label"].to_numpy(bool)
    rows = design.rows(trials["trial_id"].to_numpy())
    hits = 0
    for r in range(NULL_RUNS):
        weights = Resampler(design, n_boot=100, seed=r).weights(rows)
        observed, reps = {}, {}
        for k in range(N_ENCODERS):
            s = clustered_scores(trials, ScoreModel(), 2.0, derive_rng("test-leaderboard", "null", r, k))
            observed[f"e{k}"] = metrics.eer(s, labels)
            reps[f"e{k}"] = metric_batch("eer", sort_cell(s, labels), weights)
        pairs = lb.rank_encoders(list(observed), observed, reps, 0.95)[2]
        hits += bool(pairs.separated.any())
    print(f"equal encoders: some pair separated in {hits} of {NULL_RUNS} runs")
    assert hits / NULL_RUNS <= 0.07


def test_a_single_encoder_run_has_no_pairs_and_says_so(tmp_path: Path) -> None:
    """One encoder: the leaderboard shows its values with no rank and a note, ``report --latex``
    leaves the leaderboard table out with the reason (was: cannot reshape array of size 0)."""
    run = pattern_run(tmp_path / "r1", 4, {"A": {"clean": "perfect", "n10": "third"}})
    board = lb.build(load([run], Options(n_boot=20)))
    assert board.pairs.empty and board.table["rank"].isna().all()
    assert board.table.set_index("model").loc["A", "S01"] == pytest.approx(1 / 6)
    assert board.notes == ["a single encoder (A): no pair of encoders to compare, no rank"]
    res = CliRunner().invoke(app, ["runs", "leaderboard", str(run), "--bootstrap", "20"])
    assert res.exit_code == 0 and "note: a single encoder (A): no pair of encoders to compare, no rank" in res.output
    res = CliRunner().invoke(app, ["report", str(run), "--latex", "--bootstrap", "200"])
    assert res.exit_code == 0, res.output
    found = list(run.rglob("leaderboard.tex"))
    assert len(found) == 1, res.output
    assert found[0].read_text() == (
        "% leaderboard: not available for this run (a single encoder (A): no pair of encoders to rank)\n"
    )
