"""The report and analyze open with findings; report.html parses with every figure embedded."""

from __future__ import annotations

import base64
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest
from synthetic_runs import gender_noise_run, pattern_run
from typer.testing import CliRunner

from interbias.analysis.reporting.headline import cell_pivot, headline
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
    by_cond = big.set_index("condition")["estimate"]
    for c in ("clean", "n10"):
        want = a.results.eer[(a.results.model == "big") & (a.results.level_b == c)].diff().iloc[-1]
        assert by_cond[f"noise={c}"] == pytest.approx(want)
    assert big.estimate.is_monotonic_decreasing  # largest harm first
    flat_gaps = f[(f.model == "flat") & (f.kind == "gap")]
    assert not flat_gaps.resolved.any() and (flat_gaps.mde > 0).all()
    text = "\n".join(h.lines)
    assert h.lines[0].startswith(
        "Family: every effect of one experiment (S01: 10 effects (4 main, 2 interaction, 4 gap)"
    )
    assert "adjustment: Holm (family-wise error rate)" in h.lines[0]
    assert "big: gender male − female at clean: EER for male is higher than for female" in text
    assert "unresolved: gender male − female at clean" in text and "MDE " in text
    assert (f.adjustment == "holm").all() and (f.family_size == 10).all()
    assert list(f.kind[f.model == "big"]) == ["main", "main", "interaction", "gap", "gap"]
    pivot = cell_pivot(a)
    assert list(pivot.columns) == ["experiment", "cell", "big", "flat"] and len(pivot) == 4
    assert pivot.big.str.match(r"^0\.\d{3} \[0\.\d{3}, 0\.\d{3}\]$").all()  # one unit: fractions, 3 decimals


def test_without_bootstrap_nothing_is_declared(run: Path) -> None:
    h = headline(analyse(run, Options()))
    assert h.findings is None and "bootstrap not requested" in h.lines[0]


