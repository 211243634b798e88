"""Calibration metrics at the shared calibration under trial weights, and `interbias analyze
--metric act_dcf|calibration_loss|cllr`: every replicate against a direct count on the trial
set the weights stand for (np.repeat), the calibration read from run.json and never refitted."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from test_run_calibrate import cal_run  # noqa: F401  (module fixture: a gender × noise run with a dev split)

from interbias.analysis.suite import Options, analyse
from interbias.metrics.llr import CostPoint
from interbias.metrics.weighted_llr import SharedCalibration
from interbias.run.rundir import CalibrationRecord
from interbias.utils.errors import AnalysisError

RECORD = {
    "fit_on": "reference",
    "measured": True,
    "operating_points": [{"name": "p0.05", "p_target": 0.05, "c_miss": 1.0, "c_fa": 2.0}],
    "models": {"m": {"slope": 2.0, "offset": -1.0}},
}


def of_record(record: dict | None, model: str) -> SharedCalibration:
    """The shared calibration of ``model`` in a calibration record written as in calibration.json."""
    return SharedCalibration.of_run(None if record is None else CalibrationRecord.from_json(record), model)


def direct(metric: str, s: np.ndarray, lab: np.ndarray, slope: float, offset: float, p: CostPoint) -> float:
    """The metric by counting trials and trying every threshold (no library metric code)."""
    llr = slope * s + offset
    tar, non = llr[lab], llr[~lab]
    if metric == "cllr":
        return 0.5 * (
            np.mean([math.log2(1 + math.exp(-x)) for x in tar]) + np.mean([math.log2(1 + math.exp(x)) for x in non])
        )
    eta = math.log(p.c_fa * (1 - p.p_target) / (p.c_miss * p.p_target))
    norm = min(p.c_miss * p.p_target, p.c_fa * (1 - p.p_target))
    act = (p.c_miss * p.p_target * np.mean(tar < eta) + p.c_fa * (1 - p.p_target) * np.mean(non >= eta)) / norm
    if metric == "act_dcf":
        return act
    costs = [
        p.c_miss * p.p_target * np.mean(s[lab] < t) + p.c_fa * (1 - p.p_target) * np.mean(s[~lab] >= t)
        for t in [*sorted(set(s)), np.inf]
    ]
    return act - min(costs) / norm


@pytest.mark.parametrize("metric", ["act_dcf", "calibration_loss", "cllr"])
def test_weighted_values_are_the_metric_of_the_repeated_trials(metric: str) -> None:
    cal = of_record(RECORD, "m")
    assert (cal.slope, cal.offset, cal.point) == (2.0, -1.0, CostPoint(0.05, 1.0, 2.0))
    s = np.array([0.0, 0.5, 0.5, 1.0, 1.5, 2.0, 2.0, 3.0, 0.5, 1.0, 1.0, 2.5])  # ties within and across classes
    lab = np.array([0, 0, 1, 0, 1, 1, 0, 1, 0, 1, 0, 1], dtype=bool)
    w = np.array([[1] * 12, [0, 2, 1, 0, 3, 1, 1, 0, 2, 1, 0, 1], [1, 0, 0, 2, 0, 0, 1, 0, 1, 0, 0, 0]], dtype=float)
    got = cal.batch(metric, s, lab, w)
    for b in range(2):
        rs, rl = np.repeat(s, w[b].astype(int)), np.repeat(lab, w[b].astype(int))
        assert got[b] == pytest.approx(direct(metric, rs, rl, 2.0, -1.0, cal.point), abs=1e-12)
    assert np.isnan(got[2])  # no target weight
    assert cal.value(metric, s, lab) == pytest.approx(got[0], abs=1e-12)


def test_shared_calibration_is_required() -> None:
    each = {**RECORD, "fit_on": "each"}
    with pytest.raises(AnalysisError, match="fit_on is 'each'"):
        of_record(each, "m")
    none = {"fit_on": "reference", "measured": False, "reason": "the run has no dev split"}
    with pytest.raises(AnalysisError, match="lacks: the run has no dev split"):
        of_record(none, "m")
    with pytest.raises(AnalysisError, match="no shared calibration for model 'x'"):
        of_record(RECORD, "x")
    with pytest.raises(AnalysisError, match="need the run's calibration record"):
        of_record(None, "m")
    with pytest.raises(AnalysisError, match="not a calibration metric"):
        of_record(RECORD, "m").value("eer", np.zeros(2), np.array([True, False]))


@pytest.mark.parametrize("metric", ["act_dcf", "calibration_loss"])
def test_analyze_gaps_at_the_shared_calibration(cal_run, metric: str) -> None:  # noqa: F811
    run_dir = cal_run.run_dir
    a = analyse(run_dir / "results.csv", Options(metric=metric, n_boot=8, seed=3))
    gaps = a.gaps.gaps
    assert set(gaps["condition"]) == {"noise=clean", "noise=n10"} and set(gaps["metric"]) == {metric}
    res = pd.read_csv(run_dir / "results.csv").set_index("cell")
    cal = SharedCalibration.of_run(a.run.calibration_record, "mfcc-stats")
    for g in gaps.itertuples(index=False):
        cond = g.condition.split("=")[1]
        ref_cell, cell = f"gender=female,noise={cond}", f"gender=male,noise={cond}"
        assert g.value_ref_group == pytest.approx(res.loc[ref_cell, metric])
        assert g.gap == pytest.approx(res.loc[cell, metric] - res.loc[ref_cell, metric])
        row = gaps.index[gaps.condition == g.condition][0]
        for b in range(8):  # every replicate by hand: the speaker resample's trial counts, calibration fixed
            reps = []
            for c in (ref_cell, cell):
                cs = a.run.cell("mfcc-stats", c)
                k = a.resampler.weights(cs.rows)[b].astype(int)
                rs, rl = np.repeat(cs.scores, k), np.repeat(cs.labels, k)
                ok = rl.any() and not rl.all()
                reps.append(direct(metric, rs, rl, cal.slope, cal.offset, cal.point) if ok else np.nan)
            want = reps[1] - reps[0]
            got = a.gaps.gap_replicates[row, b]
            assert (np.isnan(got) and np.isnan(want)) or got == pytest.approx(want, abs=1e-12)
        assert np.isfinite(a.gaps.gap_replicates[row]).sum() >= 4
        assert g.gap_lo_percentile <= g.gap_hi_percentile  # the replicates' own interval
        # the corrected design's interval (the one shown): ordered, or none at all with 8 replicates
        assert (np.isnan(g.gap_lo) and np.isnan(g.gap_hi)) or g.gap_lo <= g.gap_hi


def test_report_gap_section_and_findings_name_the_shared_calibration(cal_run) -> None:  # noqa: F811
    from interbias.analysis.reporting.document import to_markdown
    from interbias.analysis.reporting.report import build_report

    a = analyse(cal_run.run_dir / "results.csv", Options(metric="act_dcf", n_boot=20, seed=1))
    md = to_markdown(build_report(a), "figs")
    assert "Metric: act_dcf (normalised detection cost at the first operating point" in md
    assert "## Subgroup gaps" in md and "a gap is what one group pays for a system calibrated on everyone" in md
    assert "Effects in act_dcf" in md


def test_permutation_gap_of_act_dcf_keeps_the_calibration(cal_run) -> None:  # noqa: F811
    a = analyse(cal_run.run_dir / "results.csv", Options(metric="act_dcf", n_perm=30, seed=2))
    gaps = a.gaps.gaps
    assert gaps.p_perm.between(0, 1).all() and (gaps.n_perm_valid > 0).all()
    from interbias.analysis.stats.permutation import RunPermutations

    perms = RunPermutations(a.run, "act_dcf", 5, seed=2)
    for g in gaps.itertuples(index=False):
        cond = g.condition.split("=")[1]
        res = perms.test("mfcc-stats", f"gender=female,noise={cond}", f"gender=male,noise={cond}")
        assert res.gap == pytest.approx(g.gap, abs=1e-12)  # the observed labelling reproduces the two cells


def test_analyze_refuses_a_calibration_metric_without_the_shared_calibration(tmp_path, session_cache) -> None:
    from test_run_calibrate import _run
    from typer.testing import CliRunner

    from interbias.cli import app

    each = _run(tmp_path / "e", session_cache, "T32", trials={"targets": 30, "min_speakers": 3, "dev_share": 0.5},
                calibration={"fit_on": "each"})  # fmt: skip
    res = CliRunner().invoke(app, ["analyze", str(each.run_dir), "--metric", "act_dcf", "--out", str(tmp_path / "a")])
    assert res.exit_code == 1
    assert (
        "calibration metrics are read at the shared calibration, which this run lacks: calibration.fit_on is 'each'"
        in res.output
    )
    assert "Traceback" not in res.output
