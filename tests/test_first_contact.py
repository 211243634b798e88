"""What a new user meets first: the error of an experiment whose corpus is missing, the
catalogue table, bare ``interbias``, help texts and README, and the outputs reference page."""

from __future__ import annotations

import io
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
import typer
from conftest import tiny_experiment
from test_utils_progress import TickingClock
from typer.testing import CliRunner

from interbias.analysis.security.spoofing import SPOOF_COLUMNS
from interbias.cli import app
from interbias.experiments.decision_spec import DEFAULT_POINT
from interbias.run.calibrate import calibration_columns
from interbias.run.conductor import RunOptions, run
from interbias.run.results import COLUMNS
from interbias.utils.progress import Reporter

REPO = Path(__file__).resolve().parent.parent
CONDITIONS = REPO / "conditions"
OUTPUTS_DOC = REPO / "docs" / "outputs.md"
runner = CliRunner()


@pytest.fixture()
def no_corpora(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("INTERBIAS_CORPORA", str(tmp_path / "corpora"))  # no corpus on this machine
    return tmp_path


def test_e14_without_ravdess_names_the_data_and_ends_with_the_command_that_runs(no_corpora: Path) -> None:
    res = runner.invoke(app, ["run", "E14", "--encoders", "mfcc-stats", "--out", str(no_corpora / "out")])
    assert res.exit_code == 1
    lines = res.output.strip().splitlines()
    assert len(lines) == 1
    line = lines[0]
    assert line.startswith(
        f"error: E14 cannot run here: corpus 'ravdess' not found at {no_corpora / 'corpora' / 'ravdess'} "
        "(pass --corpus-root DIR or set INTERBIAS_CORPORA). It needs: RAVDESS speech release"
    )
    assert line.endswith(". Runs here: interbias run E14 --corpus synthetic")
    assert not (no_corpora / "out").exists()


def test_the_error_repeats_what_the_user_typed(no_corpora: Path) -> None:
    path = str(CONDITIONS / "E03.yaml")
    res = runner.invoke(app, ["run", path, "--out", str(no_corpora / "out")])
    assert res.exit_code == 1
    assert res.output.strip().endswith(f"Runs here: interbias run {path} --corpus synthetic")


def test_list_is_one_table_that_fits_in_40_lines(no_corpora: Path, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    res = runner.invoke(app, ["list"])
    assert res.exit_code == 0, res.output
    lines = res.output.rstrip("\n").splitlines()
    names = sorted(p.stem for p in CONDITIONS.glob("*.yaml"))
    assert len(names) == 25 and len(lines) <= 40
    assert lines[0].split()[:4] == ["exp", "title", "use", "cells"]
    rows = {ln.split()[0]: ln for ln in lines[1:] if re.match(r"E\d\d ", ln)}
    assert sorted(rows) == names  # one line per experiment
    assert re.search(r"Emotion × noise\s+contrast\s+80  ravdess ✗data · synthetic\(42\) ✓$", rows["E14"])
    assert rows["E02"].endswith("torgo ✗data")
    assert rows["E10"].endswith("manifest ✗manifest · synthetic(2) ✓")
    legend = "\n".join(lines[len(names) + 1 :])
    assert (
        "✗data     the corpus is not here (--corpus-root DIR or INTERBIAS_CORPORA)" in legend and "✗manifest" in legend
    )
    assert "✗ops" not in legend  # only the keys that occur
    assert "`interbias run E16 --corpus synthetic`" in legend
    monkeypatch.setenv("COLUMNS", "80")  # narrow: one cell of where it runs, titles wrapped at words
    narrow = runner.invoke(app, ["list"]).output.rstrip("\n").splitlines()
    assert max(map(len, narrow)) <= 80 and len(narrow) <= 40, narrow
    rows = {ln.split()[0]: ln for ln in narrow if re.match(r"E\d\d ", ln)}
    assert sorted(rows) == names
    assert rows["E14"].endswith("contrast        80  synthetic(42) ✓") and rows["E02"].endswith("torgo ✗data")
    at = next(i for i, ln in enumerate(narrow) if ln.startswith("E25 "))  # a long title: the rest under it
    assert "Gender × noise with linear vs" in rows["E25"] and narrow[at + 1].strip() == "quality-aware calibration"


def test_bare_interbias_shows_the_help_and_where_to_start() -> None:
    res = runner.invoke(app, [])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "Usage:" in text and "run" in text and "list" in text
    assert "Start here: `make demo`" in text and "`interbias run E16 --corpus synthetic`" in text


def _help_texts() -> dict[str, str]:
    """``interbias --help`` and every command's and sub-command's ``--help``."""
    out = {"interbias": runner.invoke(app, ["--help"]).output}
    root = typer.main.get_command(app)
    for name, cmd in root.commands.items():  # type: ignore[attr-defined]
        out[name] = runner.invoke(app, [name, "--help"]).output
        if hasattr(cmd, "commands"):  # a group: cm-eval, corpus
            for sub in cmd.commands:
                out[f"{name} {sub}"] = runner.invoke(app, [name, sub, "--help"]).output
    return out


FORBIDDEN = re.compile(r"DESIGN\.md|\bseed 0\d\d\b|seed paper", re.IGNORECASE)


def test_readme_help_texts_and_sources_name_papers_not_seed_files() -> None:
    helps = _help_texts()
    assert len(helps) > 15 and all("Usage:" in h for h in helps.values())
    for name, text in {**helps, "README.md": (REPO / "README.md").read_text(encoding="utf-8")}.items():
        assert not FORBIDDEN.search(" ".join(text.split())), (name, FORBIDDEN.search(" ".join(text.split())))
    for path in sorted((REPO / "interbias").rglob("*.py")):  # help= strings, docstrings, report headings
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"DESIGN\.md|\bseed 0\d\d\b", text), path
    for path in sorted((REPO / "conditions").glob("*.yaml")):  # descriptions `interbias list -v` shows
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"DESIGN\.md|\bseed 0\d\d\b|\bseed paper", text), path
    assert "(docs/outputs.md)" in (REPO / "README.md").read_text(encoding="utf-8")


