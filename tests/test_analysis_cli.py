"""``interbias analyze`` / ``report`` / ``compare`` end to end on a tiny run (mfcc-stats)."""

from __future__ import annotations

import base64
import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
from conftest import tiny_experiment
from typer.testing import CliRunner

from interbias.cli import app
from interbias.metrics.registry import results_columns
from interbias.run.conductor import RunOptions, run
from interbias.utils.paths import slug

runner = CliRunner()


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory, tiny_corpus, session_cache) -> Path:
    tmp = tmp_path_factory.mktemp("analysis_run")
    # Own embedding cache (the built corpus is shared): other tests count what they embed.
    cache = tmp / "cache"
    cache.mkdir()
    (cache / "corpora").symlink_to(session_cache / "corpora", target_is_directory=True)
    opts = RunOptions(
        experiment=str(tiny_experiment(tmp)),
        encoders=["mfcc-stats"],
        out=tmp / "results",
        cache_dir=cache,
        quiet=True,
        command=["t"],
    )
    return run(opts).run_dir


def test_analyze_writes_every_table_with_intervals(tiny_run: Path, tmp_path: Path) -> None:
    args = ["analyze", str(tiny_run / "results.csv"), "--bootstrap", "200", "--permutations", "30", "--quiet"]
    res = runner.invoke(app, [*args, "--out", str(tmp_path / "a")])
    assert res.exit_code == 0, res.output
    out = tmp_path / "a"
    for name in ("contrasts", "summary", "per_model", "gaps", "additivity", "macro", "cell_ci", "gap_summary"):
        assert (out / f"{name}.csv").is_file(), name
    flat = " ".join(res.output.split())  # lines are wrapped to the terminal's width
    assert "intervals of effects (findings, contrasts.csv, gaps.csv): 95% corrected-SE t interval" in flat
    assert (
        "intervals of cells and means: 95% percentile intervals from B=200 speaker-level bootstrap replicates" in flat
    )
    c = pd.read_csv(out / "contrasts.csv")
    assert len(c) == 1 and c.ie_lo.iloc[0] <= c.ie.iloc[0] <= c.ie_hi.iloc[0]
    assert (c.n_boot.iloc[0], c.boot_unit.iloc[0]) == (200, "speaker")
    g = pd.read_csv(out / "gaps.csv")
    assert list(g.condition) == ["noise=clean", "noise=n10"] and g.p_perm.between(1 / 31, 1).all()
    assert (g.perm_unit == "enrol speaker").all() and (g.n_perm_valid > 0).all()
    cells = pd.read_csv(out / "cell_ci.csv")
    results = pd.read_csv(tiny_run / "results.csv")
    assert cells.value.tolist() == pytest.approx(results.eer.tolist())
    assert (cells.lo <= cells.value + 1e-12).all() and (cells.value <= cells.hi + 1e-12).all()
    record = json.loads((out / "bootstrap.json").read_text())
    assert record["n_boot"] == 200 and record["unit"] == "speaker" and len(record["replicate_seeds"]) == 200
    assert [len(b) for b in record["speaker_blocks"]] == [6, 6]  # one block per gender
    # same seed, same intervals; another seed, other intervals
    runner.invoke(app, [*args, "--out", str(tmp_path / "b")])
    assert (tmp_path / "b" / "cell_ci.csv").read_bytes() == (out / "cell_ci.csv").read_bytes()
    runner.invoke(app, [*args, "--seed", "1", "--out", str(tmp_path / "c")])
    assert (tmp_path / "c" / "cell_ci.csv").read_bytes() != (out / "cell_ci.csv").read_bytes()


def test_bootstrap_without_scores_says_so(tiny_run: Path, tmp_path: Path) -> None:
    shutil.copy(tiny_run / "results.csv", tmp_path / "results.csv")
    res = runner.invoke(app, ["analyze", str(tmp_path / "results.csv"), "--quiet"])
    assert res.exit_code == 0 and (tmp_path / "gaps.csv").is_file() and not (tmp_path / "cell_ci.csv").exists()
    res = runner.invoke(app, ["analyze", str(tmp_path / "results.csv"), "--bootstrap", "200"])
    assert res.exit_code == 1
    assert res.output.strip() == (
        f"error: bootstrap CIs need per-trial scores: no trials.parquet and scores/ beside the results in {tmp_path} "
        "(a run directory written by `interbias run` has them)"
    )


def test_scores_that_do_not_reproduce_results_are_refused(tiny_run: Path, tmp_path: Path) -> None:
    copy = tmp_path / "run"
    shutil.copytree(tiny_run, copy)
    row = pd.read_csv(copy / "results.csv").iloc[0]
    path = copy / "scores" / slug(row.model) / f"{slug(row.cell)}.parquet"
    scores = pd.read_parquet(path)
    scores["score"] = -scores["score"]
    scores.to_parquet(path)
    res = runner.invoke(app, ["analyze", str(copy), "--bootstrap", "200", "--quiet"])
    assert res.exit_code == 1
    assert re.match(rf"error: scores of mfcc-stats / {re.escape(row.cell)} give eer \S+, results.csv says", res.output)


