"""``interbias encoders fetch|verify|status``: fetch encoder checkpoints, pinned and hash-locked."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from interbias.cli import guarded
from interbias.cli.encoders import encoders_app
from interbias.cli.options import JsonOpt


def _labels(labels: list[str] | None, all_: bool, default: list[str]) -> list[str]:
    from interbias.encoders import ENCODERS
    from interbias.utils.errors import EncoderError

    if all_ and labels:
        raise EncoderError("give labels or --all, not both")
    if all_:
        return default
    if not labels:
        raise EncoderError("give one or more labels, or --all")
    for label in labels:
        ENCODERS.get(label)  # unknown label: one error listing the known ones
    return list(labels)


@encoders_app.command("fetch", epilog="Example: interbias encoders fetch ECAPA-TDNN WavLM-Base+")
@guarded
def fetch(
    labels: Annotated[list[str] | None, typer.Argument(help="Encoder labels (see `interbias encoders list`).")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Every label that has a public source.")] = False,
    revision: Annotated[
        str | None, typer.Option(help="Branch, tag or commit to resolve (default main; the lock's when pinned).")
    ] = None,
    update: Annotated[
        bool, typer.Option("--update", help="Resolve the revision again and re-pin models.lock.")
    ] = False,
) -> None:
    """Download each label's files into its folder, check their hashes, and pin them in models.lock.

    Honours HF_ENDPOINT, HF_TOKEN, HF_HUB_CACHE and proxy variables. Labels whose weights are
    not hub files print the exact commands to place them by hand."""
    from interbias.encoders.hub import SOURCES, fetch

    for label in _labels(labels, all_, list(SOURCES)):
        result = fetch(label, revision=revision, update=update, log=lambda m: typer.echo(m, err=True))
        if result.action == "by hand":
            typer.echo(f"{label}: fetch by hand:")
            for line in result.message.splitlines():
                typer.echo(f"  {line}")
        else:
            typer.echo(result.message)


@encoders_app.command("verify", epilog="Example: interbias encoders verify")
@guarded
def verify(
    labels: Annotated[list[str] | None, typer.Argument(help="Labels to check (default: every locked label).")] = None,
) -> None:
    """Hash every file models.lock pins, without loading any model; exit 1 on any difference."""
    from interbias.encoders.hub import label_state
    from interbias.encoders.models_lock import models_lock_path, read_models_lock
    from interbias.utils.errors import EncoderError

    locked = read_models_lock()
    chosen = labels or sorted(locked)
    if not chosen:
        raise EncoderError(f"{models_lock_path()} pins no label (run `interbias encoders fetch` first)")
    bad = []
    for label in chosen:
        if label not in locked:
            raise EncoderError(f"{label}: not pinned in {models_lock_path()}")
        state = label_state(label, hashes=True)
        typer.echo(f"{label}: {'ok' if state.state == 'fetched' else state.state}: {state.detail}")
        if state.state != "fetched":
            bad.append(label)
    if bad:
        raise EncoderError(f"{len(bad)} label(s) differ from {models_lock_path()}: {', '.join(bad)}")


@encoders_app.command("status", epilog="Example: interbias encoders status --quick")
@guarded
def list_models(
    as_json: JsonOpt = False,
    quick: Annotated[bool, typer.Option("--quick", help="Compare locked files by size only (no hashing).")] = False,
) -> None:
    """Each label's state: fetched (locked revision), placed by hand, missing, or lock mismatch;
    then each countermeasure label (cm present / cm missing, with how to get it)."""
    from interbias.cm.models import model_states
    from interbias.encoders import ENCODERS
    from interbias.encoders.hub import label_state

    states = [label_state(label, hashes=not quick) for label in ENCODERS.names()]
    cms = model_states()  # countermeasures (interbias cm models)
    if as_json:
        typer.echo(json.dumps([s.as_dict() for s in states] + [{**c, "kind": "cm"} for c in cms], indent=2))
        return
    for s in states:
        detail = f"  {s.detail}" if s.detail else ""
        typer.echo(f"{s.label:17s} {s.state:15s}{detail}")
    for c in cms:
        typer.echo(f"{c['label']:17s} {'cm ' + c['state']:15s}  {c['detail']}")
