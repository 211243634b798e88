"""The report and analyze open with findings; report.html parses with every figure embedded."""

from __future__ import annotations

import base64
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest
from synthetic_runs import gender_noise_run
from typer.testing import CliRunner

from interbias.analysis.headline import cell_pivot, headline
from interbias.analysis.suite import Options, analyse
from interbias.cli import app

runner = CliRunner()
#: "big": men's targets score far lower than women's in every condition (a gap far from zero);
#: "flat": the same mean everywhere (nothing to resolve).
MEANS = {
    "big": {("female", "clean"): 3.0, ("female", "n10"): 2.5, ("male", "clean"): 0.8, ("male", "n10"): 0.3},
    "flat": {("female", "clean"): 1.5, ("female", "n10"): 1.5, ("male", "clean"): 1.5, ("male", "n10"): 1.5},
}


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    return gender_noise_run(tmp_path_factory.mktemp("headline") / "run", MEANS, n=16)


class Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.h2: list[str] = []
        self._in_h2 = False

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_h2 = tag == "h2"

    def handle_endtag(self, tag: str) -> None:
        self._in_h2 = False if tag == "h2" else self._in_h2

    def handle_data(self, data: str) -> None:
        if self._in_h2:
            self.h2.append(data)


def test_findings_sort_effects_by_their_intervals(run: Path) -> None:
    a = analyse(run, Options(n_boot=200))
    h = headline(a)
    f = h.findings
    big = f[(f.model == "big") & (f.kind == "gap")]
    assert len(big) == 2 and big.resolved.all() and (big.lo > 0).all()  # men worse in both conditions
    assert big.estimate.tolist() == pytest.approx(
        [a.results.eer[(a.results.model == "big") & (a.results.level_b == c)].diff().iloc[-1] for c in ("clean", "n10")]
    )
    flat_gaps = f[(f.model == "flat") & (f.kind == "gap")]
    assert not flat_gaps.resolved.any() and (flat_gaps.mde > 0).all()
    text = "\n".join(h.lines)
    assert "big: " in text and "resolved: gap gender male − female at noise=clean" in text
    assert "unresolved: gap gender male − female at noise=clean" in text and "MDE " in text
    pivot = cell_pivot(a)
    assert list(pivot.columns) == ["experiment", "cell", "big", "flat"] and len(pivot) == 4
    assert pivot.big.str.match(r"^0\.\d{4} \[0\.\d{4}, 0\.\d{4}\]$").all()


def test_without_bootstrap_nothing_is_declared(run: Path) -> None:
    h = headline(analyse(run, Options()))
    assert h.findings is None and "bootstrap not requested" in h.lines[0]


def test_analyze_prints_findings_first_and_writes_them(run: Path, tmp_path: Path) -> None:
    res = runner.invoke(app, ["analyze", str(run), "--bootstrap", "50", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith("findings:\nEffects in eer")  # progress lines go to stderr
    f = pd.read_csv(tmp_path / "findings.csv")
    assert {"effect", "estimate", "lo", "hi", "resolved", "mde", "speakers_per_stratum_needed"} <= set(f.columns)


def test_report_html_parses_with_findings_first_and_every_figure_embedded(run: Path, tmp_path: Path) -> None:
    res = runner.invoke(app, ["report", str(run), "--out", str(tmp_path), "--bootstrap", "50"])
    assert res.exit_code == 0, res.output
    n_fig = int(res.output.split(" figure(s)")[0].split()[-1])
    page = Page()
    page.feed((tmp_path / "report.html").read_text())
    page.close()
    assert page.h2[:3] == ["Findings", "Results per cell", "Provenance"]
    assert "Results per cell (long form)" in page.h2
    imgs = [attrs for tag, attrs in page.tags if tag == "img"]
    assert n_fig >= 3 and len(imgs) == n_fig == sum(tag == "figure" for tag, _ in page.tags)
    for attrs in imgs:
        assert attrs["src"].startswith("data:image/png;base64,")
        assert base64.b64decode(attrs["src"].split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    assert not [a for tag, a in page.tags if tag in ("script", "link") or (tag == "a" and "href" in a)]
    assert sum(tag == "table" for tag, _ in page.tags) >= 8
