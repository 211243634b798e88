"""``interbias audit``: audits of an encoder's embedding space. Each module of this package
registers its commands on :data:`audit_app`."""

from __future__ import annotations

import typer

from interbias.cli import app

audit_app = typer.Typer(
    help="Audits of an encoder's embedding space (TRIAD/ORCA): geometry, ORCA repair, and the "
    "black-box audit of score-only systems.",
    epilog="Example: interbias audit geometry --encoder CAM++ --sentences 8",
    no_args_is_help=True,
)
app.add_typer(audit_app, name="audit")
