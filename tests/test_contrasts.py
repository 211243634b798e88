from __future__ import annotations

import math

import pandas as pd
import pytest

from interbias.analysis.contrasts import compute_contrasts, summarize


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
