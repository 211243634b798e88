"""Terminal output fits 80 columns and never truncates a cell; analyze and report share one
findings table.

In an 80-column console (``COLUMNS=80``, not a terminal: the width a pipe gets), ``analyze``,
``plan``, ``fairness`` and the end of ``run`` print no line wider than 80 characters and no "…"
(rich's mark of a truncated cell). ``analyze <run>/results.csv`` with no options bootstraps
(the run has scores) and its findings.csv is byte-identical to the one ``report`` computes for
a copy of the run, and ``report`` reuses it when it sits beside the results.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import wide_lines
from synthetic_runs import gender_noise_run
from typer.testing import CliRunner

from interbias.cli import app

runner = CliRunner()
ENV = {"COLUMNS": "80"}
LEVELS = ("clean", "gaussian_25", "gaussian_15", "gaussian_5")


def _fits(output: str, path: Path | None = None) -> None:
    """No line over 80 characters (but one holding ``path``: paths are never split) and no "…"."""
    wide = [line for line in wide_lines(output) if not (path and str(path) in line)]
    assert not wide, wide[:3]
    assert "…" not in output


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    means = {
        model: {
            (g, n): 2.5 - 0.4 * j - (0.3 if g == "male" else 0.0)
            for g in ("female", "male")
            for j, n in enumerate(LEVELS)
        }
        for model in ("CAM++", "a-model-with-a-long-name", "mfcc-stats")
    }
    return gender_noise_run(tmp_path_factory.mktemp("term") / "run", means, n=10, m=4)


def test_analyze_with_no_options_bootstraps_and_report_uses_the_same_findings(run: Path, tmp_path: Path) -> None:
    a = tmp_path / "a"
    shutil.copytree(run, a)
    res = runner.invoke(app, ["analyze", str(a / "results.csv")], env=ENV)
    assert res.exit_code == 0, res.output
    _fits(res.stdout)
    f = pd.read_csv(a / "findings.csv")
    assert len(f) and f[["lo", "hi", "p_adjusted"]].notna().all().all() and set(f["n_boot"]) == {1000}
    assert res.stdout.startswith("findings:\n") and "\nanswer: " in res.stdout  # the question and answer last
    rep = runner.invoke(app, ["report", str(a)], env=ENV)
    assert rep.exit_code == 0, rep.output
    _fits(rep.output)
    assert f"findings: reused {a / 'findings.csv'}" in " ".join(rep.output.split())
    b = tmp_path / "b"
    shutil.copytree(run, b)
    rep = runner.invoke(app, ["report", str(b)], env=ENV)
    assert rep.exit_code == 0, rep.output
    assert "findings: computed here" in rep.output
    assert (b / "findings.csv").read_bytes() == (a / "findings.csv").read_bytes()
    html = (b / "report.html").read_text()
    assert "Question: " in html and "main effects: " in html and 'id="forest"' in html


def test_analyze_changed_options_are_not_reused(run: Path, tmp_path: Path) -> None:
    a = tmp_path / "a"
    shutil.copytree(run, a)
    assert runner.invoke(app, ["analyze", str(a), "--bootstrap", "200", "-q"], env=ENV).exit_code == 0
    rep = runner.invoke(app, ["report", str(a), "--bootstrap", "250"], env=ENV)
    assert rep.exit_code == 0 and "findings: computed here" in rep.output


def test_analyze_wide_and_json(run: Path, tmp_path: Path) -> None:
    import json

    res = runner.invoke(app, ["analyze", str(run), "--bootstrap", "200", "--json", "--out", str(tmp_path)], env=ENV)
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert len(data["findings"]) == len(pd.read_csv(tmp_path / "findings.csv"))
    wide = runner.invoke(app, ["analyze", str(run), "--bootstrap", "200", "--wide", "--out", str(tmp_path)], env=ENV)
    assert wide.exit_code == 0 and "contrasts (eer)" in wide.stdout


def _table_column(output: str, title: str, column: int) -> list[str]:
    """The cells of ``column`` of the table titled ``title``, each row's wrapped lines joined
    by a space (a row starts where the first column is not empty)."""
    lines = output[output.index(title) :].splitlines()[1:]
    rows: list[list[str]] = []
    for line in lines:
        if line.startswith("└"):
            break
        if line.startswith("│"):
            cells = [c.strip() for c in line.strip("│").split("│")]
            if cells[0] or not rows:
                rows.append([])
            rows[-1] += [cells[column]] if cells[column] else []
    return [" ".join(r) for r in rows]


def test_plan_fits_80_columns_and_splits_no_word(run: Path, tmp_path: Path) -> None:
    """The per-effect table names each effect by its one name, folded between words only (a
    word split mid-way would not join back into the name); a model name is never split either,
    so columns that do not fit beside it are left out and named."""
    from interbias.analysis.effect_names import effect_name

    res = runner.invoke(app, ["plan", str(run), "--bootstrap", "200", "--out", str(tmp_path)], env=ENV)
    assert res.exit_code == 0, res.output
    _fits(res.stdout)
    title = "per effect (the question's effects first, largest need first)"
    assert title in res.stdout and "plan.csv" in res.stdout
    header = [c.strip() for c in res.stdout.split(title)[1].splitlines()[2].strip("┃").split("┃")]
    assert header[:2] == ["model", "effect"] and "a-model-with-a-long-name" in res.stdout
    hidden = ", ".join(c for c in ("mde", "estimate", "lo", "hi", "note") if c not in header)
    assert f"column(s) not shown: {hidden};" in " ".join(res.stdout.split())
    plan = pd.read_csv(tmp_path / "plan.csv")
    shown = _table_column(res.stdout, title, 1)
    names = {effect_name(r) for r in plan.itertuples(index=False)}
    assert len(shown) == min(15, len(plan)) and set(shown) <= names, shown


def test_fairness_fits_80_columns(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    n = 400
    label = rng.integers(0, 2, n)
    speaker = rng.integers(0, 40, n)  # the default fairness test resamples speakers
    frame = pd.DataFrame(
        {
            "score": rng.normal(label * 2.0, 1.0),
            "label": label,
            "speaker": [f"s{k}" for k in speaker],
            "gender": np.where(speaker % 2 == 0, "female", "male"),
            "condition": rng.choice(["noise=gaussian_5,codec=opus_narrowband_6k", "noise=clean,codec=none"], n),
        }
    )
    frame.to_csv(tmp_path / "eval.csv", index=False)
    frame.to_csv(tmp_path / "dev.csv", index=False)
    args = ["scores", "fairness", str(tmp_path / "eval.csv"), "--group", "gender", "--group", "condition"]
    res = runner.invoke(app, [*args, "--dev", str(tmp_path / "dev.csv")], env=ENV)
    assert res.exit_code == 0, res.output
    _fits(res.stdout)
    assert (
        "opus_narrowband_6k" in res.stdout.replace("\n", "").replace("│", "").replace(" ", "")
        or "column(s) not shown" in res.stdout
    )


def test_run_ends_with_a_few_lines_and_the_next_command(tmp_path: Path, capsys, monkeypatch) -> None:
    from interbias.cli.run import _report
    from interbias.run.conductor import RunOutcome

    monkeypatch.setenv("COLUMNS", "80")
    rows = [
        {"model": m, "cell": f"emotion={e},noise={k}", "eer": 0.1} for m in "abc" for e in range(6) for k in range(7)
    ]
    (tmp_path / "run.json").write_text('{"n_failures": 2}')
    outcome = RunOutcome(tmp_path, pd.DataFrame(rows), 10, 5, 0, [])
    _report(outcome, quiet=False, seconds=75.0)
    out = capsys.readouterr().out
    _fits(out, tmp_path)
    lines = out.strip().splitlines()
    assert len(lines) <= 6
    flat = " ".join(out.split())
    assert flat.startswith(
        f"{tmp_path.name}: 126 rows (42 cells × 3 models), 2 failed utterance(s), 0 errored cell(s), 75.0 s"
    )
    assert lines[-2] == "macro EER per model (mean over 42 cells): a 0.100, b 0.100, c 0.100"
    assert lines[-1] == f"next: interbias report {tmp_path}"


def test_macro_line_averages_each_models_cells_and_names_unequal_counts() -> None:
    from interbias.cli.run import macro_line

    rows = [("CAM++", "x", 0.1), ("CAM++", "y", 0.2), ("GE2E", "x", 0.3), ("GE2E", "y", 0.1), ("GE2E", "z", 0.2)]
    frame = pd.DataFrame(rows, columns=["model", "cell", "eer"])
    assert macro_line(frame) == "macro EER per model (mean over its cells): CAM++ 0.150 (2 cells), GE2E 0.200 (3 cells)"
    frame.loc[4, "eer"] = float("nan")  # a cell without an EER is left out of its model's mean
    assert macro_line(frame) == "macro EER per model (mean over 2 cells): CAM++ 0.150, GE2E 0.200"
    assert macro_line(frame.drop(columns="eer")) is None
    assert macro_line(pd.concat([frame, frame])) is None  # rows per group of a cell (tracks): no cell mean


def test_a_run_at_80_columns_says_its_work_once_and_ends_with_the_macro_eer(
    tmp_path: Path, tiny_corpus, session_cache
) -> None:
    """A protocol VAD factor embeds under two front ends: the run's line comes once, then one
    embeddings line per front end naming its VAD; nothing is over 80 columns."""
    from conftest import NOISE, VAD, gender_factor, tiny_experiment
    from run_helpers import isolated_cache

    exp = tiny_experiment(tmp_path, "T22", factors=[gender_factor(), VAD, NOISE])
    cache = isolated_cache(tmp_path, session_cache)
    args = ["run", str(exp), "--encoders", "mfcc-stats", "--out", str(tmp_path / "out"), "--cache-dir", str(cache)]
    res = runner.invoke(app, args, env=ENV)
    assert res.exit_code == 0, res.output
    _fits(res.output, tmp_path)
    flat = [" ".join(p.split()) for p in res.output.replace("\n  ", " ").splitlines()]
    assert len([ln for ln in flat if ln.startswith("run T22-")]) == 1
    assert [ln.split(";")[0] for ln in flat if "embeddings: " in ln] == [
        "4 cells with VAD none",
        "4 cells with VAD energy",
    ]
    assert [ln for ln in flat if ln.startswith("macro EER per model (mean over 8 cells): mfcc-stats 0.")]


def test_numbers_have_one_format_everywhere() -> None:
    """Counts as integers, p-values as < 0.001, no negative zero, in tables, sentences and LaTeX."""
    from interbias.analysis.reporting.headline import num, span
    from interbias.analysis.reporting.latex import number
    from interbias.analysis.reporting.numbers import format_value

    assert format_value(4648.0, "speakers_per_stratum_needed") == "4648"
    assert format_value(12.0, "n_target") == "12" and format_value(6.5, "target_trials_per_speaker") == "6.500"
    assert format_value(-0.00004, "estimate") == "0.000" and format_value(-0.0123, "estimate") == "-0.012"
    assert format_value(0.00002, "p_adjusted") == "< 0.001" and format_value(0.0421, "p_value") == "0.042"
    assert format_value(float("nan"), "lo") == "" and format_value(float("inf"), "n_boot") == "inf"
    assert num(-0.0001, sign=True) == "+0.000" and num(-0.0001) == "0.000" and num(float("nan")) == "n/a"
    assert span(-0.02, 0.0001) == "[-0.020, +0.000]"
    assert number(-0.0001) == "$0.000$" and number(-0.25) == "$-0.250$"


@pytest.mark.parametrize(
    "args",
    [
        ["list"],
        ["encoders", "list"],
        ["cm", "models"],
        ["data", "operators"],
        ["validate", "conditions/E01.yaml", "conditions/E14.yaml", "conditions/E16.yaml", "conditions/E26.yaml"],
    ],
    ids=" ".join,
)
def test_catalogue_commands_fit_80_columns(args: list[str]) -> None:
    res = runner.invoke(app, args, env=ENV)
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines and max(map(len, lines)) <= 80, [ln for ln in lines if len(ln) > 80][:3]
    assert "``" not in res.output and ":func:`" not in res.output  # no RST marks
    assert not re.search(r"\b1 strata\b|\ball 2 ", res.output)
    if args == ["list"]:
        assert len(lines) <= 40


def test_degrade_prints_realised_values_within_80_columns(tmp_path: Path) -> None:
    import soundfile as sf

    wav = tmp_path / "in.wav"
    t = np.arange(16000) / 16000
    sf.write(wav, 0.3 * np.sin(2 * np.pi * 220 * t), 16000)
    res = runner.invoke(
        app, ["data", "degrade", str(wav), str(tmp_path / "o.wav"), "--op", "packet_loss:rate=0.3"], env=ENV
    )
    assert res.exit_code == 0, res.output
    _fits(res.output, tmp_path)
    assert "lost_frames=[" in res.output and "--json: every realised value in full" in res.output
