"""The robustness profile: ladder levels (<family>_s<k>) read from results, the reference at
severity 0 in every family's panel, intervals carried, other levels tabled but not drawn."""

from __future__ import annotations

import numpy as np
import pandas as pd

from interbias.analysis.robustness import ladder_slot, profile_figure, profile_table


def results() -> pd.DataFrame:
    levels = ["clean", "lowpass_s1", "lowpass_s2", "echo_s1", "echo_s2", "narrowband"]
    rows = []
    for model, base in (("CAM++", 0.02), ("mfcc-stats", 0.2)):
        for i, lv in enumerate(levels):
            rows.append(
                {
                    "experiment": "E21",
                    "model": model,
                    "cell": f"condition={lv}",
                    "factor_a": "condition",
                    "level_a": lv,
                    "ref_a": "clean",
                    "eer": base + 0.01 * i,
                }
            )
    return pd.DataFrame(rows)


def test_profile_table_reads_the_ladder() -> None:
    res = results()
    assert ladder_slot(res.assign(factor_b="", level_b="", ref_b="", factor_c="", level_c="", ref_c="")) == "a"
    ci = res[["experiment", "model", "cell"]].assign(lo=res["eer"] - 0.005, hi=res["eer"] + 0.005)
    table = profile_table(res, "eer", ci)
    cam = table[table["series"] == "CAM++"]
    lp = cam[cam["family"] == "lowpass"].sort_values("severity")
    assert lp["severity"].tolist() == [0, 1, 2]
    np.testing.assert_allclose(lp["value"], [0.02, 0.03, 0.04])
    np.testing.assert_allclose(lp["hi"] - lp["lo"], 0.01)
    echo = cam[cam["family"] == "echo"].sort_values("severity")
    assert echo["level"].tolist() == ["clean", "echo_s1", "echo_s2"]  # the reference in every panel
    other = cam[cam["family"] == "(other)"]
    assert other["level"].tolist() == ["narrowband"] and (other["severity"] == -1).all()
    fig = profile_figure(table, "eer")
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert sorted(ax.get_title() for ax in visible) == ["echo", "lowpass"]
    assert all(len(ax.get_lines()) >= 2 for ax in visible)  # one line per model (plus error-bar parts)


def test_no_ladder_no_profile() -> None:
    res = results()
    res["level_a"] = res["level_a"].str.replace("_s", "-", regex=False)
    assert profile_table(res, "eer").empty
