"""``interbias runs leaderboard``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from interbias.cli import guarded
from interbias.cli.analysis_options import MetricOpt, SeedOpt, TimeOpt
from interbias.cli.numeric import check_numbers
from interbias.cli.runs import runs_app
from interbias.cli.tables import echo_wrapped, print_frame


@runs_app.command(epilog="Example: interbias runs leaderboard results/ --out leaderboard")
@guarded
def leaderboard(
    runs: Annotated[list[Path], typer.Argument(help="Run directories, or a folder of runs.")],
    metric: MetricOpt = "eer",
    bootstrap: Annotated[int, typer.Option(help="Speaker-bootstrap replicates per run.")] = 1000,
    seed: SeedOpt = 0,
    ci_level: Annotated[float, typer.Option(help="Confidence level of intervals and rank separations.")] = 0.95,
    out: Annotated[Path | None, typer.Option(help="Folder for leaderboard.csv and leaderboard_pairs.csv.")] = None,
    no_time_limit: TimeOpt = False,
) -> None:
    """Encoders × experiments with intervals, the macro column and a rank that separates two
    encoders only when their paired bootstrap difference is significant after Holm's adjustment over all pairs."""
    check_numbers("runs leaderboard", bootstrap=bootstrap, ci_level=ci_level)
    from interbias.analysis.across import leaderboard as lb
    from interbias.analysis.across.runs import load
    from interbias.analysis.suite import Options
    from interbias.utils import atomic
    from interbias.utils.budget import TIME_LIMIT_S

    skipped: list[str] = []
    limit = None if no_time_limit else TIME_LIMIT_S
    loaded = load(list(runs), Options(metric, bootstrap, seed, "speaker", ci_level, time_limit_s=limit), skipped)
    board = lb.build(loaded)
    print_frame(
        board.display(), f"{metric} per encoder and experiment (mean over cells) [{100 * ci_level:g}% interval]"
    )
    for note in [*skipped, *board.notes]:
        echo_wrapped(f"note: {note}")
    typer.echo(
        f"rank: 1 + the longest chain of encoders separated from it and better in macro {metric}; separated: "
        f"paired speaker-bootstrap difference with Holm-adjusted p < {1 - ci_level:.2g} over all pairs; "
        "equal ranks are ties"
    )
    if out is not None:
        atomic.write_csv(out / "leaderboard.csv", board.table)
        atomic.write_csv(out / "leaderboard_pairs.csv", board.pairs)
        typer.echo(f"wrote {out / 'leaderboard.csv'} and {out / 'leaderboard_pairs.csv'}")
