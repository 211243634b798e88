"""``interbias scores``: metrics of score files. Each module of this package registers its
commands on :data:`scores_app`."""

from __future__ import annotations

import typer

from interbias.cli import app

scores_app = typer.Typer(
    help="Metrics of score files: EER, minDCF and AUC; group fairness; countermeasure metrics (cm-eval).",
    epilog="Example: interbias scores metrics scores.txt --json",
    no_args_is_help=True,
)
app.add_typer(scores_app, name="scores")
