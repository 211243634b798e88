"""The deployed operating point on DET curves and in the fairness groups: the dev-calibrated
threshold at the run's first operating point, checked against an independent computation from
the run's files (calibration.json, the scores parquet, trials.parquet)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import tiny_experiment
from run_helpers import isolated_cache
from scipy.stats import norm

from interbias.analysis.after_run import run_analyses
from interbias.analysis.groups.fairness import fairness_for_run
from interbias.analysis.reporting import plots
from interbias.analysis.reporting.det_points import deployed_marks
from interbias.analysis.scored_run import ScoredRun
from interbias.metrics.deployed import deployed_point, deployed_threshold
from interbias.metrics.llr import CostPoint
from interbias.run.conductor import RunOptions, run
from interbias.utils.errors import MetricError
from interbias.utils.paths import slug

SPLIT = {"targets": 30, "min_speakers": 3, "dev_share": 0.5}
POINT = {"name": "p05", "p_target": 0.05}


@pytest.fixture(scope="module")
def dev_run(tmp_path_factory, tiny_corpus, session_cache) -> Path:
    tmp = tmp_path_factory.mktemp("det")
    exp = tiny_experiment(tmp, name="T63", trials=SPLIT, operating_points=[POINT])
    opts = RunOptions(experiment=str(exp), encoders=["mfcc-stats"], out=tmp / "r", quiet=True,
                      command=["test"], cache_dir=isolated_cache(tmp, session_cache), after_run=run_analyses)  # fmt: skip
    return run(opts).run_dir


def _expected(run_dir: Path, cell: str) -> tuple[float, float]:
    """(FAR, FRR) at score >= (η − b)/a on the cell's eval, non-dropped trials, from the files."""
    cal = json.loads((run_dir / "calibration.json").read_text())["models"]["mfcc-stats"]
    eta = math.log((1 - 0.05) / 0.05)
    thr = (eta - cal["offset"]) / cal["slope"]
    sc = pd.read_parquet(run_dir / "scores" / slug("mfcc-stats") / f"{slug(cell)}.parquet")
    trials = pd.read_parquet(run_dir / "trials.parquet").set_index("trial_id")
    sc = sc[(trials.loc[sc["trial_id"], "split"].to_numpy() == "eval") & ~sc["dropped"].to_numpy(bool)]
    lab = sc["label"].to_numpy().astype(bool)
    s = sc["score"].to_numpy()
    return float((s[~lab] >= thr).mean()), float((s[lab] < thr).mean())


def test_marked_point_is_the_dev_threshold(dev_run: Path) -> None:
    frame = pd.read_csv(dev_run / "results.csv")
    marks = deployed_marks(ScoredRun(dev_run), frame)
    assert set(marks["mfcc-stats"]) == set(frame["cell"])
    for cell, (far, frr) in marks["mfcc-stats"].items():
        want = _expected(dev_run, cell)
        assert (far, frr) == pytest.approx(want, abs=1e-12)
    # and the figure draws exactly that point on the cell's curve
    cell = "gender=male,noise=n10"
    curves = {"mfcc-stats": [(c, np.array([0.01, 0.5]), np.array([0.5, 0.01]), 0.1) for c in marks["mfcc-stats"]]}
    panels = {c: ("p", c) for c in marks["mfcc-stats"]}
    fig = plots.det_figure(curves, panels, None, {"mfcc-stats": {cell: marks["mfcc-stats"][cell]}})
    dots = [ln for ax in fig.axes for ln in ax.lines if ln.get_marker() == "o"]
    assert len(dots) == 1
    far, frr = np.clip(marks["mfcc-stats"][cell], *plots.DET_RANGE)
    assert dots[0].get_xdata()[0] == pytest.approx(norm.ppf(far))
    assert dots[0].get_ydata()[0] == pytest.approx(norm.ppf(frr))


def test_fairness_groups_carry_the_deployed_point(dev_run: Path) -> None:
    rep = fairness_for_run(dev_run, test="trial-z")
    assert rep is not None
    g = rep.groups
    row = g[(g["condition"] == "noise=clean") & (g["group"] == "all")].iloc[0]
    fars, frrs = zip(*(_expected(dev_run, f"gender={x},noise=clean") for x in ("female", "male")), strict=True)
    # the pooled 'all' group of both strata: check each rate lies between the strata's
    assert min(fars) <= row["far_deployed"] <= max(fars) and min(frrs) <= row["frr_deployed"] <= max(frrs)
    assert row["cdet"] == pytest.approx(0.05 * row["frr_deployed"] + 0.95 * row["far_deployed"])
    assert row["act_dcf"] == pytest.approx(row["cdet"] / 0.05)


def test_deployed_threshold_rules() -> None:
    p = CostPoint(0.01, 1.0, 1.0)
    assert deployed_threshold(2.0, 1.0, p) == pytest.approx((math.log(99) - 1.0) / 2.0)
    with pytest.raises(MetricError):
        deployed_threshold(-1.0, 0.0, p)
    s = np.array([0.0, 1.0, 2.0, 3.0])
    lab = np.array([0, 0, 1, 1])
    dp = deployed_point(s, lab, 1.0, -1.5 + math.log(99), p)  # accept when s >= 1.5
    assert (dp.far, dp.frr) == (0.0, 0.0) and dp.threshold == pytest.approx(1.5)
