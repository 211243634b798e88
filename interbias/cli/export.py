"""``interbias export``."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from interbias.cli import app, guarded


class Format(StrEnum):
    wespeaker = "wespeaker"
    kaldi = "kaldi"
    csv = "csv"


@app.command(epilog="Example: interbias export results/<run_id> --format kaldi --embeddings")
@guarded
def export(
    run_dir: Annotated[Path, typer.Argument(help="A run directory (results/<run_id>).")],
    format: Annotated[
        Format,
        typer.Option(
            "--format",
            help="wespeaker: <cell>.score 'enrol test score target|nontarget'; kaldi: the same as "
            "<cell>.scores plus <cell>.trials; csv: <cell>.csv with trial ids, speakers, score, label.",
        ),
    ] = Format.wespeaker,
    out: Annotated[Path | None, typer.Option(help="Output folder (default RUN_DIR/export/<format>).")] = None,
    embeddings: Annotated[
        bool,
        typer.Option(
            "--embeddings", help="Also write the cached embeddings per encoder and chain as .npz (ids, vectors)."
        ),
    ] = False,
    cache_dir: Annotated[
        Path | None, typer.Option(help="Embedding cache folder (default: the one the run used).")
    ] = None,
) -> None:
    """Write a run's per-cell score files (and embeddings) for other tools."""
    from interbias.run.export import export_embeddings, export_scores, write_export_summary

    target = out or run_dir / "export" / format.value
    summary = export_scores(run_dir, format.value, target)
    if embeddings:
        summary.embeddings = export_embeddings(run_dir, target, cache_dir=cache_dir)
    path = write_export_summary(summary, format.value, run_dir)
    n_trials = sum(f["n_trials"] for f in summary.files)
    n_dropped = sum(f["n_dropped"] for f in summary.files)
    n_other = sum(f["n_not_measured"] for f in summary.files)
    other = f", {n_other} dev/spoof trials not part of the rows' metrics left out" if n_other else ""
    typer.echo(f"{len(summary.files)} score file(s), {n_trials} trials ({n_dropped} dropped{other}) in {target}")
    for e in summary.embeddings:
        note = f", {e['n_missing']} not in the cache" if e["n_missing"] else ""
        what = f"cohort (pool: {e['pool']})" if e.get("cohort") else "embeddings"
        typer.echo(f"{what} {e['model']} / {e['chain']}: {e['n']} vectors{note} -> {e['file']}")
    typer.echo(f"summary: {path}")
