"""ASVspoof 5 Track 1 metrics (min DCF, actDCF, Cllr, EER) against a restatement of the
evaluation package's formulas on score sets with ties, the --by breakdowns, and bad input."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from interbias.analysis.security.cm_track1 import breakdown
from interbias.cli import app
from interbias.metrics.spoof import Track1Cost, track1_metrics
from interbias.utils.errors import MetricError
from interbias.utils.seeding import derive_rng


def restated(bona, spoof, p=0.05, c_miss=1.0, c_fa=10.0):
    """The package's Track 1 formulas, restated with plain Python loops: walk the scores in
    ascending order (bona fide first at equal scores), one operating point per score."""
    nb, ns = len(bona), len(spoof)
    points = [(0.0, 1.0)]
    rb = rs = 0
    for _, cls in sorted([(float(x), 0) for x in bona] + [(float(x), 1) for x in spoof]):
        rb, rs = rb + (cls == 0), rs + (cls == 1)
        points.append((rb / nb, (ns - rs) / ns))
    norm = min(c_miss * (1 - p), c_fa * p)
    min_dcf = min((c_miss * (1 - p) * m + c_fa * p * f) / norm for m, f in points)
    best = min(range(len(points)), key=lambda i: (abs(points[i][0] - points[i][1]), i))
    t = math.log(c_fa * p / (c_miss * (1 - p)))
    act = (c_miss * (1 - p) * sum(x < t for x in bona) / nb + c_fa * p * sum(x >= t for x in spoof) / ns) / norm
    cllr = (
        0.5
        * (sum(math.log1p(math.exp(-x)) for x in bona) / nb + sum(math.log1p(math.exp(x)) for x in spoof) / ns)
        / math.log(2)
    )
    return {"min_dcf": min_dcf, "act_dcf": act, "cllr": cllr, "eer": sum(points[best]) / 2}


def tie_aware_min_dcf(bona, spoof, p=0.05, c_miss=1.0, c_fa=10.0):
    """Minimum over real thresholds (accept score >= t at every distinct score, and reject all)."""
    norm = min(c_miss * (1 - p), c_fa * p)
    ts = [*sorted(set(np.concatenate([bona, spoof]).tolist())), math.inf]
    return min((c_miss * (1 - p) * np.mean(bona < t) + c_fa * p * np.mean(spoof >= t)) / norm for t in ts)


def _tied_set(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = derive_rng("track1", seed)
    nb, ns = int(rng.integers(3, 40)), int(rng.integers(3, 60))
    return rng.integers(-6, 9, nb) / 2.0, rng.integers(-10, 5, ns) / 2.0  # half-unit grid: many ties


@pytest.mark.parametrize("seed", range(12))
def test_track1_equals_the_restated_package_formulas_with_ties(seed):
    bona, spoof = _tied_set(seed)
    assert len(set(bona) & set(spoof)) > 0  # ties across the classes
    got = track1_metrics(bona, spoof)
    want = restated(bona, spoof)
    for k, v in want.items():
        assert got[k] == pytest.approx(v, abs=1e-12), k
    assert got["min_dcf"] == pytest.approx(tie_aware_min_dcf(bona, spoof), abs=1e-12)  # ties cannot lower it
    assert got["act_dcf_threshold"] == pytest.approx(-math.log(1.9))


def test_other_cost_models_and_hand_values():
    bona, spoof = np.array([2.0, 1.0, -1.0]), np.array([-2.0, 0.0, 1.0])
    got = track1_metrics(bona, spoof, Track1Cost(0.2, 2.0, 3.0))
    want = restated(bona, spoof, 0.2, 2.0, 3.0)
    assert all(got[k] == pytest.approx(v, abs=1e-12) for k, v in want.items())
    # by hand, default cost: threshold -log 1.9 = -0.642; misses: -1.0 (1 of 3); accepted spoofs: 0, 1 (2 of 3)
    d = track1_metrics(bona, spoof)
    assert d["act_dcf"] == pytest.approx((0.95 / 3 + 0.5 * 2 / 3) / 0.5)
    with pytest.raises(MetricError, match="need both classes"):
        track1_metrics(bona, [])


def _frame(seed: int) -> pd.DataFrame:
    bona, spoof = _tied_set(seed)
    rng = derive_rng("track1-frame", seed)
    return pd.DataFrame(
        {
            "score": np.concatenate([bona, spoof]),
            "label": np.r_[np.ones(len(bona), int), np.zeros(len(spoof), int)],
            "attack": ["bonafide"] * len(bona) + [f"A{int(a):02d}" for a in rng.integers(1, 4, len(spoof))],
            "codec": [f"C{int(c)}" for c in rng.integers(0, 3, len(bona) + len(spoof))],
        }
    )


@pytest.mark.parametrize("seed", range(3))
def test_breakdown_by_attack_pairs_every_bona_fide_and_by_codec_splits_both(seed):
    f = _frame(seed)
    bona = f[f.label == 1]
    for row in breakdown(f, "attack", Track1Cost()):
        spoof = f[(f.label == 0) & (f.attack == row["value"])]
        assert row["n_bonafide"] == len(bona) and row["n_spoof"] == len(spoof)
        want = restated(bona.score.to_numpy(), spoof.score.to_numpy())
        assert all(row[k] == pytest.approx(v, abs=1e-12) for k, v in want.items())
    rows = breakdown(f, "codec", Track1Cost())
    assert [r["value"] for r in rows] == sorted(set(f.codec))
    for row in rows:
        g = f[f.codec == row["value"]]
        b, sp = g[g.label == 1].score.to_numpy(), g[g.label == 0].score.to_numpy()
        assert (row["n_bonafide"], row["n_spoof"]) == (len(b), len(sp))
        if not len(b) or not len(sp):
            assert math.isnan(row["min_dcf"])
            continue
        want = restated(b, sp)
        assert all(row[k] == pytest.approx(v, abs=1e-12) for k, v in want.items())


def test_a_group_without_one_class_has_counts_and_empty_metrics():
    f = pd.DataFrame({"score": [1.0, 0.0, 2.0, -1.0], "label": [1, 0, 1, 0], "codec": ["a", "a", "b", "a"]})
    rows = {r["value"]: r for r in breakdown(f, "codec", Track1Cost())}
    assert rows["b"]["n_bonafide"] == 1 and rows["b"]["n_spoof"] == 0 and math.isnan(rows["b"]["min_dcf"])


def test_cli_tables_json_and_one_line_errors(tmp_path):
    f = _frame(0)
    f.to_csv(tmp_path / "s.csv", index=False)
    run = CliRunner().invoke
    res = run(
        app, ["scores", "cm-eval", "track1", str(tmp_path / "s.csv"), "--by", "attack", "--by", "codec", "--json"]
    )
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    want = restated(f[f.label == 1].score.to_numpy(), f[f.label == 0].score.to_numpy())
    assert all(doc["pooled"][k] == pytest.approx(v, abs=1e-12) for k, v in want.items())
    assert set(doc["tables"]) == {"attack", "codec"} and doc["cost"] == {"p_spoof": 0.05, "c_miss": 1.0, "c_fa": 10.0}
    text = run(app, ["scores", "cm-eval", "track1", str(tmp_path / "s.csv"), "--by", "attack"])
    assert text.exit_code == 0 and "min DCF" in text.output and "by attack" in text.output
    bad = run(app, ["scores", "cm-eval", "track1", str(tmp_path / "s.csv"), "--by", "gender"])
    assert bad.exit_code == 1 and len(bad.output.strip().splitlines()) == 1
    assert "--by 'gender'" in bad.output and "no such column" in bad.output
    f.drop(columns="score").to_csv(tmp_path / "noscore.csv", index=False)
    bad = run(app, ["scores", "cm-eval", "track1", str(tmp_path / "noscore.csv")])
    assert bad.exit_code == 1 and len(bad.output.strip().splitlines()) == 1 and "missing column(s) score" in bad.output
    bad = run(app, ["scores", "cm-eval", "track1", str(tmp_path / "s.csv"), "--score-column", "log_odds"])
    assert bad.exit_code == 1 and "--score-column 'log_odds'" in bad.output


def test_cm_eval_wdsr_from_numbers_and_dsr_json(tmp_path):
    """ADD 2023 Table 5, first row (per cent → rates): WDSR 44.97 % from 37.91, 49.60, 49.80."""
    run = CliRunner().invoke
    (tmp_path / "r1.json").write_text(json.dumps({"dsr": 0.3791, "wrong": [1]}))
    res = run(
        app,
        [
            "scores",
            "cm-eval",
            "wdsr",
            "--r1",
            str(tmp_path / "r1.json"),
            "--r2",
            "0.4960",
            "--r2-baseline",
            "0.4980",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["wdsr"] == pytest.approx(0.4 * 0.3791 + 0.6 * (0.4 * 0.4980 + 0.6 * 0.4960), abs=1e-15)
    assert out["wdsr"] == pytest.approx(0.4497, abs=1e-4)
    for args, match in (
        (["--r1", "1.5"], "a DSR is a rate in [0, 1]"),
        (["--r1", str(tmp_path / "nope.json")], "neither a number nor a file"),
        (["--r1", str(tmp_path / "s.txt")], "not the JSON of `cm-eval dsr --json`"),
    ):
        (tmp_path / "s.txt").write_text("x")
        bad = run(app, ["scores", "cm-eval", "wdsr", *args, "--r2", "0.5", "--r2-baseline", "0.5"])
        assert bad.exit_code == 1 and len(bad.output.strip().splitlines()) == 1 and match in bad.output, bad.output
