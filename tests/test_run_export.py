"""`interbias export` on a hand-built run directory: exact file contents, names, dropped trials."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from interbias.run.export import export_scores
from interbias.run.rundir import RunDir
from interbias.trials.sampler import StratumStats, TrialList
from interbias.utils import atomic
from interbias.utils.errors import RunError, TrialError
from interbias.utils.paths import slug


def fake_run(tmp_path: Path, enrol: list[str] | None = None) -> Path:
    run_dir = tmp_path / "run"
    frame = pd.DataFrame(
        {
            "trial_id": np.arange(4, dtype=np.int64),
            "stratum": ["all"] * 4,
            "enrol": enrol or ["a/1", "a/1", "b/1", "b/2"],
            "test": ["a/2", "b/1", "b/2", "a/2"],
            "label": np.array([1, 0, 1, 0], dtype=np.int8),
            "enrol_speaker": ["a", "a", "b", "b"],
            "test_speaker": ["a", "b", "b", "a"],
        }
    )
    RunDir(run_dir).write_trials(TrialList(frame, {"all": StratumStats("all", 2, 3, 3, 2, 2, 2, 2, 0)}))
    scores = pd.DataFrame(
        {
            "trial_id": np.arange(4, dtype=np.int64),
            "label": np.array([1, 0, 1, 0], dtype=np.int8),
            "score": [0.1 + 0.2, -1 / 3, np.nan, 2e-17],
            "dropped": [False, False, True, False],
        }
    )
    atomic.write_parquet(run_dir / "scores" / slug("enc") / f"{slug('all')}.parquet", scores)
    results = pd.DataFrame([{"model": "enc", "cell": "all", "eer": 0.25, "min_dcf": 0.5}])
    atomic.write_csv(run_dir / "results.csv", results)
    return run_dir


def test_wespeaker_lines_are_exact_and_leave_dropped_trials_out(tmp_path: Path) -> None:
    run_dir = fake_run(tmp_path)
    summary = export_scores(run_dir, "wespeaker", tmp_path / "out")
    path = tmp_path / "out" / summary.files[0]["file"]
    assert path.read_text() == (
        "a/1 a/2 0.30000000000000004 target\na/1 b/1 -0.3333333333333333 nontarget\nb/2 a/2 2e-17 nontarget\n"
    )
    assert summary.files[0] | {"file": ""} == {
        "model": "enc",
        "cell": "all",
        "file": "",
        "n_trials": 3,
        "n_dropped": 1,
        "n_not_measured": 0,
        "eer": 0.25,
        "min_dcf": 0.5,
    }


def test_kaldi_writes_scores_and_trials_and_csv_keeps_ids(tmp_path: Path) -> None:
    run_dir = fake_run(tmp_path)
    summary = export_scores(run_dir, "kaldi", tmp_path / "k")
    scores = tmp_path / "k" / summary.files[0]["file"]
    assert scores.name.endswith(".scores")
    assert scores.with_name(scores.name.replace(".scores", ".trials")).read_text() == (
        "a/1 a/2 target\na/1 b/1 nontarget\nb/2 a/2 nontarget\n"
    )
    summary = export_scores(run_dir, "csv", tmp_path / "c")
    frame = pd.read_csv(tmp_path / "c" / summary.files[0]["file"], dtype={"score": str})
    assert frame.columns.tolist() == [
        "trial_id",
        "stratum",
        "enrol",
        "test",
        "enrol_speaker",
        "test_speaker",
        "score",
        "label",
    ]
    assert frame.trial_id.tolist() == [0, 1, 3] and frame.score.tolist()[0] == "0.30000000000000004"


def test_whitespace_names_need_csv(tmp_path: Path) -> None:
    run_dir = fake_run(tmp_path, enrol=["a 1", "a 1", "b/1", "b/2"])
    with pytest.raises(RunError) as exc:
        export_scores(run_dir, "wespeaker", tmp_path / "out")
    assert str(exc.value) == (
        "1 utterance name(s) contain whitespace, which the wespeaker format cannot hold; first: 'a 1' (use --format csv)"
    )
    assert len(export_scores(run_dir, "csv", tmp_path / "c").files) == 1


def test_missing_score_file_and_tampered_trials(tmp_path: Path) -> None:
    run_dir = fake_run(tmp_path)
    (run_dir / "scores" / slug("enc") / f"{slug('all')}.parquet").unlink()
    with pytest.raises(RunError, match="results row enc / all has no score file"):
        export_scores(run_dir, "csv", tmp_path / "out")
    meta = json.loads((run_dir / "trials.json").read_text())
    meta["sha256"] = "0" * 64
    (run_dir / "trials.json").write_text(json.dumps(meta))
    with pytest.raises(TrialError, match="do not match the sha256 recorded beside them"):
        export_scores(run_dir, "csv", tmp_path / "out")