def test_analyze_prints_findings_first_and_writes_them(run: Path, tmp_path: Path) -> None:
    res = runner.invoke(app, ["analyze", str(run), "--bootstrap", "200", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith("findings:\n")  # progress lines go to stderr
    last = res.stdout.rsplit("\nanswer: ", 1)[1].splitlines()  # the question and its answer come last
    assert "Answer: 2 of 4 subgroup gaps resolved (big 2 of 2, flat 0 of 2)." in " ".join(x.strip() for x in last)
    f = pd.read_csv(tmp_path / "findings.csv")
    want = {"effect", "estimate", "lo", "hi", "resolved", "mde", "speakers_per_stratum_needed"}
    assert want | {"p_value", "p_adjusted", "adjustment", "lo_simultaneous", "hi_simultaneous"} <= set(f.columns)
    assert set(f.kind) == {"main", "interaction", "gap"} and f.p_value.notna().all() and f.resolved.notna().all()
    assert (f.p_adjusted >= f.p_value).all() and (f.lo_simultaneous <= f.lo).all()


def test_report_html_parses_with_findings_first_and_every_figure_embedded(run: Path, tmp_path: Path) -> None:
    res = runner.invoke(app, ["report", str(run), "--out", str(tmp_path), "--bootstrap", "200"])
    assert res.exit_code == 0, res.output
    n_fig = int(res.output.split(" figure(s)")[0].split()[-1])
    page = Page()
    page.feed((tmp_path / "report.html").read_text())
    page.close()
    assert page.h2[:5] == ["Answer", "Findings", "About this run", "Results per cell", "Provenance"]
    md = (tmp_path / "report.md").read_text()
    first = md.split("## Findings\n\n", 1)[1].split("\n\n", 1)[0]
    assert first.startswith("Family: every effect of one experiment (S01: 10 effects") and "Holm" in first
    assert "Results per cell (long form)" in page.h2
    imgs = [attrs for tag, attrs in page.tags if tag == "img"]
    assert n_fig >= 3 and len(imgs) == n_fig == sum(tag == "figure" for tag, _ in page.tags)
    for attrs in imgs:
        assert attrs["src"].startswith("data:image/png;base64,")
        assert base64.b64decode(attrs["src"].split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    links = [a["href"] for tag, a in page.tags if tag == "a" and "href" in a]
    assert links and all(h.startswith("#") for h in links)  # the contents list: anchors on this page only
    assert not [a for tag, a in page.tags if tag in ("script", "link")]
    assert sum(tag == "table" for tag, _ in page.tags) >= 8


def test_main_effects_lead_as_sentences(tmp_path: Path) -> None:
    """A condition that clearly raises EER is a resolved main effect, written as a sentence
    with the reference and the condition's value."""
    means = {"enc": {("female", "clean"): 3.0, ("female", "n10"): 1.0, ("male", "clean"): 3.0, ("male", "n10"): 1.0}}
    run = gender_noise_run(tmp_path / "run", means, n=16)
    a = analyse(run, Options(n_boot=200))
    h = headline(a)
    main = h.findings[h.findings.kind == "main"].set_index("condition")
    assert list(main.index) == ["noise=n10", "gender=male"] and list(main.resolved) == [True, False]
    cells = a.results.set_index(["level_a", "level_b"])["eer"]
    noise = main.loc["noise=n10"]  # averaged over gender, equal weight per gender
    assert noise.effect == "main noise=n10 − noise=clean (averaged over gender)" and noise.group == ""
    assert noise.value_from == pytest.approx((cells[("female", "clean")] + cells[("male", "clean")]) / 2)
    assert noise.value_to == pytest.approx((cells[("female", "n10")] + cells[("male", "n10")]) / 2)
    assert noise.estimate == pytest.approx(noise.value_to - noise.value_from)
    gender = main.loc["gender=male"]  # the averaged gap: male − female over both noise levels
    assert gender.estimate == pytest.approx(
        (cells[("male", "clean")] + cells[("male", "n10")] - cells[("female", "clean")] - cells[("female", "n10")]) / 2
    )
    assert not (h.findings.kind == "simple").any()  # simple effects only on request
    assert h.lines[1].startswith("enc: ") and "main 1 of 2" in h.lines[1]
    assert h.lines[2].startswith("  noise n10 − clean over gender: raises enc EER from ")
    assert ", 95% CI [+" in h.lines[2] and "; adjusted p " in h.lines[2] and " points" not in h.lines[2]


def test_adjust_none_keeps_raw_p_and_unknown_method_is_one_line(run: Path, tmp_path: Path) -> None:
    f = headline(analyse(run, Options(n_boot=100, adjust="none"))).findings
    assert (f.p_adjusted == f.p_value).all() and (f.adjustment == "none").all()
    bh = headline(analyse(run, Options(n_boot=100, adjust="bh"))).findings
    holm = headline(analyse(run, Options(n_boot=100))).findings
    assert (bh.p_adjusted <= holm.p_adjusted + 1e-12).all()  # BH is never stricter than Holm
    bad = runner.invoke(app, ["analyze", str(run), "--bootstrap", "200", "--adjust", "bonf", "--out", str(tmp_path)])
    assert bad.exit_code == 1 and bad.output.strip() == "error: --adjust 'bonf': valid: holm, bh, none"


def test_one_factor_run_reports_analyzes_and_plans(tmp_path: Path) -> None:
    """A one-factor experiment (no interaction, no group): report, analyze --bootstrap and plan
    used to crash in the planner (an empty effects column of object type)."""
    run = pattern_run(tmp_path / "run", 6, {"A": {"clean": "perfect", "n10": "third"}})
    for cmd in (["report", str(run), "--bootstrap", "200"], ["analyze", str(run), "--bootstrap", "200", "-q"]):
        res = runner.invoke(app, cmd)
        assert res.exit_code == 0, (cmd, res.output, res.exception)
    res = runner.invoke(app, ["plan", str(run), "--bootstrap", "200"])
    assert res.exit_code == 0, (res.output, res.exception)
    f = pd.read_csv(run / "findings.csv")
    assert list(f.kind) == ["main"] and f.effect[0] == "main noise=n10 − noise=clean"
    assert f.estimate[0] == pytest.approx(1 / 3) and not f.resolved[0]
    assert pd.isna(f.se[0]) and pd.isna(f.lo[0]) and pd.isna(f.hi[0]) and pd.isna(f.p_value[0])  # no interval
    assert f.note[0].startswith("no interval: the bootstrap replicates do not vary")
    plan = pd.read_csv(run / "plan.csv")
    # findings.csv carries the planner's columns too (the headline plans every effect)
    assert plan.note[0] == f.note[0]
    assert "; no plan (no bootstrap spread in the pilot: SE 0 or undefined; " in f.note[0]
    assert "speakers_per_stratum" in f.note[0] or "the metric itself does not move" in f.note[0]
    assert "follow-up: no plan (no effect of the family has bootstrap spread in the pilot" in " ".join(
        res.output.split()
    )
    assert "## Findings" in (run / "report.md").read_text()
    # only the reference level measured: no effect at all, still no crash
    single = pattern_run(tmp_path / "single", 6, {"A": {"clean": "third"}})
    for cmd in ("report", "analyze", "plan"):
        res = runner.invoke(app, [cmd, str(single), "--bootstrap", "200"])
        assert res.exit_code == 0, (cmd, res.output, res.exception)
    assert "follow-up: no plan (the run has no effect to plan)" in res.output
    assert pd.read_csv(single / "plan.csv").empty


def test_empty_effect_table_is_decided_without_error() -> None:
    from interbias.analysis.effects import COLUMNS, decide

    out = decide(pd.DataFrame(columns=COLUMNS), 0.05, "holm")
    assert out.empty and list(out.columns) == COLUMNS
