"""``interbias report --latex``: booktabs tables with stated rounding and bracketed intervals,
vector figures beside every PNG (byte-stable), and (slow) a document that pdflatex compiles."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from synthetic_runs import gender_noise_run
from typer.testing import CliRunner

from interbias.analysis.reporting.latex import Col, booktabs, escape, interval, number
from interbias.cli import app

MEANS = {
    "enc_a": {("female", "clean"): 3.0, ("female", "n10"): 2.5, ("male", "clean"): 1.0, ("male", "n10"): 0.5},
    "enc_b": {("female", "clean"): 2.0, ("female", "n10"): 1.0, ("male", "clean"): 2.0, ("male", "n10"): 1.8},
}


def test_escape_number_interval() -> None:
    assert (
        escape("a_b & 50% #1 {x} ~ ^ \\")
        == r"a\_b \& 50\% \#1 \{x\} \textasciitilde{} \textasciicircum{} \textbackslash{}"
    )
    assert escape("gender×noise −1") == r"gender$\times$noise $-$1"
    assert number(0.12345) == "$0.123$" and number(-0.0004) == "$0.000$" and number(2, 0) == "$2$"
    assert number(float("nan")) == "--" and number(None) == "--" and number("") == "--"
    assert interval(0.5, 0.25, 0.75) == "$0.500$ [$0.250$, $0.750$]"
    assert interval(0.5, float("nan"), 0.75) == "$0.500$"  # no half interval


def test_booktabs_layout() -> None:
    import pandas as pd

    frame = pd.DataFrame({"model": ["m_1"], "v": [0.5]})
    tex = booktabs(
        frame, [Col("model", lambda r: escape(r["model"]), "l"), Col("v", lambda r: number(r["v"]))], "C", "x"
    )
    lines = tex.splitlines()
    assert lines[5] == r"\begin{tabular}{lr}"
    assert lines[6:10] == [r"\toprule", r"model & v \\", r"\midrule", r"m\_1 & $0.500$ \\"]
    assert lines[10:13] == [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    assert r"\caption{C}" in tex and r"\label{tab:x}" in tex


def _report(run: Path, out: Path) -> str:
    res = CliRunner().invoke(app, ["report", str(run), "--bootstrap", "200", "--out", str(out), "--latex"])
    assert res.exit_code == 0, res.output
    return res.output


@pytest.fixture(scope="module")
def reported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("latex")
    run = gender_noise_run(tmp / "run", MEANS, n=10)
    out = tmp / "out"
    out.mkdir()
    output = _report(run, out)
    assert f"wrote {out / 'tables.tex'} and " in output
    return run, out


def test_tables_state_rounding_and_bracket_intervals(reported: tuple[Path, Path]) -> None:
    _, out = reported
    names = sorted(p.stem for p in (out / "tables").glob("*.tex"))
    assert {"contrasts", "summary", "models", "gaps", "leaderboard"} <= set(names)
    contrasts = (out / "tables" / "contrasts.tex").read_text()
    assert "rounded to 3 decimals" in contrasts and "intervals in brackets" in contrasts
    rows = [ln for ln in contrasts.splitlines() if ln.startswith(("enc\\_a", "enc\\_b"))]
    assert len(rows) == 2 and all(" [$" in r and r.endswith(r"\\") for r in rows)  # one row per model
    assert all(r.count("&") == 8 for r in rows)  # nine columns: Table 11's shape
    doc = (out / "tables.tex").read_text()
    assert doc.startswith(r"\documentclass{article}") and r"\usepackage{booktabs}" in doc
    assert all(f"\\input{{tables/{n}}}" in doc for n in names)


def test_every_figure_has_vector_files_and_they_are_byte_stable(reported: tuple[Path, Path], tmp_path: Path) -> None:
    run, out = reported
    figs = out / "report_figures"
    pngs = sorted(figs.glob("*.png"))
    assert pngs
    for png in pngs:
        pdf, svg = png.with_suffix(".pdf"), png.with_suffix(".svg")
        assert pdf.read_bytes()[:5] == b"%PDF-" and b"<svg" in svg.read_bytes()[:2000]
    again = tmp_path / "again"
    again.mkdir()
    _report(run, again)
    for f in sorted(figs.iterdir()):
        assert (again / "report_figures" / f.name).read_bytes() == f.read_bytes(), f.name


def _pdflatex() -> str | None:
    """pdflatex, installing Debian's texlive packages when it is missing (and apt-get can)."""
    if shutil.which("pdflatex") is None and shutil.which("apt-get"):
        packages = ["texlive-latex-base", "texlive-latex-recommended"]
        subprocess.run(["apt-get", "install", "-y", "-q", "--no-install-recommends", *packages], capture_output=True)
    return shutil.which("pdflatex")


