"""``interbias runs``: across runs. Each module of this package registers its commands on
:data:`runs_app`."""

from __future__ import annotations

import typer

from interbias.cli import app

runs_app = typer.Typer(
    help="Across runs: compare two, rank encoders (leaderboard), one page per encoder (card), what a folder holds (inventory).",
    epilog="Example: interbias runs compare base/results.csv new/results.csv --tolerance 0.005",
    no_args_is_help=True,
)
app.add_typer(runs_app, name="runs")
