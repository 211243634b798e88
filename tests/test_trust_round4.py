"""Issue 53's numbered cases: each a traceback, hang, lost record or misleading line of the
fourth trust round, and what happens now."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from synthetic_runs import gender_noise_run
from typer.testing import CliRunner

from interbias.cli import app

runner = CliRunner()


# ---- case 3: two speakers per stratum (one distinct non-target pair) ---------------------------


def test_the_corrected_df_without_clusters_is_nan_not_a_zero_division() -> None:
    from interbias.analysis.effects import Correction

    one_pair = Correction(None, 2.0, 1.0, 2.0, 0.0)  # type: ignore[arg-type]
    assert np.isnan(one_pair.df(np.array([1.0, 2.0]), np.array([0.1, 0.1]), 1000)).all()
    one_speaker = Correction(None, 2.0, 1.0, 0.0, 5.0)  # type: ignore[arg-type]
    assert np.isnan(one_speaker.df(np.array([1.0]), np.array([0.1]), 1000)).all()
    fine = Correction(None, 10.0, 3.0, 18.0, 40.0)  # type: ignore[arg-type]
    assert np.isfinite(fine.df(np.array([1.0]), np.array([0.1]), 1000)).all()


@pytest.fixture(scope="module")
def two_speaker_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    means = {"M": {(g, n): mu for g in ("female", "male") for n, mu in (("clean", 1.0), ("noisy", 0.5))}}
    return gender_noise_run(tmp_path_factory.mktemp("two") / "r", means, n=2, m=1)


@pytest.mark.parametrize(
    "args",
    [
        ["analyze"],
        ["report"],
        ["plan"],
        ["plan", "--bootstrap-design", "speaker", "--bootstrap", "200"],
        ["card", "M", "--out", "{tmp}"],
    ],
)
def test_two_speakers_per_stratum_give_no_interval_not_a_traceback(
    two_speaker_run: Path, args: list[str], tmp_path: Path
) -> None:
    res = runner.invoke(app, [*(a.format(tmp=tmp_path) for a in args), str(two_speaker_run)])
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert "Traceback" not in res.output and "ZeroDivisionError" not in res.output
    assert res.exit_code == 0, res.output


# ---- case 1: a kill after the cells are written (attack stage, results) keeps the operations ---


def test_a_kill_after_the_cells_keeps_the_operations_record(tmp_path: Path, tiny_corpus) -> None:
    import signal

    import pandas as pd
    from conftest import tiny_experiment
    from run_helpers import manifest_file, only_run_dir, run_args, run_child

    manifest = manifest_file(tiny_corpus, tmp_path / "m")
    exp = tiny_experiment(
        tmp_path, name="K01", corpus={"manifest": str(manifest)}, trials={"targets": 20, "min_speakers": 4}
    )
    ref = run_child(run_args(exp, tmp_path / "ref", tmp_path / "ref-cache"))
    assert ref.returncode == 0, ref.stderr
    want = pd.read_parquet(only_run_dir(tmp_path / "ref") / "operations.parquet")
    assert len(want) > 0
    args = run_args(exp, tmp_path / "out", tmp_path / "cache")
    killed = run_child(args, env={"INTERBIAS_CRASH_AT": "write:results.csv"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    again = run_child(args)
    assert again.returncode == 0, again.stderr
    run_dir = only_run_dir(tmp_path / "out")
    assert (run_dir / "operations.parquet").read_bytes() == (
        only_run_dir(tmp_path / "ref") / "operations.parquet"
    ).read_bytes()
