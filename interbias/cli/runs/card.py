"""``interbias runs card``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from interbias.cli import guarded
from interbias.cli.analysis_options import SeedOpt, TimeOpt
from interbias.cli.numeric import check_numbers
from interbias.cli.runs import runs_app
from interbias.cli.tables import echo_wrapped


@runs_app.command(epilog="Example: interbias runs card CAM++ results/ --out cards")
@guarded
def card(
    label: Annotated[str, typer.Argument(help="Encoder label as in results.csv (e.g. CAM++).")],
    runs: Annotated[list[Path], typer.Argument(help="Run directories, or folders of runs.")],
    out: Annotated[Path, typer.Option(help="Folder for card_<label>.md and card_<label>.html.")] = Path("."),
    bootstrap: Annotated[int, typer.Option(help="Speaker-bootstrap replicates per run.")] = 1000,
    seed: SeedOpt = 0,
    no_time_limit: TimeOpt = False,
) -> None:
    """One page per encoder across runs: identity, macro EER/minDCF with intervals, damaging
    conditions, resolved effects, fairness/spoofing/geometry where present; missing listed."""
    check_numbers("runs card", bootstrap=bootstrap)
    from interbias.analysis.across.encoder_page import build_page, write_page
    from interbias.analysis.across.runs import load
    from interbias.analysis.suite import Options
    from interbias.utils.budget import TIME_LIMIT_S

    skipped: list[str] = []
    limit = None if no_time_limit else TIME_LIMIT_S
    by_metric = {
        m: load(list(runs), Options(m, bootstrap, seed, time_limit_s=limit), skipped if m == "eer" else None)
        for m in ("eer", "min_dcf")
    }
    result = build_page(label, by_metric)
    for note in skipped:
        echo_wrapped(f"note: {note}")
    out.mkdir(parents=True, exist_ok=True)
    md, page = write_page(result, out)
    for msg in result.missing:
        typer.echo(f"missing: {msg}")
    typer.echo(f"wrote {md} and {page}")
