"""Group fairness metrics, z-tests and Holm correction against hand-computed values and statsmodels."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportions_ztest
from typer.testing import CliRunner

from interbias.analysis.groups.fairness import (
    Threshold,
    ThresholdRule,
    Unit,
    confusion,
    fairness_for_files,
    fairness_report,
    holm,
    pair_groups,
    single_groups,
    two_proportion_ztest,
)
from interbias.cli import app
from interbias.metrics.verification import eer_from_sweep, threshold_sweep
from interbias.utils.errors import AnalysisError
from interbias.utils.seeding import derive_rng

# Hand-made table, threshold 0.5, accept when score >= 0.5.
# female: targets 0.9 0.8 0.6 0.4 -> TP 3, FN 1; non-targets 0.7 0.55 0.3 0.2 0.1 -> FP 2, TN 3
# male:   targets 0.95 0.85 0.75  -> TP 3, FN 0; non-targets 0.52 0.45 0.35 0.25 -> FP 1, TN 3
FEMALE = [(0.9, 1), (0.8, 1), (0.6, 1), (0.4, 1), (0.7, 0), (0.55, 0), (0.3, 0), (0.2, 0), (0.1, 0)]
MALE = [(0.95, 1), (0.85, 1), (0.75, 1), (0.52, 0), (0.45, 0), (0.35, 0), (0.25, 0)]


def table() -> pd.DataFrame:
    rows = [{"score": s, "label": lab, "gender": "female"} for s, lab in FEMALE]
    rows += [{"score": s, "label": lab, "gender": "male"} for s, lab in MALE]
    return pd.DataFrame(rows)


def report(threshold: float = 0.5, positive: str = "accept", frame: pd.DataFrame | None = None):
    f = table() if frame is None else frame
    unit = Unit(
        keys={},
        scores=f["score"].to_numpy(),
        labels=f["label"].to_numpy(),
        groups={"gender": f["gender"].to_numpy(dtype=object)},
        threshold=Threshold(threshold, "fixed:0.5", "fixed"),
    )
    return fairness_report([unit], positive=positive, test="trial-z")


def hand_holm(p: list[float]) -> list[float]:
    """Holm step-down, written out: sort, multiply by (m - rank), running max, cap at 1."""
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    out = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


def test_confusion_counts_by_hand() -> None:
    f = table()
    fem = f[f.gender == "female"]
    c = confusion(fem.score.to_numpy(), fem.label.to_numpy(), 0.5, "accept")
    assert (c.tp, c.fp, c.tn, c.fn) == (3, 2, 3, 1)
    # positive = spoof: predicted positive = rejected, actual positive = label 0
    c = confusion(fem.score.to_numpy(), fem.label.to_numpy(), 0.5, "spoof")
    assert (c.tp, c.fp, c.tn, c.fn) == (3, 1, 3, 2)
    # a score equal to the threshold is accepted
    c = confusion(np.array([0.5]), np.array([1]), 0.5, "accept")
    assert (c.tp, c.fn) == (1, 0)


def test_group_metrics_hand_computed_with_zero_false_negatives() -> None:
    g = report().groups.set_index("group")
    fem, male = g.loc["female"], g.loc["male"]
    assert (fem.tp, fem.fp, fem.tn, fem.fn) == (3, 2, 3, 1)
    assert (male.tp, male.fp, male.tn, male.fn) == (3, 1, 3, 0)
    assert fem.statistical_parity == pytest.approx(5 / 9)
    assert fem.equal_opportunity == pytest.approx(3 / 4)
    assert fem.equality_of_odds == pytest.approx(2 / 5)
    assert fem.predictive_parity == pytest.approx(3 / 5)
    assert fem.treatment_equality == pytest.approx(2.0)
    assert fem.far == pytest.approx(2 / 5) and fem.frr == pytest.approx(1 / 4)
    assert male.statistical_parity == pytest.approx(4 / 7)
    assert male.equal_opportunity == pytest.approx(1.0)
    assert male.equality_of_odds == pytest.approx(1 / 4)
    assert male.predictive_parity == pytest.approx(3 / 4)
    assert math.isnan(male.treatment_equality)  # FP/FN with FN = 0: undefined, and said so
    assert male.note == "treatment_equality undefined: FN = 0"
    assert male.far == pytest.approx(1 / 4) and male.frr == 0.0
    overall = g.loc["all"]
    assert overall.kind == "all" and overall.n == 16 and overall.tp == 6 and overall.fp == 3
    assert (g.threshold == 0.5).all() and (g.positive == "accept").all()


def test_comparisons_match_statsmodels_and_hand_holm() -> None:
    comp = report().comparisons.set_index("metric")
    # (x_a, n_a, x_b, n_b) each z-test compares, female vs male
    counts = {
        "statistical_parity": (5, 9, 4, 7),
        "equal_opportunity": (3, 4, 3, 3),
        "equality_of_odds": (2, 5, 1, 4),
        "predictive_parity": (3, 5, 3, 4),
        "treatment_equality": (2, 3, 1, 1),  # FP of FP+FN
    }
    pvals = []
    for metric, (xa, na, xb, nb) in counts.items():
        row = comp.loc[metric]
        assert (row.group_a, row.group_b) == ("female", "male")
        assert (row.x_a, row.n_a, row.x_b, row.n_b) == (xa, na, xb, nb)
        z, p = proportions_ztest([xa, xb], [na, nb])
        assert row.z == pytest.approx(z, rel=1e-12) and row.p_value == pytest.approx(p, rel=1e-12)
        pooled = (xa + xb) / (na + nb)
        z_hand = (xa / na - xb / nb) / math.sqrt(pooled * (1 - pooled) * (1 / na + 1 / nb))
        assert row.z == pytest.approx(z_hand, rel=1e-12)
        pvals.append(p)
    assert comp.loc["statistical_parity"].difference == pytest.approx(5 / 9 - 4 / 7)
    assert comp.loc["equal_opportunity"].difference == pytest.approx(3 / 4 - 1)
    te = comp.loc["treatment_equality"]
    assert te.value_a == pytest.approx(2.0) and math.isnan(te.value_b) and math.isnan(te.difference)
    assert te.note == "male: FN = 0"
    expected = hand_holm(pvals)
    sm = multipletests(pvals, method="holm")[1]
    for metric, e, s in zip(counts, expected, sm, strict=True):
        assert comp.loc[metric].p_holm == pytest.approx(e, rel=1e-12)
        assert comp.loc[metric].p_holm == pytest.approx(s, rel=1e-12)
    assert (comp.n_tests == 5).all()


def test_holm_hand_values_and_nan_guard() -> None:
    adj, rej = holm([0.01, 0.04, 0.03, 0.2])
    assert adj.tolist() == pytest.approx([0.04, 0.09, 0.09, 0.2])
    assert rej.tolist() == [True, False, False, False]
    adj, rej = holm([0.01, math.nan, 0.04])
    assert adj[0] == pytest.approx(0.02) and math.isnan(adj[1]) and adj[2] == pytest.approx(0.04)
    assert rej.tolist() == [True, False, True]


def test_ztest_undefined_cases_are_reported() -> None:
    assert two_proportion_ztest(0, 5, 0, 7)[2] == "not tested: pooled proportion is 0 (zero variance)"
    assert two_proportion_ztest(5, 5, 7, 7)[2] == "not tested: pooled proportion is 1 (zero variance)"
    z, p, note = two_proportion_ztest(1, 0, 2, 5)
    assert math.isnan(z) and math.isnan(p) and note == "not tested: a group has an empty denominator"


def test_holm_runs_across_every_comparison_of_a_report() -> None:
    f = table()
    f["band"] = ["young", "old"] * 8
    rng = np.random.default_rng(0)
    units = []
    for model in ("A", "B"):
        s = f["score"].to_numpy() + (0 if model == "A" else rng.normal(0, 0.1, len(f)))
        units.append(
            Unit(
                keys={"model": model},
                scores=s,
                labels=f["label"].to_numpy(),
                groups={"gender": f["gender"].to_numpy(dtype=object), "band": f["band"].to_numpy(dtype=object)},
                threshold=Threshold(0.5, "fixed:0.5", "fixed"),
            )
        )
    comp = fairness_report(units, test="trial-z").comparisons
    ok = comp.p_value.notna()
    assert len(comp) == 2 * 2 * 5 and comp.n_tests.iloc[0] == int(ok.sum())
    expected = multipletests(comp.p_value[ok].to_numpy(), method="holm")[1]
    assert comp.p_holm[ok].to_numpy() == pytest.approx(expected)
    assert comp.p_holm[ok].to_numpy() == pytest.approx(hand_holm(comp.p_value[ok].tolist()))


def test_spoof_positive_class_countermeasure_scores() -> None:
    # A countermeasure: higher score = more bona fide; label 1 bona fide, 0 spoof.
    frame = pd.DataFrame(
        {
            "score": [0.9, 0.7, 0.3, 0.2, 0.6, 0.1, 0.8, 0.4, 0.45, 0.05],
            "label": [1, 1, 1, 0, 0, 0, 1, 1, 0, 0],
            "gender": ["f"] * 6 + ["m"] * 4,
        }
    )
    g = report(0.5, "spoof", frame).groups.set_index("group")
    # f: bona fide 0.9 0.7 0.3 -> one flagged (FP 1, TN 2); spoof 0.2 0.6 0.1 -> flagged 2 (TP 2, FN 1)
    f = g.loc["f"]
    assert (f.tp, f.fp, f.tn, f.fn) == (2, 1, 2, 1)
    assert f.statistical_parity == pytest.approx(3 / 6)  # flagged as spoof
    assert f.equal_opportunity == pytest.approx(2 / 3)  # spoofs caught
    assert f.equality_of_odds == pytest.approx(1 / 3)  # bona fide flagged
    assert f.predictive_parity == pytest.approx(2 / 3)
    assert f.far == pytest.approx(1 / 3) and f.frr == pytest.approx(1 / 3)  # spoof accepted, bona fide rejected
    m = g.loc["m"]  # bona fide 0.8 0.4 -> FP 1; spoof 0.45 0.05 -> TP 2, FN 0
    assert (m.tp, m.fp, m.tn, m.fn) == (2, 1, 1, 0)
    assert (g.positive == "spoof").all()


def test_pair_groups_mixed_and_missing() -> None:
    out = pair_groups(["f", "f", "m", None, ""], ["f", "m", "m", "f", "m"])
    assert out.tolist() == ["f", "mixed", "m", "missing", "missing"]
    frame = pd.DataFrame(
        {
            "score": [0.9, 0.1, 0.8, 0.2, 0.7],
            "label": [1, 0, 1, 0, 0],
            "enrol_gender": ["f", "f", "m", "m", "f"],
            "test_gender": ["f", "f", "m", "m", "m"],
        }
    )
    unit = Unit({}, frame.score.to_numpy(), frame.label.to_numpy(), {"gender": out[:0]}, Threshold(0.5, "x", "x"))
    unit.groups = {"gender": pair_groups(frame.enrol_gender, frame.test_gender)}
    g = fairness_report([unit], test="trial-z").groups.set_index("group")
    assert g.loc["mixed"].kind == "mixed" and g.loc["mixed"].n == 1 and g.loc["mixed"].fp == 1
    comp = fairness_report([unit], test="trial-z").comparisons
    assert set(comp.group_a) | set(comp.group_b) == {"f", "m"}  # mixed pairs are reported, not compared


def test_threshold_rules() -> None:
    assert ThresholdRule.parse("eer").label == "eer"
    assert ThresholdRule.parse("fixed:0.25").choose(None, None) == 0.25
    s = np.array([0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9])
    lab = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    assert ThresholdRule.parse("eer").choose(s, lab) == eer_from_sweep(threshold_sweep(s, lab))[1] == 0.6
    # FAR(t) = P(s >= t | label 0): 0.4 -> 1/4, 0.3 -> 2/4; lowest threshold with FAR <= 0.25 is 0.4
    assert ThresholdRule.parse("far:0.25").choose(s, lab) == 0.4
    assert ThresholdRule.parse("far:0").choose(s, lab) == 0.6
    for bad, msg in (
        ("median", "threshold rule 'median': valid: eer, fixed:X, far:X"),
        ("far:1.5", "threshold rule 'far:1.5': the target FAR must be in [0, 1)"),
        ("fixed:abc", "threshold rule 'fixed:abc': 'abc' is not a finite number"),
    ):
        with pytest.raises(AnalysisError) as exc:
            ThresholdRule.parse(bad)
        assert str(exc.value) == msg
    with pytest.raises(AnalysisError) as exc:
        ThresholdRule.parse("far:0").choose(np.array([0.1, 0.9]), np.array([1, 0]))
    assert "no finite dev threshold exists" in str(exc.value)


def _write(tmp_path: Path, name: str, frame: pd.DataFrame) -> Path:
    p = tmp_path / name
    frame.to_csv(p, index=False)
    return p


def test_dev_threshold_is_the_one_applied_on_eval(tmp_path: Path) -> None:
    dev = pd.DataFrame({"score": [0.2, 0.3, 0.45, 0.6, 0.7, 0.8], "label": [0, 0, 0, 1, 1, 1]})
    dev_path = _write(tmp_path, "dev.csv", dev)
    ev = table()
    ev_path = _write(tmp_path, "eval.csv", ev)
    rep = fairness_for_files(ev_path, ["gender"], dev=dev_path, test="trial-z")
    thr = eer_from_sweep(threshold_sweep(dev.score, dev.label))[1]
    assert thr == 0.6
    assert (rep.groups.threshold == thr).all() and (rep.comparisons.threshold == thr).all()
    assert rep.groups.threshold_source.iloc[0] == "dev dev.csv: 6 trials (3 label 1, 3 label 0)"
    # eval's own EER threshold is something else: the report did not look at it
    assert eer_from_sweep(threshold_sweep(ev.score, ev.label))[1] != thr
    for gender, sub in ev.groupby("gender"):
        row = rep.groups[rep.groups.group == gender].iloc[0]
        assert row.far == pytest.approx((sub[sub.label == 0].score >= thr).mean())
        assert row.frr == pytest.approx((sub[sub.label == 1].score < thr).mean())
    # shifting eval scores changes the rates but not the threshold
    shifted = _write(tmp_path, "eval2.csv", ev.assign(score=ev.score + 0.05))
    rep2 = fairness_for_files(shifted, ["gender"], dev=dev_path, test="trial-z")
    assert (rep2.groups.threshold == thr).all() and not rep2.groups.far.equals(rep.groups.far)


def test_cli_fairness_json_and_files(tmp_path: Path) -> None:
    dev = _write(
        tmp_path, "dev.csv", pd.DataFrame({"score": [0.2, 0.3, 0.6, 0.7], "label": ["nontarget"] * 2 + ["target"] * 2})
    )
    ev = _write(tmp_path, "eval.csv", table())
    runner = CliRunner()
    res = runner.invoke(
        app,
        [
            "scores",
            "fairness",
            str(ev),
            "--group",
            "gender",
            "--dev",
            str(dev),
            "--json",
            "--out",
            str(tmp_path / "o"),
            "--test",
            "trial-z",
        ],
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["positive"] == "accept"
    assert {g["group"] for g in data["groups"]} == {"all", "female", "male"}
    te = [c for c in data["comparisons"] if c["metric"] == "treatment_equality"][0]
    assert te["value_b"] is None  # NaN becomes null
    saved = pd.read_csv(tmp_path / "o" / "fairness.csv")
    assert len(saved) == 5 and saved.threshold.nunique() == 1
    assert (tmp_path / "o" / "fairness_groups.csv").is_file()
    res = runner.invoke(
        app,
        [
            "scores",
            "fairness",
            str(ev),
            "--group",
            "gender",
            "--threshold-rule",
            "fixed:0.5",
            "-q",
            "--test",
            "trial-z",
        ],
    )
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--group", "gender"], "error: threshold rule eer needs development scores (--dev DEV_SCORES)"),
        (
            ["--group", "age", "--threshold-rule", "fixed:0.5"],
            "error: {ev}: no group column 'age' (nor enrol_age and test_age); found: score, label, gender",
        ),
        (["--threshold-rule", "fixed:0.5"], "error: give at least one --group column"),
        (
            ["--group", "gender", "--threshold-rule", "fixed:0.5"],
            "error: {ev}: the speaker test needs enrol_speaker and test_speaker columns (or a speaker column); "
            "--test trial-z runs the z-test that assumes independent trials",
        ),
        (["--group", "gender", "--threshold-rule", "best"], "error: threshold rule 'best': valid: eer, fixed:X, far:X"),
    ],
)
def test_cli_fairness_errors(tmp_path: Path, args: list[str], message: str) -> None:
    ev = _write(tmp_path, "eval.csv", table())
    res = CliRunner().invoke(app, ["scores", "fairness", str(ev), *args])
    assert res.exit_code == 1
    assert res.stderr.strip() == message.format(ev=ev)


def test_score_file_errors(tmp_path: Path) -> None:
    bad = _write(tmp_path, "bad.csv", pd.DataFrame({"score": [0.1, "x"], "label": [1, 0], "gender": ["f", "m"]}))
    res = CliRunner().invoke(app, ["scores", "fairness", str(bad), "--group", "gender", "--threshold-rule", "fixed:0"])
    assert res.stderr.strip() == f"error: {bad}: line 3: score 'x' is not a finite number"
    bad = _write(tmp_path, "bad2.csv", pd.DataFrame({"score": [0.1], "label": ["maybe"], "gender": ["f"]}))
    res = CliRunner().invoke(app, ["scores", "fairness", str(bad), "--group", "gender", "--threshold-rule", "fixed:0"])
    assert (
        res.stderr.strip()
        == f"error: {bad}: line 2: label 'maybe' is not one of 1/0, true/false, target/nontarget, bonafide/spoof (also genuine/real, fake)"
    )


def test_group_labels_match_the_value_by_value_rule() -> None:
    """pair_groups/single_groups map each distinct value once; the result equals the rule applied
    to every trial: None, NaN and "" are missing, other values compared as text (1 == "1")."""
    values = ["f", "m", None, float("nan"), "", 1, "1", "m", "f", 2.5]
    rng = derive_rng("test", "group-labels")
    enrol = [values[i] for i in rng.integers(0, len(values), size=400)]
    test = [values[i] for i in rng.integers(0, len(values), size=400)]

    def gone(v: object) -> bool:
        return v is None or (isinstance(v, float) and v != v) or v == ""

    want = [
        "missing" if gone(a) or gone(b) else ("mixed" if str(a) != str(b) else str(a))
        for a, b in zip(enrol, test, strict=True)
    ]
    assert pair_groups(enrol, test).tolist() == want
    assert single_groups(enrol).tolist() == ["missing" if gone(v) else str(v) for v in enrol]
    with pytest.raises(ValueError):
        pair_groups(["f"], ["f", "m"])
