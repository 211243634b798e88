"""End to end on the tiny synthetic corpus: one trial list, byte-identical reruns, warm cache."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from conftest import tiny_experiment

from interbias.results import SCHEMA
from interbias.runner import RunOptions, run


@pytest.fixture(scope="module")
def first_run(tmp_path_factory, tiny_corpus, session_cache):
    tmp = tmp_path_factory.mktemp("run")
    exp = tiny_experiment(tmp)
    opts = RunOptions(
        experiment=str(exp), encoders=["CAM++", "mfcc-stats"], out=tmp / "results", quiet=True, command=["test"]
    )
    return opts, run(opts)


def test_results_schema_and_counts(first_run) -> None:
    _, outcome = first_run
    res = pd.read_csv(outcome.run_dir / "results.csv")
    assert list(res.columns[: len(SCHEMA)]) == SCHEMA
    assert len(res) == 2 * 4
    assert set(res.model) == {"CAM++", "mfcc-stats"}
    assert (res.n_failed == 0).all() and (res.n_target == 40).all() and (res.n_nontarget == 40).all()
    assert res.eer.between(0, 1).all()
    cam = res[res.model == "CAM++"].iloc[0]
    assert cam.checkpoint_sha256 == "92f29b94e6948786a26778c9e302525d185bb08c8b9f5252ed98776902840199"
    assert cam.family == "sv" and cam.factor_a == "gender" and cam.ref_b == "clean"
    assert res.trials_sha256.nunique() == 1 and res.run_id.nunique() == 1


def test_every_cell_and_encoder_scores_the_saved_trials(first_run) -> None:
    _, outcome = first_run
    trials = pd.read_parquet(outcome.run_dir / "trials.parquet")
    res = pd.read_csv(outcome.run_dir / "results.csv")
    from interbias.paths import slug

    for row in res.itertuples():
        scores = pd.read_parquet(outcome.run_dir / "scores" / slug(row.model) / f"{slug(row.cell)}.parquet")
        expected = trials[trials.stratum == row.stratum]
        assert scores.trial_id.tolist() == expected.trial_id.tolist()
        assert scores.label.tolist() == expected.label.tolist()
    # acoustic cells of one stratum share trial identities; strata have matched counts
    assert trials.groupby(["stratum", "label"]).size().nunique() == 1


def test_rerun_same_directory_byte_identical_and_embeds_nothing(first_run) -> None:
    opts, outcome = first_run
    before = (outcome.run_dir / "results.csv").read_bytes()
    again = run(opts)
    assert again.run_dir == outcome.run_dir
    assert again.n_embedded == 0 and again.cells_done_before == 8
    assert (again.run_dir / "results.csv").read_bytes() == before


def test_fresh_directory_warm_cache_byte_identical(first_run, tmp_path: Path) -> None:
    opts, outcome = first_run
    other = RunOptions(**{**opts.__dict__, "out": tmp_path / "elsewhere"})
    fresh = run(other)
    assert fresh.n_embedded == 0 and fresh.n_cached > 0
    for name in ("results.csv", "trials.parquet"):
        assert (fresh.run_dir / name).read_bytes() == (outcome.run_dir / name).read_bytes()
    for p in (outcome.run_dir / "scores").rglob("*.parquet"):
        assert (fresh.run_dir / p.relative_to(outcome.run_dir)).read_bytes() == p.read_bytes()


def test_run_json_provenance(first_run) -> None:
    _, outcome = first_run
    info = json.loads((outcome.run_dir / "run.json").read_text())
    for key in ("command", "experiment", "revision", "packages", "hardware", "timings", "trials", "encoders"):
        assert key in info
    assert info["packages"]["torch"].startswith("2.13")
    assert {e["label"] for e in info["encoders"]} == {"CAM++", "mfcc-stats"}
    assert (
        info["counts"]["forward_calls"]["CAM++"] == info["counts"]["embedded"] // 2 or info["counts"]["embedded"] == 0
    )


def test_forward_passes_equal_unique_items(tmp_path: Path, tiny_corpus) -> None:
    exp = tiny_experiment(tmp_path, name="T02", seed=5)
    opts = RunOptions(
        experiment=str(exp), encoders=["mfcc-stats"], out=tmp_path / "r", quiet=True, cache_dir=tmp_path / "cold"
    )
    outcome = run(opts)
    trials = pd.read_parquet(outcome.run_dir / "trials.parquet")
    # clean enrol utterances + test utterances under 2 chains (clean, n10)
    enrol = set(trials.enrol)
    test = set(trials.test)
    unique_items = len(enrol | test) + len(test)
    info = json.loads((outcome.run_dir / "run.json").read_text())
    assert info["counts"]["forward_calls"]["mfcc-stats"] == unique_items == outcome.n_embedded