def _documented(name: str, doc: str) -> bool:
    return f"`{name}`" in doc


def test_a_real_run_every_column_documented_and_progress_lines_at_the_interval(
    tmp_path: Path, tiny_corpus, session_cache
) -> None:
    stream = io.StringIO()
    reporter = Reporter(stream=stream, clock=TickingClock(), interval_s=5.0)
    cache = tmp_path / "cache"  # the tiny corpus, but no embeddings: earlier tests must not change what is computed
    shutil.copytree(session_cache / "corpora", cache / "corpora")
    opts = RunOptions(
        experiment=str(tiny_experiment(tmp_path)), encoders=["mfcc-stats"], out=tmp_path / "results", cache_dir=cache
    )
    outcome = run(opts, reporter=reporter)
    doc = OUTPUTS_DOC.read_text(encoding="utf-8")

    header = pd.read_csv(outcome.run_dir / "results.csv", nrows=0).columns.tolist()
    assert header == COLUMNS + calibration_columns([DEFAULT_POINT])  # the calibration columns come last
    for col in [*header, *SPOOF_COLUMNS]:  # spoofing experiments add SPOOF_COLUMNS
        assert _documented(col, doc), f"results.csv column {col!r} is not in docs/outputs.md"
    for path in outcome.run_dir.rglob("*"):
        if path.is_file():
            top = path.relative_to(outcome.run_dir).parts[0]
            assert top in doc, f"run directory entry {top!r} is not in docs/outputs.md"

    # the captured progress: a start line, then one line per 5 (fake) seconds = 5 items, then the end
    lines = stream.getvalue().splitlines()
    total = int(next(ln for ln in lines if re.fullmatch(r"embedding: \d+ to do", ln)).split()[1])
    # the work ahead, in one paragraph (wrapped to 80 columns) before it starts: trials, cells,
    # embeddings per encoder
    at = lines.index(f"embedding: {total} to do")
    first = next(i for i in range(at - 1, -1, -1) if lines[i].startswith("run T01-"))
    assert all(ln.startswith("  ") and len(ln) <= 80 for ln in lines[first + 1 : at]) and len(lines[first]) <= 80
    assert re.fullmatch(
        rf"run T01-[0-9a-f]{{12}}: \d+ trials, 4 cells × 1 encoder: 0 of 4 finished earlier \(reused\), 4 to score; "
        rf"embeddings: 0 from the cache, {total} to compute \(mfcc-stats {total}\)",
        " ".join(" ".join(lines[first:at]).split()),
    )
    assert not any(ln.startswith("cells: ") for ln in lines)
    ticks = [ln for ln in lines if re.match(rf"embedding: \d+/{total} ", ln) and "left" in ln]
    assert [int(ln.split()[1].split("/")[0]) for ln in ticks] == list(range(5, total, 5))
    for ln in ticks:
        assert re.fullmatch(rf"embedding: \d+/{total} \(\d+\.\d %\), 1/s, about (\d+ min )?\d+ s left", ln), ln
    assert f"embedding: {total}/{total} in {float(total + 1):.1f} s" in lines

    # analyze's tables (with intervals, so their interval columns are there too)
    res = CliRunner().invoke(
        app, ["analyze", str(outcome.run_dir), "--bootstrap", "200", "-q", "--out", str(tmp_path / "a")]
    )
    assert res.exit_code == 0, res.output
    files = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert "contrasts.csv" in files and "bootstrap.json" in files
    for name in files:
        assert _documented(name, doc), name
        if name.endswith(".csv"):
            for col in pd.read_csv(tmp_path / "a" / name, nrows=0).columns:
                assert _documented(col, doc), f"{name} column {col!r} is not in docs/outputs.md"

    # the bootstrap reports its progress too (one line per cell here: 1 s per cell, 1 s interval)
    from interbias.analysis.suite import Options, analyse

    boot = io.StringIO()
    analyse(
        outcome.run_dir,
        Options(n_boot=5, design="speaker"),
        Reporter(stream=boot, clock=TickingClock(), interval_s=1.0),
    )
    assert boot.getvalue().splitlines() == [
        "bootstrap (5 replicates): 4 to do",
        "bootstrap (5 replicates): 2/4 (50.0 %), 1/s, about 2 s left",
        "bootstrap (5 replicates): 3/4 (75.0 %), 1/s, about 1 s left",
        "bootstrap (5 replicates): 4/4 in 5.0 s",
    ]


