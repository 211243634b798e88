"""``interbias analyze``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from interbias import atomic
from interbias.cli import app, guarded
from interbias.cli.tables import print_frame


@app.command()
@guarded
def analyze(
    results: Annotated[Path, typer.Argument(help="results.csv (or a run directory).")],
    out: Annotated[Path | None, typer.Option(help="Output folder (default: beside the results).")] = None,
    metric: Annotated[str, typer.Option(help="eer, eer_legacy or min_dcf.")] = "eer",
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Do not print tables.")] = False,
) -> None:
    """Additive contrasts (IE, NLI) and their summaries from any DESIGN.md results CSV."""
    from interbias.analysis import read_results
    from interbias.analysis.contrasts import REQUIRED, compute_contrasts, summarize

    if metric not in ("eer", "eer_legacy", "min_dcf"):
        from interbias.errors import AnalysisError

        raise AnalysisError(f"--metric {metric!r}: valid: eer, eer_legacy, min_dcf")
    frame = read_results(results, required=REQUIRED, metric=metric)
    tables = compute_contrasts(frame, metric)
    summary = summarize(tables.contrasts)
    folder = out or (results if results.is_dir() else results.parent)
    atomic.write_csv(folder / "contrasts.csv", tables.contrasts)
    atomic.write_csv(folder / "summary.csv", summary)
    atomic.write_csv(folder / "missing_terms.csv", tables.missing)
    if not quiet:
        print_frame(
            tables.contrasts,
            f"contrasts ({metric})",
            [
                "experiment",
                "model",
                "level_a",
                "level_b",
                f"{metric}_ref",
                f"{metric}_a",
                f"{metric}_b",
                f"{metric}_ab",
                "predicted",
                "ie",
                "nli",
            ],
        )
        print_frame(summary, "summary by experiment × family")
    typer.echo(f"{len(tables.contrasts)} contrast(s), {len(tables.missing)} setting(s) with missing terms")
    typer.echo(f"wrote {folder / 'contrasts.csv'}, {folder / 'summary.csv'}, {folder / 'missing_terms.csv'}")
