"""The seed paper's tables against hand computations on a two-model 2 × 2 grid: the grid per
model, Table 12 (observed, additive, family-mean IE, chance ceiling), Tables 14–30 (mean ± SD
over encoders) and the interaction figure's damage."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from analysis_rows import results_rows

from interbias.analysis.contrasts import compute_contrasts
from interbias.analysis.reporting.paper_figures import damage_table
from interbias.analysis.reporting.paper_tables import condition_table, grid_table, setting_table

M1 = {("a0", "b0"): 0.10, ("a1", "b0"): 0.20, ("a0", "b1"): 0.15, ("a1", "b1"): 0.40}
M2 = {("a0", "b0"): 0.10, ("a1", "b0"): 0.10, ("a0", "b1"): 0.10, ("a1", "b1"): 0.20}


@pytest.fixture()
def results() -> pd.DataFrame:
    return pd.DataFrame(results_rows(M1, model="m1", family="sv") + results_rows(M2, model="m2", family="ssl"))


def test_grid_rows_one_factor_columns_the_other(results: pd.DataFrame) -> None:
    grid = grid_table(results, "eer", None, "E", "m1")
    assert list(grid.columns) == ["A", "B=b0", "B=b1"]
    assert grid.set_index("A").loc["a1"].tolist() == ["0.200", "0.400"]
    cells = pd.DataFrame({"experiment": "E", "model": "m1", "cell": "A=a0,B=b0", "lo": [0.05], "hi": [0.16]})
    assert grid_table(results, "eer", cells, "E", "m1").iloc[0, 1] == "0.100 [0.050, 0.160]"


def test_settings_table_is_table_12(results: pd.DataFrame) -> None:
    table = setting_table(compute_contrasts(results, "eer").contrasts, "eer")
    row = table.iloc[0]
    # m1: prediction 0.10 + 0.10 + 0.05 = 0.25, IE 0.15; m2: prediction 0.10, IE 0.10
    assert row.observed == pytest.approx((0.40 + 0.20) / 2) and row.predicted == pytest.approx((0.25 + 0.10) / 2)
    assert (row.ie_sv, row.ie_ssl, row.mean_ie) == pytest.approx((0.15, 0.10, 0.125))
    # seed 001: "0.5 is the chance reference, not a hard upper bound ... For this EER, U = 1"
    assert row.ie_ceiling == pytest.approx(1.0 - 0.175) and row.ie_chance == pytest.approx(0.5 - 0.175)
    costs = compute_contrasts(results.assign(min_dcf=results.eer), "min_dcf").contrasts
    cost_row = setting_table(costs, "min_dcf").iloc[0]
    assert cost_row.ie_ceiling == pytest.approx(1.0 - 0.175)  # normalised minDCF is at most 1
    assert pd.isna(cost_row.ie_chance)  # no chance level: no chance line


def test_the_ceiling_is_the_metrics_true_maximum() -> None:
    """U is what the metric can reach: EER of perfectly inverted scores is 1 (above chance), and
    normalised minDCF of any scores is at most 1 (accept-all / reject-all thresholds)."""
    from interbias.analysis.reporting.paper_tables import UPPER
    from interbias.metrics import verification as V

    s, lab = np.r_[np.zeros(50), np.ones(50)], np.r_[np.ones(50), np.zeros(50)].astype(int)
    assert V.eer(s, lab) == UPPER["eer"] == 1.0
    rng = np.random.default_rng(0)
    worst = max(V.min_dcf(rng.normal(size=400), rng.integers(0, 2, 400)) for _ in range(20))
    assert worst <= UPPER["min_dcf"] == 1.0


def test_conditions_mean_and_sd_over_encoders(results: pd.DataFrame) -> None:
    table = condition_table(results, "eer").set_index("cell")
    assert table.loc["A=a1,B=b1", "mean"] == pytest.approx(0.30)
    assert table.loc["A=a1,B=b1", "sd"] == pytest.approx(((0.1**2 + 0.1**2) / 1) ** 0.5)
    assert (table["n_models"] == 2).all()


def test_damage_from_the_reference_by_level(results: pd.DataFrame) -> None:
    d = damage_table(results, "eer").set_index(["model", "series"])["damage"]
    assert d.loc[("m1", "A=a0")] == pytest.approx(0.05) and d.loc[("m1", "A=a1")] == pytest.approx(0.20)
    assert d.loc[("m2", "A=a1")] == pytest.approx(0.10)


def test_forest_panels_share_one_x_scale() -> None:
    from interbias.analysis.reporting.plots import forest_figure

    rows = pd.DataFrame(
        {"model": ["m1", "m2"], "kind": "interaction", "effect": ["IE A×B at a1, b1"] * 2, "estimate": [0.01, 0.3],
         "lo": [0.0, 0.2], "hi": [0.02, 0.4], "lo_simultaneous": [-0.01, 0.1], "hi_simultaneous": [0.03, 0.5],
         "_res": [False, True]}
    )  # fmt: skip
    fig = forest_figure(rows, ["interaction"], "EER difference")
    left, right = (ax for ax in fig.axes if ax.get_visible())
    assert left.get_xlim() == right.get_xlim()
    assert [t.get_text() for t in left.get_yticklabels()] == ["A × B at a1, b1"]
    assert min(t.get_fontsize() for ax in (left, right) for t in [*ax.get_yticklabels(), *ax.get_xticklabels()]) >= 8


def test_condition_figure_never_joins_conditions() -> None:
    from interbias.analysis.reporting.plots import condition_figure

    table = pd.DataFrame(
        {"model": "m", "condition": ["noise=gaussian_5", "noise=crosstalk_25"], "series": "female",
         "value": [0.1, 0.2]}
    )  # fmt: skip
    fig = condition_figure(table, "eer", "gender")
    ax = fig.axes[0]
    (points,) = [line for line in ax.get_lines() if line.get_label() == "female"]
    assert points.get_linestyle() == "None" and len(points.get_xdata()) == 2
    assert ax.get_ylabel() == "EER" and fig.legends[0].get_title().get_text() == "gender"


def test_forest_labels_have_one_grammar_for_every_kind(results: pd.DataFrame) -> None:
    """``WHAT [at LEVELS] [over FACTORS]`` for main, simple, interaction and gap effects as
    :func:`enumerate_effects` writes them (a 2 × 2 grid, B as the group factor)."""
    from interbias.analysis.effects import enumerate_effects
    from interbias.analysis.gaps import compute_gaps
    from interbias.analysis.reporting.plots import effect_label

    m1 = results[results["model"] == "m1"]
    effects = enumerate_effects(
        m1, "eer", compute_contrasts(m1, "eer"), compute_gaps(m1, "eer", group_factor="B"), simple=True
    )
    labels = {(e.row["kind"], effect_label(pd.Series(e.row))) for e in effects}
    assert labels == {
        ("main", "A a1 − a0 over B"),
        ("main", "B b1 − b0 over A"),
        ("simple", "A a1 − a0 at b0"),
        ("simple", "A a1 − a0 at b1"),
        ("interaction", "A × B at a1, b1"),
        ("gap", "B b1 − b0 at a0"),
        ("gap", "B b1 − b0 at a1"),
    }, labels
    one_level = pd.Series({"kind": "main", "effect": "main A=a1 − A=a0 (at B=b0: the only level in the results)",
                           "condition": "A=a1", "reference": "A=a0"})  # fmt: skip
    assert effect_label(one_level) == "A a1 − a0 at b0"
    assert effect_label(pd.Series({"kind": "other", "effect": "IE something else"})) == "something else"
