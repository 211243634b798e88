"""`analyze --equivalence MARGIN`: TOST per effect with the findings' SE and df, Holm over the
family, per model how many effects are shown within the margin."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from synthetic_runs import gender_noise_run
from typer.testing import CliRunner

from interbias.analysis.stats.equivalence import tost, tost_p
from interbias.cli import app
from interbias.utils.errors import AnalysisError

MEANS = {
    "big": {("female", "clean"): 3.0, ("female", "n10"): 2.5, ("male", "clean"): 0.8, ("male", "n10"): 0.3},
    "flat": {("female", "clean"): 1.5, ("female", "n10"): 1.5, ("male", "clean"): 1.5, ("male", "n10"): 1.2},
}


def test_tost_is_the_90_interval_inside_the_margin() -> None:
    est, se, df = np.array([0.01, 0.04, -0.02]), np.array([0.01, 0.01, 0.02]), np.array([30.0, 30.0, np.inf])
    p = tost_p(est, se, df, 0.05)
    by_hand = [
        max(stats.t.sf((0.01 + 0.05) / 0.01, 30), stats.t.sf((0.05 - 0.01) / 0.01, 30)),
        max(stats.t.sf((0.04 + 0.05) / 0.01, 30), stats.t.sf((0.05 - 0.04) / 0.01, 30)),
        max(stats.norm.sf((-0.02 + 0.05) / 0.02), stats.norm.sf((0.05 + 0.02) / 0.02)),
    ]
    assert p == pytest.approx(by_hand)
    q = stats.t.ppf(0.95, 30)  # p < 0.05 exactly when the 90 % interval lies inside ±margin
    for e, s, pv in zip(est[:2], se[:2], p[:2], strict=True):
        assert (pv < 0.05) == (-0.05 < e - q * s and e + q * s < 0.05)
    assert np.isnan(tost_p(np.array([0.0]), np.array([np.nan]), np.array([5.0]), 0.05))[0]


def test_holm_over_the_family_and_refusals() -> None:
    frame = pd.DataFrame(
        {"experiment": "E", "model": "m", "kind": "interaction", "estimate": [0.0, 0.0, 0.0], "se": [0.01, 0.01, 0.02],
         "df": np.inf, "interval": "wald", "test_family": ["confirmatory", "confirmatory", "simple"]}
    )  # fmt: skip
    out = tost(frame, 0.03, 0.05)
    p = out["p_equivalence"].to_numpy()
    assert out["p_equivalence_adjusted"].iloc[:2].to_numpy() == pytest.approx(np.minimum(1, 2 * p[:2]))
    assert np.isnan(out["p_equivalence_adjusted"].iloc[2]) and not out["within_margin"].iloc[2]
    with pytest.raises(AnalysisError, match="margin > 0"):
        tost(frame, 0.0, 0.05)


def test_analyze_equivalence_reports_per_model(tmp_path) -> None:
    run = gender_noise_run(tmp_path / "run", MEANS, n=12, m=4)
    done = CliRunner(env={"COLUMNS": "80"}).invoke(
        app, ["analyze", str(run), "--bootstrap", "200", "-q", "--equivalence", "0.3"]
    )
    assert done.exit_code == 0, done.output
    eq = pd.read_csv(run / "equivalence.csv")
    found = pd.read_csv(run / "findings.csv")
    assert len(eq) == len(found) and (eq["margin"] == 0.3).all()
    flat = " ".join(done.output.split())
    for model, grp in eq.groupby("model", sort=False):
        ie = grp[grp["kind"] == "interaction"]
        assert f"{model}: shown within ±0.300 (TOST, holm over the family):" in flat
        assert f"{int(ie['within_margin'].sum())} of {len(ie)} interactions" in flat
    assert eq["within_margin"].any() and not eq["within_margin"].all()
