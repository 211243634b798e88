"""``interbias report``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from interbias.cli import app, guarded
from interbias.cli.analysis_options import DEFAULT_CHOICE, AnalysisChoice, with_analysis_options
from interbias.cli.tables import echo_wrapped


@app.command(epilog="Example: interbias report results/<run_id>")
@guarded
@with_analysis_options
def report(
    run_dir: Annotated[Path, typer.Argument(help="Run directory (results/<run_id>/) or its results.csv.")],
    out: Annotated[Path | None, typer.Option(help="Output folder (default: the run directory).")] = None,
    analysis: AnalysisChoice = DEFAULT_CHOICE,
    geometry: Annotated[
        Path | None,
        typer.Option(
            help="Folder with an `interbias audit geometry` audit (geometry.csv) to include; default: "
            "the run directory when it holds one."
        ),
    ] = None,
    latex: Annotated[
        bool,
        typer.Option(
            "--latex", help="Also write booktabs LaTeX tables (tables/*.tex and tables.tex, a document inputting them)."
        ),
    ] = False,
) -> None:
    """Write report.md and a self-contained report.html with figures (PNG, also PDF and SVG) for one
    run; with --latex, booktabs tables for a paper."""
    analysis.check("report")
    from interbias.analysis.findings_store import saved_findings, write_findings
    from interbias.analysis.reporting.document import write_report
    from interbias.analysis.reporting.headline import headline
    from interbias.analysis.reporting.report import build_report
    from interbias.analysis.suite import analyse
    from interbias.utils.errors import AnalysisError

    if not run_dir.exists():
        raise AnalysisError(f"run directory {run_dir} does not exist")
    opts = analysis.options(run_dir)
    folder = out or (run_dir if run_dir.is_dir() else run_dir.parent)
    base = run_dir if run_dir.is_dir() else run_dir.parent
    if geometry is not None and not (geometry / "geometry.csv").is_file():
        raise AnalysisError(
            f"--geometry {geometry}: no geometry.csv there (run interbias audit geometry --out {geometry})"
        )
    a = analyse(run_dir, opts)
    found = saved_findings(a, base)
    if found is not None:
        echo_wrapped(f"findings: reused {base / 'findings.csv'} (its findings.json: same options and results.csv)")
    elif a.replicates is not None:
        found = headline(a)
        paths = write_findings(a, folder, found)
        echo_wrapped(f"findings: computed here (no matching interbias analyze output in {base}); wrote {paths[0]}")
    geo = geometry or (base if (base / "geometry.csv").is_file() else None)
    rep = build_report(a, geometry_dir=geo, findings=found)
    md, page = write_report(rep, folder)
    echo_wrapped(f"{len(rep.figures)} figure(s); not drawn: {len(rep.omitted)}")
    for msg in rep.omitted:
        echo_wrapped(f"not drawn: {msg}", "  ")
    echo_wrapped(f"wrote {md} and {page}")
    if latex:
        from interbias.analysis.reporting.latex import write_latex

        tex, note = write_latex(a, folder)
        echo_wrapped(f"wrote {tex[0]} and {len(tex) - 1} table(s) in {tex[0].parent / 'tables'}")
        if note:
            echo_wrapped(f"note: {note}")
