"""One interval per effect: findings.csv, contrasts.csv, gaps.csv, report.md and the LaTeX
tables show the same pair of numbers for every interaction and gap (the findings' corrected-SE
t interval), with the method named; the plain percentile interval stays beside it, named."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from synthetic_runs import gender_noise_run
from typer.testing import CliRunner

from interbias.analysis.stats.intervals import PERCENTILE, method_name
from interbias.cli import app

MEANS = {
    "big": {("female", "clean"): 3.0, ("female", "n10"): 2.5, ("male", "clean"): 0.8, ("male", "n10"): 0.3},
    "flat": {("female", "clean"): 1.5, ("female", "n10"): 1.5, ("male", "clean"): 1.5, ("male", "n10"): 1.2},
}


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    run = gender_noise_run(tmp_path_factory.mktemp("one") / "run", MEANS, n=12, m=4)
    for args in (
        ["analyze", str(run), "--bootstrap", "200", "-q"],
        ["report", str(run), "--bootstrap", "200", "--latex"],
    ):
        done = CliRunner().invoke(app, args)
        assert done.exit_code == 0, done.output
    return run


def _pairs(folder: Path) -> dict[tuple[str, str], tuple[float, float]]:
    f = pd.read_csv(folder / "findings.csv")
    f = f[f["kind"].isin(["interaction", "gap"])]
    return {(r.model, r.effect): (r.lo, r.hi) for r in f.itertuples()}


def test_contrasts_and_gaps_csv_carry_the_findings_interval(folder: Path) -> None:
    pairs = _pairs(folder)
    c = pd.read_csv(folder / "contrasts.csv", keep_default_na=False, na_values=[""])
    g = pd.read_csv(folder / "gaps.csv")
    seen = 0
    for r in c.itertuples():
        levels = ", ".join(str(v) for v in (r.level_a, r.level_b, r.level_c) if isinstance(v, str) and v)
        lo, hi = pairs[(r.model, f"IE {r.contrast} at {levels}")]
        assert (r.ie_lo, r.ie_hi) == pytest.approx((lo, hi), abs=1e-12)
        seen += 1
    for r in g.itertuples():
        lo, hi = pairs[(r.model, f"gap {r.group_factor} {r.group_level} − {r.group_ref} at {r.condition}")]
        assert (r.gap_lo, r.gap_hi) == pytest.approx((lo, hi), abs=1e-12)
        seen += 1
    assert seen == len(pairs) == 6
    assert set(c["interval_method"]) == set(g["interval_method"]) == {method_name("corrected", "wald", "95%")}
    assert method_name("corrected", "wald", "95%") == "95% corrected-SE t interval"
    # the plain percentile interval is kept, named, and is a different pair
    assert f"ie_lo{PERCENTILE}" in c.columns and f"gap_hi{PERCENTILE}" in g.columns
    assert (g[f"gap_lo{PERCENTILE}"] - g["gap_lo"]).abs().max() > 1e-6


def test_report_and_latex_show_the_same_pair(folder: Path) -> None:
    md = (folder / "report.md").read_text()
    gaps_tex = (folder / "tables" / "gaps.tex").read_text()
    findings_tex = (folder / "tables" / "findings.tex").read_text()
    g = pd.read_csv(folder / "gaps.csv")
    f = pd.read_csv(folder / "findings.csv").set_index(["model", "effect"])
    for r in g.itertuples():
        row = f.loc[(r.model, f"gap {r.group_factor} {r.group_level} − {r.group_ref} at {r.condition}")]
        assert (r.p_adjusted, r.resolved) == (pytest.approx(row.p_adjusted, abs=1e-12), row.resolved)
        cells = [r.model, r.group_level, r.condition, f"{r.gap:.3f}", f"{r.gap_lo:.3f}", f"{r.gap_hi:.3f}"]
        verdict = f"{r.p_adjusted:.3f} | {'yes' if r.resolved else 'no'}"
        assert f"| {' | '.join(cells)} | {verdict} |" in md
        gap = f"${r.gap:.3f}$ [${r.gap_lo:.3f}$, ${r.gap_hi:.3f}$]"
        assert f"{r.model} & {r.group_level} & {r.condition} & {gap}" in gaps_tex
        assert f"[${r.gap_lo:.3f}$, ${r.gap_hi:.3f}$]" in findings_tex
    # no percentile interval of |gap| (it excludes 0 whenever the gap is not exactly 0) in the report
    assert "mean_abs_gap_lo" not in md and "abs_gap_lo" not in md
    for lo, hi in _pairs(folder).values():
        assert f"[${lo:.3f}$, ${hi:.3f}$]" in findings_tex
    assert "95\\% corrected-SE t interval" in gaps_tex and "95\\% corrected-SE t interval" in findings_tex
    assert md.count("Brackets: 95% corrected-SE t interval") == 2  # one IE heatmap caption per model
