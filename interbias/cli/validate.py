"""``interbias validate``: check experiment files and say what a run of each would do."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from interbias.cli import app, guarded
from interbias.cli.options import DataRootOpt, NoiseDirOpt, json_flag
from interbias.cli.tables import echo_wrapped
from interbias.utils.keyvalue import comma_list
from interbias.utils.progress import terminal_width, wrapped

EPILOG = "Example: interbias validate conditions/*.yaml"


@app.command(epilog=EPILOG)
@guarded
def validate(
    files: Annotated[list[Path], typer.Argument(help="Experiment YAML files (e.g. conditions/*.yaml).")],
    encoders: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated encoder labels the run would use (default CAM++,GE2E,mfcc-stats, less any "
            "the experiment cannot run, named in a note)."
        ),
    ] = None,
    corpus: Annotated[
        str | None, typer.Option(help="Check only this variant (or corpus name) instead of the file and every variant.")
    ] = None,
    cache_dir: Annotated[
        Path | None,
        typer.Option(help="Cache folder where a built synthetic corpus is looked up (default $INTERBIAS_CACHE)."),
    ] = None,
    manifest: Annotated[
        Path | None,
        typer.Option(help="Judge the experiment on your corpus (as run --manifest): what it lacks, one line each."),
    ] = None,
    data_root: DataRootOpt = None,
    noise_dir: NoiseDirOpt = None,
    as_json: Annotated[bool, json_flag("Print JSON: per file, its estimates and errors.")] = False,
) -> None:
    """Parse and resolve each experiment file (variants, defaults, operators, trial spec), check
    the encoder labels, say whether it runs here, and estimate its grid, embeddings and time —
    without running anything or touching a run directory. One line per error on stderr; exit 1
    when any file has an error."""
    from interbias.run.estimate import busy_note
    from interbias.run.validate import UserData, validate_file

    labels = comma_list(encoders) if encoders is not None else None
    if labels is not None and not labels:
        typer.echo(f"error: --encoders names no encoder ({encoders!r})", err=True)
        raise typer.Exit(1)
    data = UserData(manifest, data_root, noise_dir)
    reports = [validate_file(f, encoders=labels, corpus=corpus, cache=cache_dir, data=data) for f in files]
    if as_json:
        out = [
            {"file": str(r.path), "estimates": [e.as_dict() for e in r.estimates], "errors": r.errors} for r in reports
        ]
        typer.echo(json.dumps(out, indent=2))
    else:
        for r in reports:
            for e in r.estimates:
                for line in e.lines():
                    text = line.lstrip(" ")
                    echo_wrapped(text, " " * (len(line) - len(text)))
        timed = [e for r in reports for e in r.estimates if e.seconds_now is not None]
        if timed and (note := busy_note(timed[0].cores, timed[0].load)):
            echo_wrapped(note)
    errors = [f"error: {r.path}: {msg}" for r in reports for msg in dict.fromkeys(r.errors)]
    for line in errors:
        typer.echo(wrapped(line, terminal_width(sys.stderr)), err=True)
    n_ok = sum(not r.errors for r in reports)
    if not as_json:
        typer.echo(f"{n_ok} of {len(reports)} file(s) valid")
    if errors:
        raise typer.Exit(1)
