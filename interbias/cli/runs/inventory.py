"""``interbias runs inventory``: what a folder of runs holds (the seed paper's Tables 5/6)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from interbias.cli import guarded
from interbias.cli.options import ForceOpt, WideOpt
from interbias.cli.runs import runs_app
from interbias.cli.tables import echo_wrapped, print_frame


@runs_app.command("inventory", epilog="Example: interbias runs inventory results/")
@guarded
def inventory(
    folders: Annotated[list[Path], typer.Argument(help="Run directories, or folders holding runs.")],
    out: Annotated[Path | None, typer.Option(help="Write the inventory to this CSV file.")] = None,
    wide: WideOpt = False,
    force: ForceOpt = False,
) -> None:
    """One row per run: experiment, corpus, encoders, cells, scored rows, trials, and the pooled
    EER, minDCF, AUC and FRR at FAR 1 % (mean ± SD over the run's results rows)."""
    from interbias.analysis.across.inventory import display
    from interbias.analysis.across.inventory import inventory as build
    from interbias.run.outputs import check_output, csv_header
    from interbias.utils import atomic

    frame = build(folders)
    if out is not None:
        check_output(out, force=force, header=csv_header(frame))
    print_frame(display(frame), f"{len(frame)} run(s)", wide=wide, full=str(out) if out else None)
    if out is not None:
        atomic.write_csv(out, frame)
        echo_wrapped(f"wrote {out}")
