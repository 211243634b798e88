"""End to end on the tiny synthetic corpus: one trial list, byte-identical reruns, warm cache."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pandas as pd
import pytest
from conftest import tiny_experiment

from interbias.run.conductor import RunOptions, run
from interbias.run.results import SCHEMA


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
    from interbias.utils.paths import slug

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


def _plan_csv(path: Path, rows: list[tuple[str, float]]) -> Path:
    """A plan.csv as `interbias plan` writes it, reduced to the columns a follow-up run reads."""
    frame = pd.DataFrame(rows, columns=["experiment", "speakers_per_stratum_needed"])
    frame["target_trials_per_stratum_needed"] = frame["speakers_per_stratum_needed"] * 5
    frame["nontarget_trials_per_stratum_needed"] = frame["speakers_per_stratum_needed"] * 5
    frame.to_csv(path, index=False)
    return path


def test_a_plan_sets_the_speakers_and_trials_per_stratum_of_the_follow_up(tmp_path: Path, tiny_corpus) -> None:
    from interbias.experiments.schema import load_experiment
    from interbias.trials.sampler import draw_trials
    from interbias.utils.progress import Reporter

    exp = tiny_experiment(tmp_path)
    # the most any of the T01 effects needs is 4 (of 6 speakers per gender); NaN: not plannable
    plan = _plan_csv(tmp_path / "plan.csv", [("T01", 3.0), ("T01", 4.0), ("T01", float("nan"))])
    stream = io.StringIO()
    opts = RunOptions(experiment=str(exp), encoders=["mfcc-stats"], out=tmp_path / "r", plan=plan, command=["t"])
    outcome = run(opts, reporter=Reporter(stream=stream))
    lines = stream.getvalue().splitlines()
    assert lines[0] == (
        f"plan {plan}: 4 speakers, 20 target and 20 non-target trials in every stratum (the pilot's trials per "
        "speaker), the most any of its 3 effect(s) of T01 needs (1 could not be planned)"
    )
    trials = pd.read_parquet(outcome.run_dir / "trials.parquet")
    for _, sub in trials.groupby("stratum"):
        assert len(set(sub.enrol_speaker) | set(sub.test_speaker)) == 4
        assert (sub.label.sum(), (sub.label == 0).sum()) == (20, 20)  # the plan's trials, not the experiment's 40
    # the same trials as the experiment with the plan's trials block written in it
    (tmp_path / "by-hand").mkdir()
    block = {"targets": 20, "nontargets": 20, "speakers_per_stratum": 4}
    written = tiny_experiment(tmp_path / "by-hand", trials=block)
    info = json.loads((outcome.run_dir / "run.json").read_text())
    assert info["trials"]["sha256"] == draw_trials(load_experiment(written), tiny_corpus).sha256
    assert info["experiment"]["trials"]["speakers_per_stratum"] == 4
    assert (info["experiment"]["trials"]["targets"], info["experiment"]["trials"]["nontargets"]) == (20, 20)


def test_a_plan_of_another_experiment_or_too_many_speakers_is_one_line(tmp_path: Path, tiny_corpus) -> None:
    from typer.testing import CliRunner

    from interbias.cli import app

    exp = tiny_experiment(tmp_path)
    base = ["run", str(exp), "--encoders", "mfcc-stats", "--out", str(tmp_path / "r"), "-q", "--plan"]
    other = _plan_csv(tmp_path / "other.csv", [("E16", 40.0), ("E16", 12.0)])
    res = CliRunner().invoke(app, [*base, str(other)])
    assert res.exit_code == 1
    assert res.output == (
        f"error: --plan {other} is a plan for E16, not T01: plan a pilot run of T01 first (interbias plan RUN_DIR)\n"
    )
    unplannable = _plan_csv(tmp_path / "flat.csv", [("T01", float("nan"))])
    res = CliRunner().invoke(app, [*base, str(unplannable)])
    assert res.output == (
        f"error: --plan {unplannable}: none of its 1 effect(s) of T01 could be planned (no bootstrap spread in "
        "the pilot)\n"
    )
    too_many = _plan_csv(tmp_path / "big.csv", [("T01", 9.0)])
    res = CliRunner().invoke(app, [*base, str(too_many)])
    assert res.exit_code == 1
    assert res.output == (
        "error: T01: stratum gender=female has 6 speaker(s) with usable enrol and test utterances; "
        "trials.speakers_per_stratum asks for 9\n"
    )
    assert not (tmp_path / "r").exists()  # refused before the run directory exists
    short = _plan_csv(tmp_path / "short.csv", [("T01", 4.0)])
    frame = pd.read_csv(short)
    frame["target_trials_per_stratum_needed"] = 400  # more genuine pairs than 4 speakers have
    frame.to_csv(short, index=False)
    res = CliRunner().invoke(app, [*base, str(short)])
    assert res.exit_code == 1 and res.output.startswith("error: stratum gender=female: the plan asks for 400 target")
    assert not (tmp_path / "r").exists()


def test_a_run_that_builds_the_corpus_shows_its_progress(tmp_path: Path) -> None:
    """A fresh cache: the run renders the embedded corpus first and says how far it is (here it
    then stops, as the corpus has fewer speakers than the plan asks for)."""
    from interbias.utils.errors import TrialError
    from interbias.utils.progress import Reporter

    small = {"accents": ["us"], "age_bands": ["adult"], "voices_per_cell": 2, "styles": ["neutral"], "n_sentences": 2}
    exp = tiny_experiment(tmp_path, corpus={"name": "synthetic", "options": small})
    plan = _plan_csv(tmp_path / "plan.csv", [("T01", 5.0)])
    stream = io.StringIO()
    opts = RunOptions(
        experiment=str(exp), encoders=["mfcc-stats"], out=tmp_path / "r", cache_dir=tmp_path / "cold", plan=plan
    )
    with pytest.raises(TrialError, match=r"has 2 speaker\(s\) with usable enrol and test utterances; .* asks for 5$"):
        run(opts, reporter=Reporter(stream=stream))
    lines = stream.getvalue().splitlines()
    start = lines.index("corpus synthetic: preparing manifest")
    assert lines[start + 1] == "synthetic corpus: rendering: 8 to do"
    done = [i for i, line in enumerate(lines) if re.fullmatch(r"synthetic corpus: rendering: 8/8 in \d+\.\d s", line)]
    assert done, lines
    # the fingerprint verdict comes once the trials' files are hashed: this run stops at the sampler first
    assert lines[done[0] + 1 :] == [], lines
