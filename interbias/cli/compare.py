"""``interbias compare``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from interbias.cli import app, guarded


@app.command(epilog="Example: interbias compare base/results.csv new/results.csv --tolerance 0.005")
@guarded
def compare(
    base: Annotated[Path, typer.Argument(help="Baseline results.csv.")],
    new: Annotated[Path, typer.Argument(help="New results.csv.")],
    tolerance: Annotated[float, typer.Option(help="Largest allowed |new − base| per metric value.")] = 0.0,
    metrics: Annotated[
        str | None,
        typer.Option(help="Comma-separated metrics (default: eer, eer_legacy, min_dcf, auc present in both)."),
    ] = None,
    show_all: Annotated[
        bool, typer.Option("--all", help="Print every difference, not only those over tolerance.")
    ] = False,
) -> None:
    """Match rows by experiment × cell × model, print differences; exit 1 when a metric moved
    by more than the tolerance or a row is missing from either file."""
    from interbias.analysis.compare import compare_results

    names = tuple(m.strip() for m in metrics.split(",") if m.strip()) if metrics else None
    cmp = compare_results(base, new, tolerance=tolerance, metrics=names)
    shown = cmp.diffs if show_all else cmp.moved
    for r in shown.itertuples(index=False):
        tag = "moved" if r.moved else "same"
        typer.echo(
            f"{tag}: {r.experiment} / {r.cell} / {r.model}: {r.metric} {r.base:.6f} -> {r.new:.6f} ({r.diff:+.6f})"
        )
    for label, frame in (("only in base", cmp.only_base), ("only in new", cmp.only_new)):
        for r in frame.itertuples(index=False):
            typer.echo(f"missing: {label}: {' / '.join(str(v) for v in r)}")
    n_rows = len(cmp.diffs) // max(1, len(cmp.metrics))
    typer.echo(
        f"{n_rows} row(s) matched on {', '.join(cmp.metrics)}; {len(cmp.moved)} value(s) moved by more than "
        f"{tolerance:g}; {len(cmp.only_base) + len(cmp.only_new)} row(s) missing"
    )
    if not cmp.ok:
        raise typer.Exit(1)
