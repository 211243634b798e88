"""``interbias data``: corpora and conditions. Each module of this package registers its
commands on :data:`data_app`."""

from __future__ import annotations

import typer

from interbias.cli import app

data_app = typer.Typer(
    help="Corpora and conditions: build or prepare a corpus manifest, count its attributes, list the "
    "degradation operators and degrade one file.",
    epilog="Example: interbias data build synthetic --speakers 96",
    no_args_is_help=True,
)
app.add_typer(data_app, name="data")
