"""``interbias runs compare``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from interbias.cli import guarded
from interbias.cli.analysis_options import TimeOpt
from interbias.cli.numeric import check_numbers
from interbias.cli.runs import runs_app
from interbias.metrics.registry import results_columns
from interbias.utils.keyvalue import comma_list


@runs_app.command(epilog="Example: interbias runs compare base/results.csv new/results.csv --tolerance 0.005")
@guarded
def compare(
    base: Annotated[Path, typer.Argument(help="Baseline results.csv (or its run folder).")],
    new: Annotated[Path, typer.Argument(help="New results.csv (or its run folder).")],
    tolerance: Annotated[float, typer.Option(help="Largest allowed |new − base| per metric value.")] = 0.0,
    metrics: Annotated[
        str | None,
        typer.Option(help=f"Comma-separated metrics (default: {', '.join(results_columns())} present in both)."),
    ] = None,
    show_all: Annotated[
        bool, typer.Option("--all", help="Print every difference, not only those over tolerance.")
    ] = False,
    paired: Annotated[
        bool,
        typer.Option(
            "--paired",
            help="Two runs on one trial list (same trials_sha256, per-trial scores): test each row's paired "
            "difference with a speaker bootstrap instead of a fixed tolerance.",
        ),
    ] = False,
    margin: Annotated[
        float, typer.Option(help="--paired: exit 1 only for a regression larger than this, resolved after Holm.")
    ] = 0.0,
    equivalence: Annotated[
        float | None,
        typer.Option(help="--paired: exit 0 only when every row is shown within +/- this (two one-sided tests)."),
    ] = None,
    alpha: Annotated[float, typer.Option(help="--paired: significance level.")] = 0.05,
    bootstrap: Annotated[
        int, typer.Option(help="--paired: speaker-bootstrap replicates (at least 200; 50 for the speaker design).")
    ] = 1000,
    bootstrap_design: Annotated[
        str,
        typer.Option(
            help="--paired: corrected (the findings' SE, t test) or speaker (the plain speaker-bootstrap SE, z test)."
        ),
    ] = "corrected",
    no_time_limit: TimeOpt = False,
) -> None:
    """Match rows by experiment × cell × model, print differences; exit 1 when a metric moved
    by more than the tolerance or a row is missing from either file. With --paired (two run
    directories on one trial list): exit 1 only when a regression larger than --margin is
    resolved, or with --equivalence only when some row is not shown within the margin."""
    check_numbers(
        "runs compare", tolerance=tolerance, margin=margin, equivalence=equivalence, alpha=alpha, bootstrap=bootstrap
    )
    from interbias.analysis.across.compare import compare_results
    from interbias.corpora.fingerprint import corpora_differ

    names = tuple(comma_list(metrics)) if metrics else None
    if warning := corpora_differ(base, new):
        typer.echo(warning, err=True)
    if paired:
        _paired(base, new, names, margin, equivalence, alpha, (bootstrap, bootstrap_design, no_time_limit), show_all)
        return
    if margin or equivalence is not None:
        from interbias.utils.errors import AnalysisError

        raise AnalysisError("--margin and --equivalence need --paired (without it, --tolerance is the gate)")
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


def _paired(
    base: Path,
    new: Path,
    names: tuple[str, ...] | None,
    margin: float,
    equivalence: float | None,
    alpha: float,
    boot: tuple[int, str, bool],
    show_all: bool,
) -> None:
    from interbias.analysis.across.compare_paired import compare_paired
    from interbias.utils.budget import TIME_LIMIT_S

    cmp = compare_paired(
        base,
        new,
        metrics=names,
        margin=margin,
        equivalence=equivalence,
        alpha=alpha,
        n_boot=boot[0],
        design=boot[1],
        time_limit_s=None if boot[2] else TIME_LIMIT_S,
    )
    for r in cmp.rows.itertuples(index=False):
        if r.left_out:
            if show_all:
                typer.echo(f"left out: {r.experiment} / {r.cell} / {r.model}: {r.metric} ({r.left_out})")
            continue
        if equivalence is not None:
            tag, flagged = ("within" if r.equivalent else "not shown within"), not r.equivalent
            test = f"p_tost {r.p_equivalence:.3g}"
        else:
            tag, flagged = ("regression" if r.regression else "no resolved regression"), bool(r.regression)
            test = f"p {r.p_regression:.3g}, Holm {r.p_holm:.3g}"
        if flagged or show_all:
            typer.echo(
                f"{tag}: {r.experiment} / {r.cell} / {r.model}: {r.metric} {r.base:.6f} -> {r.new:.6f} "
                f"({r.diff:+.6f}, SE {r.se:.6f}, {test})"
            )
    for label, frame in (("only in base", cmp.only_base), ("only in new", cmp.only_new)):
        for r in frame.itertuples(index=False):
            typer.echo(f"missing: {label}: {' / '.join(str(v) for v in r)}")
    typer.echo(cmp.family)
    tested = cmp.rows[cmp.rows.left_out == ""]
    if equivalence is not None:
        typer.echo(f"{int(tested.equivalent.sum())} of {len(tested)} value(s) shown within +/-{equivalence:g}")
    else:
        typer.echo(f"{int(tested.regression.sum())} of {len(tested)} value(s) with a resolved regression")
    if not cmp.ok:
        raise typer.Exit(1)