def test_report_html_is_self_contained_with_all_figures(tiny_run: Path, tmp_path: Path) -> None:
    res = runner.invoke(app, ["report", str(tiny_run), "--out", str(tmp_path), "--bootstrap", "200"])
    assert res.exit_code == 0, res.output
    assert "7 figure(s); not drawn: 0" in res.output  # one model: one IE heatmap; the forest plot
    page = (tmp_path / "report.html").read_text()
    figures = re.findall(r'<figure id="([^"]+)">.*?src="data:image/png;base64,([^"]+)"', page)
    ie = f"ie_{slug('mfcc-stats')}"
    damage = next(f for f, _ in figures if f.startswith("interaction_"))  # the paper's interaction figure
    assert [f for f, _ in figures] == ["forest", "det", "by_condition", ie, "gap_snr_T01", "prediction_vs_ie", damage]
    for _, data in figures:
        assert base64.b64decode(data)[:8] == b"\x89PNG\r\n\x1a\n"
    assert not re.search(r'src="(?!data:)', page) and not re.search(r'href="(?!#)', page)  # nothing external
    for needle in ("Provenance", "Trial list sha256", "Failures: 0 failed", "Overlap warnings", "B=200 speaker-level"):
        assert needle in page
    md = (tmp_path / "report.md").read_text()
    for name in re.findall(r"\]\((report_figures/[^)]+\.png)\)", md):
        assert (tmp_path / name).read_bytes()[:4] == b"\x89PNG"
    assert md.count("](report_figures/") == 7


def test_report_lists_figures_it_cannot_draw(tiny_run: Path, tmp_path: Path) -> None:
    shutil.copy(tiny_run / "results.csv", tmp_path / "results.csv")
    res = runner.invoke(app, ["report", str(tmp_path)])
    assert res.exit_code == 0, res.output
    flat = " ".join(res.output.split())  # lines wrap to the terminal's width
    assert "not drawn: DET curves: need per-trial scores" in flat
    assert "not drawn: gap vs SNR (T01): no level of noise has one operator with an snr_db parameter" in flat
    assert "No intervals: the run directory has no per-trial scores." in (tmp_path / "report.md").read_text()


def test_matplotlib_uses_agg() -> None:
    import matplotlib

    import interbias.analysis.reporting.plots  # noqa: F401

    assert matplotlib.get_backend().lower() == "agg"


def test_compare_identical_perturbed_and_missing(tiny_run: Path, tmp_path: Path) -> None:
    base = tiny_run / "results.csv"
    res = runner.invoke(app, ["runs", "compare", str(base), str(base)])
    assert res.exit_code == 0, res.output
    assert res.output.strip().endswith(
        f"4 row(s) matched on {', '.join(results_columns())}; 0 value(s) moved by more than 0; 0 row(s) missing"
    )
    frame = pd.read_csv(base)
    moved = frame.copy()
    moved.loc[1, "eer"] += 0.02
    moved.to_csv(tmp_path / "moved.csv", index=False)
    res = runner.invoke(app, ["runs", "compare", str(base), str(tmp_path / "moved.csv"), "--tolerance", "0.01"])
    assert res.exit_code == 1 and "1 value(s) moved by more than 0.01" in res.output
    assert (
        f"moved: T01 / {frame.cell[1]} / mfcc-stats: eer {frame.eer[1]:.6f} -> {frame.eer[1] + 0.02:.6f}" in res.output
    )
    res = runner.invoke(app, ["runs", "compare", str(base), str(tmp_path / "moved.csv"), "--tolerance", "0.03"])
    assert res.exit_code == 0
    frame.iloc[:-1].to_csv(tmp_path / "short.csv", index=False)
    res = runner.invoke(app, ["runs", "compare", str(base), str(tmp_path / "short.csv"), "--tolerance", "0.5"])
    assert res.exit_code == 1
    assert f"missing: only in base: T01 / {frame.cell.iloc[-1]} / mfcc-stats" in res.output
    res = runner.invoke(app, ["runs", "compare", str(base), str(tmp_path / "nope.csv")])
    assert res.exit_code == 1 and "does not exist" in res.output


def test_report_includes_a_geometry_audit(tiny_run: Path, tmp_path: Path) -> None:
    from test_analysis_geometry_pipeline import table

    geo_dir = tmp_path / "geo"
    res = runner.invoke(app, ["audit", "geometry", "--embeddings", str(table(tmp_path)), "--out", str(geo_dir),
                              "--groups", "gender", "--permutations", "20"])  # fmt: skip
    assert res.exit_code == 0, res.output
    out = tmp_path / "rep"
    res = runner.invoke(
        app, ["report", str(tiny_run), "--out", str(out), "--bootstrap", "0", "--geometry", str(geo_dir)]
    )
    assert res.exit_code == 0, res.output
    page = (out / "report.html").read_text()
    assert "Geometry audit (TRIAD/ORCA)" in page and "F_sem" in page
    assert '<figure id="geometry">' in page
    res = runner.invoke(app, ["report", str(tiny_run), "--out", str(out), "--geometry", str(tmp_path)])
    assert res.exit_code == 1
    assert (
        res.output
        == f"error: --geometry {tmp_path}: no geometry.csv there (run interbias audit geometry --out {tmp_path})\n"
    )


def test_a_bootstrap_below_the_minimum_is_refused(tiny_run: Path, tmp_path: Path) -> None:
    """--bootstrap 1 used to print a '95 % interval' excluding its own estimate."""
    for cmd in ("analyze", "report"):
        res = runner.invoke(app, [cmd, str(tiny_run), "--bootstrap", "1", "--out", str(tmp_path)])
        assert res.exit_code == 1
        assert res.output.strip() == (
            "error: --bootstrap 1: the corrected design needs at least 200 replicates (1000 is usual); "
            "0 skips the bootstrap"
        )
        res = runner.invoke(app, [cmd, str(tiny_run), "--bootstrap", "49", "--bootstrap-design", "speaker"])
        assert res.exit_code == 1
        assert res.output.strip() == (
            "error: --bootstrap 49: an interval needs at least 50 replicates (1000 is usual); 0 skips the bootstrap"
        )
