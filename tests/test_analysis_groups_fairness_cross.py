"""Crossed fairness groups (``--group gender×age_band`` / ``--cross``): crossed cells, the
minimum-speakers rule per cell, one Holm family."""

from __future__ import annotations

from itertools import product
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from interbias.analysis.groups.fairness import fairness_for_files
from interbias.analysis.groups.fairness_cross import attribute_columns, components, cross_labels, crossed
from interbias.analysis.groups.fairness_stats import MISSING, MIXED, holm
from interbias.cli import app
from interbias.utils.errors import AnalysisError


def test_cross_labels_by_rule() -> None:
    g = np.array(["f", "f", MIXED, "m", MISSING, MIXED], dtype=object)
    a = np.array(["y", "o", "y", MISSING, "o", MISSING], dtype=object)
    got = cross_labels([g, a])
    assert got.tolist() == ["f×y", "f×o", MIXED, MISSING, MISSING, MISSING]


def test_names() -> None:
    assert components("gender×age_band") == ("gender", "age_band")
    assert crossed(["gender", "age_band"]) == ["gender×age_band"]
    assert attribute_columns(["gender×age_band", "gender", "accent"]) == ["gender", "age_band", "accent"]
    with pytest.raises(AnalysisError, match="two or more"):
        crossed(["gender"])
    with pytest.raises(AnalysisError, match="distinct attributes"):
        components("gender×gender")


def _files(tmp: Path) -> tuple[Path, Path]:
    """Speakers in 2 genders × 2 ages; the cell (m, old) has 3 speakers, the others 6."""
    rng = np.random.default_rng(4)
    rows = []
    spk = 0
    for gender, age in product("fm", ("young", "old")):
        n_spk = 3 if (gender, age) == ("m", "old") else 6
        ids = [f"s{spk + i}" for i in range(n_spk)]
        spk += n_spk
        shift = 0.4 if gender == "m" else 0.0
        for e in ids:
            for t in ids:
                for _ in range(3):
                    lab = int(e == t)
                    rows.append(
                        {
                            "score": rng.normal(1.0 if lab else -shift, 1.0),
                            "label": lab,
                            "enrol_speaker": e,
                            "test_speaker": t,
                            "gender": gender,
                            "age": age,
                        }
                    )
    frame = pd.DataFrame(rows)
    ev, dev = tmp / "eval.csv", tmp / "dev.csv"
    frame.to_csv(ev, index=False)
    frame[["score", "label"]].to_csv(dev, index=False)
    return ev, dev


def test_crossed_report(tmp_path: Path) -> None:
    ev, dev = _files(tmp_path)
    rep = fairness_for_files(ev, ["gender×age"], dev=dev, n_boot=200)
    cells = rep.groups[rep.groups["kind"] == "group"]
    assert sorted(cells["group"]) == ["f×old", "f×young", "m×old", "m×young"]
    frame = pd.read_csv(ev)
    for cell, n, spk in zip(cells["group"], cells["n"], cells["speakers"], strict=True):
        g, a = cell.split("×")
        sub = frame[(frame.gender == g) & (frame.age == a)]
        assert n == len(sub)
        assert spk == len(set(sub.enrol_speaker) | set(sub.test_speaker)) == (3 if cell == "m×old" else 6)
    c = rep.comparisons
    assert set(c["group_by"]) == {"gender×age"}
    assert len(c.drop_duplicates(["group_a", "group_b"])) == 6  # every pair of the 4 cells
    small = (c["group_a"] == "m×old") | (c["group_b"] == "m×old")
    assert c.loc[small, "p_value"].isna().all()  # 3 speakers: never tested
    assert c.loc[small, "note"].str.contains("fewer than 5").all()
    tested = c[~small & c["p_value"].notna()]
    assert len(tested) > 0
    # one Holm family over the crossed comparisons
    want = holm(c.loc[c["p_value"].notna(), "p_value"].to_numpy())[0]
    np.testing.assert_allclose(c.loc[c["p_value"].notna(), "p_holm"].to_numpy(), want)


def test_crossed_trial_z_keeps_the_minimum(tmp_path: Path) -> None:
    ev, dev = _files(tmp_path)
    c = fairness_for_files(ev, ["gender×age"], dev=dev, test="trial-z").comparisons
    small = (c["group_a"] == "m×old") | (c["group_b"] == "m×old")
    assert c.loc[small, "p_value"].isna().all() and c.loc[~small, "p_value"].notna().any()


def test_cli_cross(tmp_path: Path) -> None:
    ev, dev = _files(tmp_path)
    args = ["scores", "fairness", str(ev), "--dev", str(dev), "--group", "gender", "--group", "age"]
    res = CliRunner().invoke(app, [*args, "--cross", "--bootstrap", "100", "--out", str(tmp_path / "o"), "-q"])
    assert res.exit_code == 0, res.output
    groups = pd.read_csv(tmp_path / "o" / "fairness_groups.csv")
    assert set(groups["group_by"]) == {"gender×age"}
    res = CliRunner().invoke(app, ["scores", "fairness", str(ev), "--dev", str(dev), "--group", "gender", "--cross"])
    assert res.exit_code == 1 and "two or more" in res.stderr


def test_yaml_fairness_groups_accept_a_crossing(tmp_path: Path) -> None:
    """``fairness.groups`` takes a crossing written with ×, x or *, stored as ``a×b``; a
    repeated or empty component is refused when the YAML is loaded (validate)."""
    from conftest import tiny_experiment

    from interbias.experiments.schema import load_experiment
    from interbias.utils.errors import ConfigError

    groups = ["gender", "gender x accent", "accent*gender", "gender×accent"]
    exp = load_experiment(tiny_experiment(tmp_path, fairness={"groups": groups}))
    assert exp.fairness is not None
    assert exp.fairness.groups == ("gender", "gender×accent", "accent×gender", "gender×accent")
    for bad in ("gender×gender", "×accent", "gender × "):
        with pytest.raises(ConfigError, match="a crossing names distinct attributes"):
            load_experiment(tiny_experiment(tmp_path, name="T02", fairness={"groups": [bad]}))


def test_crossed_lines_count_cells_speakers_and_comparisons(tmp_path: Path) -> None:
    """analyze's and the report's lines on a crossed grouping, against the report's own tables
    counted here: 4 cells (m×old has 3 speakers), the pairs with m×old never tested."""
    from interbias.analysis.groups.fairness_cross_summary import crossed_lines

    ev, dev = _files(tmp_path)
    rep = fairness_for_files(ev, ["gender", "gender×age"], dev=dev, n_boot=200)
    lines = crossed_lines(rep.groups, rep.comparisons)
    assert len(lines) == 1  # the plain grouping gets no line
    c = rep.comparisons[rep.comparisons["group_by"] == "gender×age"]
    small = (c["group_a"] == "m×old") | (c["group_b"] == "m×old")
    n_tests = int(rep.comparisons["n_tests"].max())
    assert n_tests == int(rep.comparisons["p_value"].notna().sum())  # one family over both groupings
    sig = int((c["significant"].astype(str).str.lower() == "true").sum())
    assert lines[0] == (
        "fairness gender×age: 4 crossed cells, speakers f×old 6, f×young 6, m×old 3, m×young 6; 1 under 5 "
        f"speakers; {len(c)} comparisons: {int(c['p_value'].notna().sum())} tested (Holm over the report's "
        f"{n_tests}; {sig} significant), {int(small.sum())} not tested: a cell under 5 speakers"
    )
    assert crossed_lines(rep.groups[rep.groups["group_by"] == "gender"], None) == []
