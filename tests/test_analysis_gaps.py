"""Subgroup gaps, ratio flags and additivity validation against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from analysis_rows import frame_of, results_rows

from interbias.analysis.additivity import validate_additivity
from interbias.analysis.contrasts import compute_contrasts
from interbias.analysis.gaps import compute_gaps, population_factors
from interbias.utils.errors import AnalysisError


def e16(model: str, values: dict[str, tuple[float, float]], family: str = "sv") -> list[dict]:
    """values: noise level -> (female EER, male EER); gender is the population factor."""
    rows = []
    for noise, (f, m) in values.items():
        for gender, v in (("female", f), ("male", m)):
            rows += results_rows(
                {(gender, noise): v},
                (("gender", "female"), ("noise", "clean")),
                experiment="E16",
                model=model,
                family=family,
                stratum=f"gender={gender}",
            )
    return rows


def test_gaps_hand_computed_with_ratio_flag_and_zero_denominator() -> None:
    rows = e16("m1", {"clean": (0.100, 0.104), "n25": (0.150, 0.130), "n5": (0.300, 0.360)})
    rows += e16("m2", {"clean": (0.200, 0.150), "n25": (0.220, 0.180), "n5": (0.400, 0.380)})
    rows += e16("m3", {"clean": (0.100, 0.100), "n25": (0.120, 0.110)})  # n5 not measured
    t = compute_gaps(pd.DataFrame(rows), floor=0.01)
    assert t.group_factor == {"E16": "gender"}
    g = t.gaps.set_index(["model", "condition"])
    r = g.loc[("m1", "noise=n25")]
    assert r.gap == pytest.approx(-0.020) and r.abs_gap == pytest.approx(0.020)
    assert r.ref_condition_gap == pytest.approx(0.004) and r.ratio == pytest.approx(-5.0)
    assert r.ratio_flag == "unstable: |reference-condition gap| 0.0040 < floor 0.01"
    assert g.loc[("m1", "noise=clean")].is_reference_condition and math.isnan(g.loc[("m1", "noise=clean")].ratio)
    r2 = g.loc[("m2", "noise=n5")]
    assert r2.gap == pytest.approx(-0.020) and r2.ratio == pytest.approx(0.4) and r2.ratio_flag == ""
    assert math.isnan(g.loc[("m3", "noise=n25")].ratio)  # clean gap exactly 0: no ratio
    assert g.loc[("m3", "noise=n25")].ratio_flag.startswith("unstable")
    assert ("m3", "noise=n5") not in g.index
    s = t.summary.set_index("condition")
    assert s.loc["noise=n25", "n_models"] == 3
    assert s.loc["noise=n25", "mean_abs_gap"] == pytest.approx((0.020 + 0.040 + 0.010) / 3)
    assert s.loc["noise=n25", "mean_gap"] == pytest.approx((-0.020 - 0.040 - 0.010) / 3)
    assert s.loc["noise=n25", "max_abs_gap"] == pytest.approx(0.040)
    assert s.loc["noise=n5", "n_models"] == 2 and s.loc["noise=n5", "n_positive_gap"] == 1
    assert (s.loc["noise=n25", "ratio_min"], s.loc["noise=n25", "ratio_max"]) == pytest.approx((-5.0, 0.8))
    assert s.loc["noise=n25", "n_ratio_flagged"] == 2
    assert s.loc["noise=clean", "mean_value_group"] == pytest.approx((0.104 + 0.150 + 0.100) / 3)


def test_group_factor_detection_and_errors() -> None:
    frame = pd.DataFrame(e16("m", {"clean": (0.1, 0.2), "n": (0.2, 0.3)}))
    assert population_factors(frame) == {"E16": ["gender"]}
    resolved = {"name": "E16", "factors": [{"name": "noise", "type": "population"}]}
    assert population_factors(frame, resolved) == {"E16": ["noise"]}
    assert population_factors(frame.drop(columns="stratum")) == {"E16": []}
    assert compute_gaps(frame.drop(columns="stratum")).gaps.empty
    flipped = compute_gaps(frame.drop(columns="stratum"), group_factor="noise").gaps
    assert flipped.condition.tolist() == ["gender=female", "gender=male"]
    assert flipped.gap.tolist() == pytest.approx([0.1, 0.1])
    with pytest.raises(AnalysisError, match="--group-factor 'age' is not a factor of E16; valid: gender, noise"):
        compute_gaps(frame, group_factor="age")
    with pytest.raises(AnalysisError, match="--gap-floor must be a finite number >= 0"):
        compute_gaps(frame, floor=-1)


def grid_rows(values: dict[tuple[str, str], float], model: str = "m") -> pd.DataFrame:
    return frame_of(values, experiment="X", model=model)


def test_additivity_on_two_by_two_equals_the_contrast() -> None:
    frame = grid_rows({("a0", "b0"): 0.1, ("a1", "b0"): 0.15, ("a0", "b1"): 0.2, ("a1", "b1"): 0.3})
    t = validate_additivity(frame)
    r = t.settings.iloc[0]
    ie = compute_contrasts(frame).contrasts.ie.iloc[0]
    assert r.error == pytest.approx(ie) and r.predicted == pytest.approx(0.25) and r.n_fit_cells == 3
    assert not r.within_tolerance and r.setting == "A=a1,B=b1"
    assert validate_additivity(frame, tolerance=0.06).settings.within_tolerance.iloc[0]


def test_additivity_leave_one_out_matches_statsmodels_ols() -> None:
    rng = np.random.default_rng(7)
    levels_a, levels_b = ["a0", "a1", "a2"], ["b0", "b1", "b2", "b3"]
    values = {
        (a, b): 0.1 + 0.02 * i + 0.03 * j + rng.normal(0, 0.01)
        for i, a in enumerate(levels_a)
        for j, b in enumerate(levels_b)
    }
    del values[("a2", "b3")]  # a missing cell is simply not fitted or predicted
    frame = grid_rows(values)
    t = validate_additivity(frame, tolerance=0.01)
    assert len(t.settings) == 2 * 3 - 1
    for r in t.settings.itertuples():
        train = frame[frame.cell != r.cell]
        fit = smf.ols("eer ~ C(level_a, Treatment('a0')) + C(level_b, Treatment('b0'))", data=train).fit()
        want = float(fit.predict(frame[frame.cell == r.cell]).iloc[0])
        assert r.predicted == pytest.approx(want, abs=1e-12)
        assert r.error == pytest.approx(values[(r.level_a, r.level_b)] - want, abs=1e-12)
    s = t.summary.iloc[0]
    errs = t.settings.abs_error.to_numpy()
    assert s.n_settings == 5 and s.n_estimable == 5
    assert s.share_within == pytest.approx(np.mean(errs <= 0.01)) and s.max_abs_error == pytest.approx(errs.max())
    worst = t.settings.sort_values("abs_error", ascending=False).head(3)
    assert s.worst_settings == "; ".join(f"{x.setting} ({x.error:+.4f})" for x in worst.itertuples())


def test_additivity_not_estimable_when_a_level_only_occurs_in_the_held_out_cell() -> None:
    frame = grid_rows({("a0", "b0"): 0.1, ("a0", "b1"): 0.2, ("a1", "b1"): 0.3, ("a0", "b2"): 0.2, ("a1", "b2"): 0.35})
    t = validate_additivity(frame)
    s = t.settings.set_index("setting")
    # without (a1, b0), holding out one a1 cell leaves the other to estimate a1: 0.2 + (0.35 − 0.2)
    assert s.loc["A=a1,B=b1", "estimable"] and s.loc["A=a1,B=b1", "predicted"] == pytest.approx(0.35)
    only = grid_rows({("a0", "b0"): 0.1, ("a0", "b1"): 0.2, ("a1", "b1"): 0.3})
    r = validate_additivity(only).settings.iloc[0]
    assert not r.estimable and math.isnan(r.predicted) and not r.within_tolerance
    assert validate_additivity(only).summary.n_estimable.iloc[0] == 0
    with pytest.raises(AnalysisError, match="--tolerance must be positive"):
        validate_additivity(only, tolerance=0)


def test_analyze_cli_on_a_small_csv_hand_values(tmp_path) -> None:
    from typer.testing import CliRunner

    from interbias.cli import app

    rows = e16("m1", {"clean": (0.10, 0.12), "n25": (0.15, 0.20), "n5": (0.30, 0.45)})
    rows += e16("m2", {"clean": (0.20, 0.19), "n25": (0.25, 0.30)})  # (male, n5) and (female, n5) absent
    path = tmp_path / "results.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    res = CliRunner().invoke(app, ["analyze", str(path), "--quiet", "--gap-floor", "0.015"])
    assert res.exit_code == 0, res.output
    assert "3 contrast(s), 1 setting(s) with missing terms" in res.output
    c = pd.read_csv(tmp_path / "contrasts.csv").set_index(["model", "level_b"])
    # m1, n5: predicted 0.30 + 0.12 − 0.10 = 0.32, IE = 0.45 − 0.32 = 0.13, NLI = 0.45 / 0.32
    assert c.loc[("m1", "n5"), "predicted"] == pytest.approx(0.32) and c.loc[("m1", "n5"), "ie"] == pytest.approx(0.13)
    assert c.loc[("m1", "n5"), "nli"] == pytest.approx(0.45 / 0.32)
    assert c.loc[("m2", "n25"), "ie"] == pytest.approx(0.30 - (0.25 + 0.19 - 0.20))
    miss = pd.read_csv(tmp_path / "missing_terms.csv")
    assert miss[["model", "level_b", "missing_terms"]].values.tolist() == [
        ["m2", "n5", "b=(female,n5),joint=(male,n5)"]
    ]
    g = pd.read_csv(tmp_path / "gaps.csv").fillna({"ratio_flag": ""}).set_index(["model", "condition"])
    assert g.loc[("m1", "noise=n5"), "gap"] == pytest.approx(0.15) and g.loc[
        ("m1", "noise=n5"), "ratio"
    ] == pytest.approx(7.5)
    assert g.loc[("m2", "noise=n25"), "ratio"] == pytest.approx(-5.0)
    assert g.loc[("m2", "noise=n25"), "ratio_flag"] == "unstable: |reference-condition gap| 0.0100 < floor 0.015"
    assert g.loc[("m1", "noise=n25"), "ratio_flag"] == ""
    s = pd.read_csv(tmp_path / "gap_summary.csv").set_index("condition")
    assert s.loc["noise=clean", "mean_abs_gap"] == pytest.approx((0.02 + 0.01) / 2)
    assert s.loc["noise=n25", "mean_abs_gap"] == pytest.approx((0.05 + 0.05) / 2)
    a = pd.read_csv(tmp_path / "additivity_summary.csv").set_index("model")
    assert a.loc["m2", "n_settings"] == 1 and a.loc["m1", "n_settings"] == 2
    m = pd.read_csv(tmp_path / "macro.csv")
    assert m[(m.model == "m2") & (m.scope == "macro")].value.iloc[0] == pytest.approx((0.20 + 0.19 + 0.25 + 0.30) / 4)
