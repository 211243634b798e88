"""Contrasts, summaries and diagnostics against hand-computed values on small tables."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from analysis_rows import frame_of, results_rows
from scipy import stats

from interbias.analysis.contrasts import PER_MODEL_BY, R_NOTE, compute_contrasts, summarize
from interbias.analysis.stats.replicates import Replicates
from interbias.analysis.summaries import above_chance, cell_intervals, macro
from interbias.utils.errors import AnalysisError


def two_factor(model: str, values: dict[tuple[str, str], float], experiment: str = "E", family: str = "sv") -> list:
    return results_rows(values, experiment=experiment, model=model, family=family)


def three_factor(values: dict[tuple[str, str, str], float]) -> pd.DataFrame:
    return frame_of(values, factors=(("A", "a0"), ("B", "b0"), ("C", "c0")), experiment="T")


def test_two_factor_hand_computed_with_missing_term() -> None:
    grid = {("a0", "b0"): 0.10, ("a1", "b0"): 0.15, ("a0", "b1"): 0.20, ("a1", "b1"): 0.30, ("a0", "b2"): 0.12}
    t = compute_contrasts(pd.DataFrame(two_factor("m", grid)))
    assert len(t.contrasts) == 1 and len(t.missing) == 1
    r = t.contrasts.iloc[0]
    assert r.contrast == "A×B" and (r.level_a, r.level_b, r.level_c) == ("a1", "b1", "")
    assert (r.eer_ref, r.eer_a, r.eer_b, r.eer_ab) == (0.10, 0.15, 0.20, 0.30) and math.isnan(r.eer_c)
    assert r.predicted == pytest.approx(0.25) and r.ie == pytest.approx(0.05) and r.nli == pytest.approx(1.2)
    assert r["flags"] == ""
    m = t.missing.iloc[0]
    assert (m.level_a, m.level_b, m.missing_terms) == ("a1", "b2", "joint=(a1,b2)")
    # a missing reference is listed for every setting that needs it, never imputed
    del grid[("a0", "b0")]
    t = compute_contrasts(pd.DataFrame(two_factor("m", grid)))
    assert t.contrasts.empty
    assert sorted(t.missing.missing_terms) == ["ref=(a0,b0)", "ref=(a0,b0),joint=(a1,b2)"]


def test_zero_and_negative_predictions_and_chance_flags() -> None:
    rows = two_factor("neg", {("a0", "b0"): 0.30, ("a1", "b0"): 0.10, ("a0", "b1"): 0.10, ("a1", "b1"): 0.05})
    rows += two_factor("zero", {("a0", "b0"): 0.75, ("a1", "b0"): 0.25, ("a0", "b1"): 0.5, ("a1", "b1"): 0.125})
    rows += two_factor("high", {("a0", "b0"): 0.30, ("a1", "b0"): 0.45, ("a0", "b1"): 0.55, ("a1", "b1"): 0.52})
    c = compute_contrasts(pd.DataFrame(rows)).contrasts.set_index("model")
    assert c.loc["neg", "predicted"] == pytest.approx(-0.10) and c.loc["neg", "ie"] == pytest.approx(0.15)
    assert math.isnan(c.loc["neg", "nli"]) and c.loc["neg", "flags"] == "prediction<=0 (no NLI)"
    # 0.25 + 0.5 − 0.75 is exactly 0.0 in binary floating point: no NLI, IE = observed
    assert c.loc["zero", "predicted"] == 0.0 and c.loc["zero", "ie"] == 0.125 and math.isnan(c.loc["zero", "nli"])
    assert c.loc["zero", "flags"] == "term>0.5;prediction<=0 (no NLI)"
    assert c.loc["high", "predicted"] == pytest.approx(0.70) and c.loc["high", "ie"] == pytest.approx(-0.18)
    assert c.loc["high", "flags"] == "prediction>0.5;term>0.5"
    s = summarize(compute_contrasts(pd.DataFrame(rows)).contrasts, ("experiment",)).iloc[0]
    assert s.n == 3 and s.n_nli == 1 and s.mean_nli == pytest.approx(0.52 / 0.70)
    assert s.share_predicted_above_chance == pytest.approx(1 / 3)
    assert s.pct_positive == pytest.approx(200 / 3)  # +0.15, +0.125, −0.18


def test_three_factor_pairwise_within_levels_and_three_way() -> None:
    a = {"a0": 0.0, "a1": 0.02}
    b = {"b0": 0.0, "b1": 0.03}
    c = {"c0": 0.0, "c1": 0.05}
    base = 0.10
    vals = {}
    for la in a:
        for lb in b:
            for lc in c:
                extra = 0.01 if (la, lb, lc) == ("a1", "b1", "c1") else 0.0
                extra += 0.004 if (la, lb) == ("a1", "b1") else 0.0
                vals[(la, lb, lc)] = base + a[la] + b[lb] + c[lc] + extra
    t = compute_contrasts(three_factor(vals))
    assert t.missing.empty
    got = {(r.contrast, r.level_a, r.level_b, r.level_c): r for r in t.contrasts.itertuples()}
    assert sorted(k[0] for k in got) == ["A×B", "A×B", "A×B×C", "A×C", "A×C", "B×C", "B×C"]
    # A×B within C=c0: only the pairwise extra; within C=c1 the three-way extra adds on
    assert got[("A×B", "a1", "b1", "c0")].ie == pytest.approx(0.004)
    assert got[("A×B", "a1", "b1", "c1")].ie == pytest.approx(0.014)
    assert got[("A×C", "a1", "b0", "c1")].ie == pytest.approx(0.0)
    assert got[("A×C", "a1", "b1", "c1")].ie == pytest.approx(0.010)  # within B=b1: (a1,b1,*) carry 0.004
    three = got[("A×B×C", "a1", "b1", "c1")]
    # predicted = M(a1,r,r) + M(r,b1,r) + M(r,r,c1) − 2·M(r,r,r)
    assert three.predicted == pytest.approx(0.12 + 0.13 + 0.15 - 0.20)
    assert three.ie == pytest.approx(0.014) and (three.eer_a, three.eer_b, three.eer_c) == pytest.approx(
        (0.12, 0.13, 0.15)
    )
    assert three.eer_ab == pytest.approx(vals[("a1", "b1", "c1")])
    del vals[("a0", "b0", "c1")]
    miss = compute_contrasts(three_factor(vals)).missing
    assert "c=(a0,b0,c1)" in set(miss.missing_terms)


def test_summary_and_per_model_against_hand_values() -> None:
    rows = []
    for model, fam, ab in (("m1", "sv", 0.30), ("m2", "sv", 0.20), ("m3", "sv", 0.40), ("s1", "ssl", 0.28)):
        rows += two_factor(
            model, {("a0", "b0"): 0.10, ("a1", "b0"): 0.15, ("a0", "b1"): 0.20, ("a1", "b1"): ab}, family=fam
        )
        rows += two_factor(
            model, {("a0", "b0"): 0.10, ("a2", "b0"): 0.12, ("a0", "b1"): 0.20, ("a2", "b1"): ab - 0.01}, family=fam
        )[1::2]
    c = compute_contrasts(pd.DataFrame(rows)).contrasts
    sv = summarize(c).set_index("family").loc["sv"]
    ie = c[c.family == "sv"]["ie"].to_numpy()
    pred = c[c.family == "sv"]["predicted"].to_numpy()
    assert sv.n == 6 and sv.mean_ie == pytest.approx(ie.mean()) and sv.sd_ie == pytest.approx(np.std(ie, ddof=1))
    assert sv.r_predicted_ie == pytest.approx(stats.pearsonr(pred, ie).statistic)
    assert sv.r_note == R_NOTE and "coupled" in sv.r_note
    assert sv.max_predicted == pytest.approx(0.25) and sv.mean_predicted == pytest.approx(0.235)
    per = summarize(c, PER_MODEL_BY).set_index("model")
    assert list(per.index) == ["m1", "m2", "m3", "s1"] and (per.n == 2).all()
    assert per.loc["m2", "mean_ie"] == pytest.approx(((0.20 - 0.25) + (0.19 - 0.22)) / 2)
    assert per.loc["s1", "pct_positive"] == 100.0


def test_duplicate_cell_and_inconsistent_factor_are_errors() -> None:
    rows = two_factor("m", {("a0", "b0"): 0.1, ("a1", "b0"): 0.2})
    with pytest.raises(AnalysisError, match=r"E / m: cell \(a0, b0\) appears 2 times"):
        compute_contrasts(pd.DataFrame(rows + rows[:1]))
    rows[1]["ref_a"] = "a1"
    with pytest.raises(AnalysisError, match="E / m: column ref_a takes several values"):
        compute_contrasts(pd.DataFrame(rows))


def fake_replicates(values: dict[tuple[str, str, str], np.ndarray]) -> Replicates:
    n = len(next(iter(values.values())))
    return Replicates("eer", "speaker", n, 0, 0.9, "test", values)


def test_ie_interval_is_the_percentile_of_replicated_ie() -> None:
    grid = {("a0", "b0"): 0.10, ("a1", "b0"): 0.15, ("a0", "b1"): 0.20, ("a1", "b1"): 0.30}
    frame = pd.DataFrame(two_factor("m", grid))
    rng = np.random.default_rng(0)
    reps = {("E", "m", cell): v + rng.normal(0, 0.01, 200) for cell, v in zip(frame.cell, frame.eer, strict=True)}
    t = compute_contrasts(frame, replicates=fake_replicates(reps))
    by = dict(zip(frame.cell, [reps[("E", "m", c)] for c in frame.cell], strict=True))
    ie_reps = by["A=a1,B=b1"] - by["A=a1,B=b0"] - by["A=a0,B=b1"] + by["A=a0,B=b0"]
    r = t.contrasts.iloc[0]
    assert r.ie_lo == pytest.approx(np.quantile(ie_reps, 0.05)) and r.ie_hi == pytest.approx(np.quantile(ie_reps, 0.95))
    assert (r.n_boot, r.boot_unit, r.ci_level, r.n_boot_valid) == (200, "speaker", 0.9, 200)
    s = summarize(t.contrasts, ie_replicates=t.ie_replicates, replicates=fake_replicates(reps)).iloc[0]
    assert s.mean_ie_lo == pytest.approx(np.quantile(ie_reps, 0.05))
    cells = cell_intervals(frame, fake_replicates(reps))
    assert cells.lo.iloc[0] == pytest.approx(np.quantile(reps[("E", "m", "A=a0,B=b0")], 0.05))


def test_macro_averages_cells_then_experiments_and_flags_chance() -> None:
    rows = two_factor("m", {("a0", "b0"): 0.1, ("a1", "b0"): 0.2, ("a0", "b1"): 0.3, ("a1", "b1"): 0.6}, "E1")
    rows += two_factor("m", {("a0", "b0"): 0.05, ("a1", "b0"): 0.15}, "E2")
    rows += two_factor("n", {("a0", "b0"): 0.2, ("a1", "b0"): 0.4}, "E2", family="ssl")
    frame = pd.DataFrame(rows)
    mac = macro(frame, "eer")
    m = mac[(mac.model == "m") & (mac.scope == "macro")].iloc[0]
    assert m.value == pytest.approx((0.3 + 0.1) / 2) and m.n_experiments == 2 and m.n_cells == 6
    assert m.n_cells_above_chance == 1
    e1 = mac[(mac.model == "m") & (mac.experiment == "E1")].iloc[0]
    assert e1.value == pytest.approx(0.3) and e1.n_cells == 4
    assert mac[(mac.model == "n") & (mac.scope == "macro")].value.iloc[0] == pytest.approx(0.3)
    flagged = above_chance(frame, "eer")
    assert flagged[["model", "cell", "value"]].values.tolist() == [["m", "A=a1,B=b1", 0.6]]
    assert above_chance(frame.assign(min_dcf=0.9), "min_dcf").empty


# ---- merged from test_contrasts.py (the near-duplicate module) ------------------------------


def frame(rows):
    base = {
        "experiment": "E",
        "dataset": "d",
        "family": "sv",
        "factor_a": "A",
        "ref_a": "a0",
        "factor_b": "B",
        "ref_b": "b0",
        "factor_c": "",
        "level_c": "",
    }
    return pd.DataFrame([{**base, **r} for r in rows])


def test_hand_computed_contrast_and_missing() -> None:
    rows = [
        {"model": "m", "level_a": "a0", "level_b": "b0", "eer": 0.10},
        {"model": "m", "level_a": "a1", "level_b": "b0", "eer": 0.15},
        {"model": "m", "level_a": "a0", "level_b": "b1", "eer": 0.20},
        {"model": "m", "level_a": "a1", "level_b": "b1", "eer": 0.30},
        {"model": "m", "level_a": "a0", "level_b": "b2", "eer": 0.12},  # (a1, b2) missing
    ]
    t = compute_contrasts(frame(rows))
    assert len(t.contrasts) == 1
    r = t.contrasts.iloc[0]
    assert r.predicted == pytest.approx(0.25) and r.ie == pytest.approx(0.05) and r.nli == pytest.approx(1.2)
    assert t.missing.iloc[0].missing_terms == "joint=(a1,b2)"


def test_nonpositive_prediction_has_no_nli() -> None:
    rows = [
        {"model": "m", "level_a": "a0", "level_b": "b0", "eer": 0.30},
        {"model": "m", "level_a": "a1", "level_b": "b0", "eer": 0.10},
        {"model": "m", "level_a": "a0", "level_b": "b1", "eer": 0.10},
        {"model": "m", "level_a": "a1", "level_b": "b1", "eer": 0.05},
    ]
    r = compute_contrasts(frame(rows)).contrasts.iloc[0]
    assert r.predicted == pytest.approx(-0.10) and r.ie == pytest.approx(0.15) and math.isnan(r.nli)


def test_summary_values() -> None:
    rows = []
    for model, ab in (("m1", 0.30), ("m2", 0.20), ("m3", 0.40)):
        rows += [
            {"model": model, "level_a": "a0", "level_b": "b0", "eer": 0.10},
            {"model": model, "level_a": "a1", "level_b": "b0", "eer": 0.15},
            {"model": model, "level_a": "a0", "level_b": "b1", "eer": 0.20},
            {"model": model, "level_a": "a1", "level_b": "b1", "eer": ab},
        ]
    s = summarize(compute_contrasts(frame(rows)).contrasts).iloc[0]
    assert s.n == 3
    assert s.mean_ie == pytest.approx((0.05 - 0.05 + 0.15) / 3)
    assert s.sd_ie == pytest.approx(pd.Series([0.05, -0.05, 0.15]).std())
    assert s.pct_positive == pytest.approx(200 / 3)
    assert s.n_nli == 3 and s.mean_nli == pytest.approx((1.2 + 0.8 + 1.6) / 3)
    assert s.mean_predicted == pytest.approx(0.25) and s.max_predicted == pytest.approx(0.25)
    assert math.isnan(s.r_predicted_ie)  # zero variance in prediction
