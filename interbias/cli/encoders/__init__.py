"""``interbias encoders``: speaker encoders. Each module of this package registers its commands
on :data:`encoders_app`; the group run with options only runs ``encoders list``
(:class:`interbias.cli.layout.DefaultCommandGroup`)."""

from __future__ import annotations

import typer

from interbias.cli import app
from interbias.cli.layout import DefaultCommandGroup

encoders_app = typer.Typer(
    help="Speaker encoders: list the labels, fetch and verify their checkpoints, embed audio files.",
    epilog="Example: interbias encoders list --json",
)
app.add_typer(encoders_app, name="encoders", cls=DefaultCommandGroup)
