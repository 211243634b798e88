"""A run without a dev split has empty calibration columns (``""`` once read as text) and a
reason in run.json: the report's calibration section states that reason and draws no table."""

from __future__ import annotations

import pandas as pd
from synthetic_runs import gender_noise_run
from typer.testing import CliRunner

from interbias.analysis.calibration import has_calibration, worst_cells
from interbias.analysis.reporting.sections import not_measured_reason
from interbias.cli import app
from interbias.run.rundir import CalibrationRecord

MEANS = {"m": {("female", "clean"): 2.0, ("female", "n10"): 1.6, ("male", "clean"): 2.0, ("male", "n10"): 1.5}}
REASON = "the run has no dev split (set trials.dev_share): the calibration columns are empty"
CALIBRATION = {"fit_on": "reference", "split": "dev", "method": "linear", "operating_points": [], "measured": False}


def test_empty_text_columns_are_no_calibration() -> None:
    text = pd.DataFrame({"model": ["m", "m"], "cell": ["b", "a"], "calibration_loss": ["", ""], "dcf_point": ["", ""]})
    assert not has_calibration(text) and worst_cells(text).empty
    half = text.assign(calibration_loss=["", "0.25"])
    assert has_calibration(half) and worst_cells(half).cell.tolist() == ["a"]


def test_reason_comes_from_the_record() -> None:
    assert not_measured_reason(CalibrationRecord.from_json({**CALIBRATION, "reason": REASON + "."})) == REASON
    assert "gives no reason" in not_measured_reason(CalibrationRecord.from_json(CALIBRATION))
    assert "no calibration record" in not_measured_reason(None)


def test_report_without_dev_split_says_why_and_has_no_table(tmp_path) -> None:
    run_json = {"run_id": "nodev", "calibration": {**CALIBRATION, "reason": REASON}}
    run = gender_noise_run(tmp_path / "run", MEANS, n=6, m=3, run_json=run_json)
    res = pd.read_csv(run / "results.csv")
    for col in ("cllr", "min_cllr", "act_dcf", "calibration_loss", "threshold_drift", "dcf_point"):
        res[col] = pd.NA
    res.to_csv(run / "results.csv", index=False)
    out = tmp_path / "rep"
    done = CliRunner().invoke(app, ["report", str(run), "--out", str(out), "--bootstrap", "0"])
    assert done.exit_code == 0, done.output
    section = (out / "report.md").read_text().split("## Calibration")[1].split("\n## ")[0]
    assert f"Not measured: {REASON}." in section
    assert "Bayes threshold of" not in section and "|" not in section