def test_table_marks_invalid_files_and_missing_resources(monkeypatch) -> None:
    from interbias.cli.listing import catalogue_table

    monkeypatch.setenv("COLUMNS", "200")  # one line per entry (at 80 its corpora go under it)

    ok = {"corpus": "synthetic", "n_cells": 4, "runnable": True}
    entries = [
        {"name": "X01", "title": "Codecs", "use": "descriptive", **ok, "variants": [], "runnable_with": []},
        {
            "name": "X02",
            "title": "Noise",
            "use": "gap",
            **ok,
            "runnable": False,
            "why_key": "ops",
            "variants": [{"name": "other", "n_cells": 2, "runnable": False, "why_key": "attr"}],
            "runnable_with": [],
        },
        {"name": "X03", "error": "X03.yaml: factors: missing", "runnable": False, "why_key": "invalid"},
    ]
    lines = catalogue_table(entries)
    assert lines[1].split() == ["X01", "Codecs", "descriptive", "4", "synthetic", "✓"]
    assert lines[2].endswith("4  synthetic ✗ops · other(2) ✗attr")
    assert lines[3].startswith("X03  (invalid experiment file)") and lines[3].endswith("✗invalid")
    legend = "\n".join(lines[4:])
    for key in ("ops", "attr", "invalid"):
        assert f"✗{key}" in legend
    assert "✗data" not in legend and lines[-1].startswith("Try `interbias run X01`")