@pytest.mark.slow
def test_tables_compile_with_pdflatex(reported: tuple[Path, Path]) -> None:
    _, out = reported
    pdflatex = _pdflatex()
    if pdflatex is None:
        pytest.skip("pdflatex missing and Debian's texlive packages could not be installed")
    done = subprocess.run(
        [pdflatex, "-interaction=nonstopmode", "-halt-on-error", "tables.tex"],
        cwd=out,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    assert (out / "tables.pdf").read_bytes()[:5] == b"%PDF-"


def test_a_long_table_is_a_longtable_that_breaks_across_pages() -> None:
    """Past LONG_ROWS rows a table is a booktabs longtable (a float of 228 rows cannot be set on a
    page): caption and label once, the header on the first page and again on every later one."""
    import pandas as pd

    from interbias.analysis.reporting.latex import LONG_ROWS

    cols = [Col("model", lambda r: escape(r["model"]), "l"), Col("v", lambda r: number(r["v"]))]
    short = pd.DataFrame({"model": [f"m{i}" for i in range(LONG_ROWS)], "v": [0.5] * LONG_ROWS})
    assert r"\begin{table}" in booktabs(short, cols, "C", "x")
    long = pd.DataFrame({"model": [f"m{i}" for i in range(LONG_ROWS + 1)], "v": [0.5] * (LONG_ROWS + 1)})
    tex = booktabs(long, cols, "C", "x")
    lines = tex.splitlines()
    assert r"\begin{table}" not in tex and r"\begin{longtable}{lr}" in lines
    assert tex.count(r"\caption{C}\label{tab:x}\\") == 1
    assert tex.count(r"model & v \\") == 2  # the first page's header and the repeated one
    first, head = lines.index(r"\endfirsthead"), lines.index(r"\endhead")
    assert first < head < lines.index(r"\endfoot") < lines.index(r"\endlastfoot")
    assert [line for line in lines if line.startswith("m") and line[1].isdigit()][-1] == rf"m{LONG_ROWS} & $0.500$ \\"
    assert sum(1 for line in lines if line.startswith("m") and line[1].isdigit()) == LONG_ROWS + 1
    assert lines[-2:] == [r"\end{longtable}", r"\endgroup"]


@pytest.mark.slow
def test_a_longtable_of_e14_size_compiles_and_spans_pages(tmp_path: Path) -> None:
    """A findings-sized table (228 rows, E14's count) compiles under tables.tex's preamble and
    breaks across pages instead of overflowing one."""
    import pandas as pd

    from interbias.analysis.reporting.latex import PREAMBLE

    pdflatex = _pdflatex()
    if pdflatex is None:
        pytest.skip("pdflatex missing and Debian's texlive packages could not be installed")
    frame = pd.DataFrame({"model": [f"m_{i}" for i in range(228)], "v": [i / 1000 for i in range(228)]})
    body = booktabs(
        frame, [Col("model", lambda r: escape(r["model"]), "l"), Col("v", lambda r: number(r["v"]))], "C", "x"
    )
    (tmp_path / "long.tex").write_text(PREAMBLE + body + "\n\\end{document}\n", encoding="utf-8")
    done = subprocess.run(
        [pdflatex, "-interaction=nonstopmode", "-halt-on-error", "long.tex"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:]

    written = re.search(r"Output written on long\.pdf \((\d+) pages?", done.stdout)
    assert written is not None, done.stdout[-2000:]
    pages = int(written.group(1))
    assert "Overfull \\vbox" not in done.stdout
    assert pages >= 3, pages


def test_findings_tex_names_each_effect_as_findings_csv_label(reported: tuple[Path, Path]) -> None:
    """One name per effect: the LaTeX findings table's effect column is findings.csv's
    ``label`` (escaped), the long ``effect`` form appears nowhere in it."""
    import pandas as pd

    from interbias.analysis.reporting.latex import escape

    _, out = reported
    tex = (out / "tables" / "findings.tex").read_text()
    found = pd.read_csv(out / "findings.csv", keep_default_na=False)
    rows = [ln.split(" & ")[2] for ln in tex.splitlines() if ln.count(" & ") >= 5 and not ln.startswith("model")]
    assert len(rows) == len(found) and set(rows) == {escape(x) for x in found["label"]}
    assert not any(escape(x) in tex for x in found["effect"])
