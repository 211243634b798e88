"""Encoder card on constructed runs with hand-known EER and minDCF (see synthetic_runs.pattern_run)."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest
from synthetic_runs import pattern_run
from typer.testing import CliRunner

from interbias.analysis.across.encoder_page import build_page, damaging
from interbias.analysis.across.runs import load
from interbias.analysis.suite import Options
from interbias.cli import app
from interbias.metrics import verification as metrics
from interbias.utils.paths import slug

RUN_JSON = {"run_id": "r1", "encoders": [{"label": "CAM++", "source": "packaged", "checkpoint_sha256": "abc"}]}


@pytest.fixture
def runs(tmp_path: Path) -> list[Path]:
    # CAM++: clean perfect (EER 0), n10 third (EER 1/3): experiment mean 1/6, damage of n10 +1/3.
    models = {"CAM++": {"clean": "perfect", "n10": "third"}, "other": {"clean": "perfect", "n10": "perfect"}}
    return [
        pattern_run(tmp_path / "r1", 4, models, run_json=RUN_JSON),
        pattern_run(tmp_path / "r2", 4, {"other": {"clean": "third", "n10": "third"}}),
    ]


def _by_metric(runs: list[Path]) -> dict:
    return {m: load(runs, Options(m, 40, 0)) for m in ("eer", "min_dcf")}


def test_third_pattern_min_dcf_by_hand() -> None:
    import numpy as np

    scores, labels = np.array([1.0, 1.0, 0.2, 0.5, 0.0, 0.0]), np.array([True] * 3 + [False] * 3)
    assert metrics.min_dcf(scores, labels) == pytest.approx(1 / 3)  # P_miss 1/3 at P_fa 0


def test_card_numbers_and_missing_pieces(runs: list[Path]) -> None:
    card = build_page("CAM++", _by_metric(runs))
    blocks = card.report.blocks
    tables = [p[0] for k, p in blocks if k == "table"]  # (frame, collapsed summary)
    macro = next(t for t in tables if "min_dcf" in t.columns).set_index("experiment")
    sixth = "0.1667 [0.1667, 0.1667]"
    assert macro.loc["S01", "eer"] == sixth and macro.loc["S01", "min_dcf"] == sixth + " (bias +0.0000)"
    assert macro.loc["overall (mean over experiments)", "eer"] == sixth
    ident = tables[0].iloc[0]
    assert ident["checkpoint_sha256"] == f"ckpt-{slug('CAM++')}" and ident["source"] == "packaged"
    assert ident["overlap_warnings"] == "none"
    text = "\n".join(p for k, p in blocks if k == "p")
    assert "Trained on:" in text  # the registered card of CAM++
    missing = "\n".join(card.missing)
    assert f"run {runs[1]}: CAM++ is not in it (its encoders: other)" in missing
    for piece in ("fairness: no run given", "spoofing: no run given", "geometry: no run given"):
        assert piece in missing
    # 12 non-target trials per cell: far too few for p_target 0.01 (one false alarm costs 99/12)
    assert (
        "minDCF at p_target 0.01: the run is too small for this operating point (12 non-target trials in its "
        "smallest cell, n·p = 0.12 < 10; one false alarm costs 8.25 of normalised DCF); it supports p_target ≥ 0.833."
    ) in text
    assert "0 of 1 tested effect(s) resolved: adjusted p < alpha (holm" in text  # n10 − clean: no spread


def test_damaging_conditions_by_hand(runs: list[Path]) -> None:
    (r1,) = [r for r in load(runs[:1], Options(n_boot=30))]
    d = damaging("CAM++", r1)
    assert d[["cell", "against"]].values.tolist() == [["noise=n10", "noise=clean"]]
    assert d[["increase", "lo", "hi"]].iloc[0].tolist() == pytest.approx([1 / 3, 1 / 3, 1 / 3])


def test_card_cli_writes_markdown_and_self_contained_html(runs: list[Path], tmp_path: Path) -> None:
    out = tmp_path / "cards"
    res = CliRunner().invoke(app, ["runs", "card", "CAM++", *map(str, runs), "--out", str(out), "--bootstrap", "20"])
    assert res.exit_code == 0, res.output
    assert "missing: run" in res.output
    md = (
        (out / "card_cam.md").read_text() if (out / "card_cam.md").exists() else next(out.glob("card_*.md")).read_text()
    )
    assert md.startswith("# Encoder card: CAM++") and "## Missing" in md
    page = (out / "card_CAM++.html").read_text()  # the label as written: a name a person can guess
    parser = HTMLParser()
    parser.feed(page)
    assert "<table" in page and 'src="http' not in page and "<script" not in page
    bad = CliRunner().invoke(app, ["runs", "card", "NoSuch", str(runs[0]), "--out", str(out), "--bootstrap", "5"])
    assert bad.exit_code == 1 and bad.output.startswith("error: NoSuch is in none of the runs given")
    assert pd.read_csv(runs[0] / "results.csv").model.tolist().count("CAM++") == 2


def test_reflected_interval_contains_its_estimate_where_the_percentile_one_does_not() -> None:
    import numpy as np

    from interbias.analysis.stats.bootstrap import bootstrap_bias, percentile_ci, reflected_ci
    from interbias.utils.seeding import derive_rng

    reps = 0.80 + derive_rng("test-card", "dcf").normal(0, 0.03, 500)  # replicates above the estimate
    est = 0.70
    lo, hi, _ = percentile_ci(reps)
    assert lo > est  # the percentile interval misses its own estimate
    rlo, rhi = reflected_ci(est, reps)
    c = float(np.median(reps))
    assert rlo <= est <= rhi
    assert (float(rlo), float(rhi)) == pytest.approx((est - (float(hi) - c), est + (c - float(lo))))
    assert float(bootstrap_bias(est, reps)) == pytest.approx(float(reps.mean()) - est)
    top = reflected_ci(0.99, reps)  # clipped to [0, 1]
    assert float(top[1]) == 1.0


def test_operating_point_support_by_hand() -> None:
    from interbias.metrics import operating_points as op

    assert op.false_alarm_cost(288) == pytest.approx(0.99 / 2.88)  # 0.34: one false alarm at p 0.01
    assert not op.supported(999) and op.supported(1000)  # n·p >= 10
    assert op.smallest_prior(288) == pytest.approx(10 / 288)
    assert op.too_small_line(1000) is None and op.too_small_line(0) is None
    assert "it supports p_target ≥ 0.0347." in op.too_small_line(288)
