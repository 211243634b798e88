"""Report figures hold at every grid the validator admits: on a demo-shaped run (gender × 7
noise levels, three models), an E14-shaped run (6 emotions × 7 noise levels, 42 cells, three
models) and an E21-shaped run (one factor of 29 severity levels), every figure is drawn without
a matplotlib warning, no legend box overlaps any axes' data area, and no colour is repeated
among the labelled series of one panel."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from matplotlib.colors import to_hex
from synthetic_runs import ScoreModel, clustered_scores, clustered_trials, write_run

from interbias.analysis.reporting import document as report_document
from interbias.analysis.reporting.report import build_report
from interbias.analysis.suite import Options, analyse
from interbias.utils.seeding import derive_rng

MODELS = ("CAM++", "GE2E", "mfcc-stats")
NOISE = {"clean": None, **{f"{k}_{db}": (k, db) for k in ("gaussian", "crosstalk") for db in (25, 15, 5)}}


def _grid_run(folder: Path, groups: list[str], group_name: str, use: str) -> Path:
    """``group_name`` (population, ``groups``) × noise (7 levels with SNR operators), 3 models."""
    trials = clustered_trials({f"{group_name}={g}": 5 for g in groups}, 3, 3)
    cells = {}
    for k, model in enumerate(MODELS):
        for i, g in enumerate(groups):
            part = trials[trials["stratum"] == f"{group_name}={g}"]
            for j, noise in enumerate(NOISE):
                rng = derive_rng("figures", model, g, noise)
                mu = 3.0 - 0.3 * k - 0.1 * i - 0.25 * j
                cells[(model, (g, noise))] = (
                    part["trial_id"].to_numpy(),
                    clustered_scores(part, ScoreModel(), mu, rng),
                )
    factors = [(group_name, "population", groups[0]), ("noise", "acoustic", "clean")]
    write_run(folder, trials, cells, factors, experiment="F01")
    resolved = json.loads((folder / "experiment.resolved.json").read_text())
    resolved["use"] = use
    for level, op in NOISE.items():  # SNR operators, so gap-against-SNR is drawn
        chain = [] if op is None else [{"op": "noise", "kind": op[0], "snr_db": op[1]}]
        resolved["factors"][1]["levels"][level] = chain
    (folder / "experiment.resolved.json").write_text(json.dumps(resolved))
    return folder


def _ladder_run(folder: Path) -> Path:
    """One acoustic factor: clean and 7 families × 4 severities (``<family>_s<k>``), two models."""
    trials = clustered_trials({"all": 6}, 3, 3)
    levels = [
        "clean",
        *(
            f"{f}_s{k}"
            for f in ("lowpass", "highpass", "resample", "echo", "pitch", "bass", "treble")
            for k in range(1, 5)
        ),
    ]
    cells = {}
    for model in MODELS[:2]:
        for j, level in enumerate(levels):
            rng = derive_rng("ladder", model, level)
            mu = 3.0 - 0.05 * j
            cells[(model, (level,))] = (trials["trial_id"].to_numpy(), clustered_scores(trials, ScoreModel(), mu, rng))
    return write_run(folder, trials, cells, [("condition", "acoustic", "clean")], experiment="F21")


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("figures")
    return {
        "demo": _grid_run(base / "demo", ["female", "male"], "gender", "gap"),
        "e14": _grid_run(base / "e14", ["neutral", "calm", "happy", "sad", "angry", "fearful"], "emotion", "contrast"),
        "e21": _ladder_run(base / "e21"),
    }


def _overlap(a, b) -> float:
    w = min(a.x1, b.x1) - max(a.x0, b.x0)
    h = min(a.y1, b.y1) - max(a.y0, b.y0)
    return max(w, 0) * max(h, 0)


def _labelled_colours(ax) -> list[str]:
    out = []
    for artist in [*ax.get_lines(), *ax.collections]:
        label = str(artist.get_label())
        if label.startswith("_"):
            continue
        colour = artist.get_color() if hasattr(artist, "get_marker") else artist.get_edgecolor()
        out.append(to_hex(np.atleast_2d(colour)[0] if not isinstance(colour, str) else colour))
    return out


@pytest.mark.parametrize("name", ["demo", pytest.param("e14", marks=pytest.mark.slow), "e21"])  # e14: 14 s
def test_figures_hold_at_every_grid(runs: dict[str, Path], name: str, monkeypatch) -> None:
    drawn = []
    place = report_document.plots.place_legends

    def record(fig) -> None:
        place(fig)
        drawn.append(fig)

    monkeypatch.setattr(report_document.plots, "place_legends", record)
    a = analyse(runs[name], Options(n_boot=20))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rep = build_report(a)
    assert not [str(w.message) for w in caught]
    assert not [m for m in rep.omitted if "warned" in m], rep.omitted
    names = [f.name for f in rep.figures]
    assert names[0] == "forest" and "det" in names and "by_condition" in names
    if name != "e21":
        assert f"gap_snr_{'F01'}" in names
    assert len(drawn) == len(rep.figures)
    for fig in drawn:
        renderer = fig.canvas.get_renderer()
        axes = [ax for ax in fig.axes if ax.get_visible()]
        legends = [*fig.legends, *(ax.get_legend() for ax in axes if ax.get_legend() is not None)]
        for leg in legends:
            box = leg.get_window_extent(renderer)
            for ax in axes:
                assert _overlap(box, ax.get_window_extent(renderer)) < 1.0, (name, ax.get_title())
        for ax in axes:
            colours = _labelled_colours(ax)
            assert len(colours) == len(set(colours)), (name, ax.get_title(), colours)
    det = next(f for f in drawn if any(ax.get_title().startswith(f"{MODELS[0]}: ") for ax in f.axes))
    panels = [ax for ax in det.axes if ax.get_visible()]
    assert max(len(ax.get_lines()) for ax in panels) <= 12  # small multiples, not 42 curves in one axes


def test_e14_shaped_report_reads_short(runs: dict[str, Path], tmp_path: Path) -> None:
    """The answer, then the forest plot, then contents; findings ≤ 60 lines of report.md; every
    effect only in the collapsed All effects table; ≤ 10 screens of 900 px at 1400 px in Chromium."""
    import shutil
    import subprocess

    from PIL import Image

    from interbias.analysis.reporting.document import to_html, to_markdown, write_report

    rep = build_report(analyse(runs["e14"], Options(n_boot=20)))
    md = to_markdown(rep, "report_figures")
    assert md.index("## Answer") < md.index("Not resolved: none of the") < md.index("(report_figures/forest.png)")
    assert md.index("(report_figures/forest.png)") < md.index("Contents: [Answer](#answer)") < md.index("## Findings")
    findings = md.split("## Findings", 1)[1].split('<a id="about-this-run">', 1)[0]
    assert len(findings.strip().splitlines()) <= 60
    html = to_html(rep)
    assert "<details><summary>All " in html and html.count("<details>") >= 3
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("chromium is not installed")
    write_report(rep, tmp_path)
    shot = tmp_path / "tall.png"
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1400,12000"]
    subprocess.run(
        [*cmd, f"--screenshot={shot}", (tmp_path / "report.html").as_uri()], capture_output=True, timeout=180
    )
    pixels = np.asarray(Image.open(shot).convert("L"))
    height = int(np.where((pixels < 250).any(axis=1))[0].max()) + 1
    assert height <= 10 * 900, height


def test_a_warning_while_drawing_is_a_counted_figure_not_drawn() -> None:
    from interbias.analysis.reporting import plots
    from interbias.analysis.reporting.document import Report

    def crowded():
        fig = plots.new_figure(0.3, 0.3)  # far too small for its axes, labels and title
        ax = fig.subplots()
        ax.set_title("a title much longer than the figure is wide")
        ax.set_xlabel("x")
        return fig

    rep = Report("t")
    assert not rep.draw("tiny", "Tiny figure", "caption", crowded)
    assert rep.figures == [] and len(rep.omitted) == 1
    assert (
        rep.omitted[0].startswith("Tiny figure: matplotlib warned while drawing it (") and "collapsed" in rep.omitted[0]
    )
    assert rep.draw("ok", "Fine figure", "caption", lambda: plots.new_figure(4, 3)) and len(rep.figures) == 1
