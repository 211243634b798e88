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
