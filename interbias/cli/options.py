"""Options several commands share, as typer ``Annotated`` aliases: one spelling and one help
text each. ``--set KEY=VALUE`` (repeatable) means one thing: a setting of the record the command
is configured by (a CM's training settings, ORCA's hyper-parameters, a corpus spec's or an
adapter's options). An operator or a chain is ``--op NAME[:KEY=VALUE,...]``
(:mod:`interbias.operators.spec`, the form experiment files take too), its parameters in the
spec; the older spellings ``--op NAME --set KEY=VALUE``, ``--param`` and ``--chain`` still
parse, hidden from ``--help``, and say their new form on stderr."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer


def json_flag(help: str = "Print the result as JSON (nothing else on stdout).") -> Any:
    """The one ``--json`` option, for ``Annotated[bool, json_flag(...)]``; ``help`` says what
    the JSON holds where a command's differs (:data:`JsonOpt` otherwise)."""
    return typer.Option("--json", help=help)


def quiet_flag(help: str = "No progress output.") -> Any:
    """The one ``--quiet`` / ``-q`` option; ``help`` says what it silences where a command's
    differs (:data:`QuietOpt` otherwise)."""
    return typer.Option("--quiet", "-q", help=help)


JsonOpt = Annotated[bool, json_flag()]
QuietOpt = Annotated[bool, quiet_flag()]
WideOpt = Annotated[bool, typer.Option("--wide", help="Print every table in full, at whatever width it needs.")]
#: ``--force``: replace an existing output file the command did not write (interbias.run.outputs).
ForceOpt = Annotated[
    bool,
    typer.Option("--force", help="Replace an existing output file this command did not write (a run's own files too)."),
]
#: ``run`` and ``validate``: where a manifest's relative paths resolve, and recorded noise.
DataRootOpt = Annotated[
    Path | None, typer.Option(help="Folder the manifest's relative paths resolve against (default: its folder).")
]
NoiseDirOpt = Annotated[
    Path | None,
    typer.Option(
        help="Folder of recorded noise (.wav files) for the experiment's environmental-noise levels; "
        "on a --manifest without it those levels are left out and the run and report say so."
    ),
]
#: ``--op NAME --set KEY=VALUE``: the older spelling of ``--op NAME:KEY=VALUE`` (hidden).
OpSetOpt = Annotated[
    list[str] | None,
    typer.Option("--set", metavar="KEY=VALUE", hidden=True, help="Older spelling of --op NAME:KEY=VALUE."),
]
#: ``--param KEY=VALUE``: an older spelling of ``--op NAME:KEY=VALUE`` (hidden).
ParamAlias = Annotated[
    list[str] | None, typer.Option("--param", hidden=True, help="Older spelling of --op NAME:KEY=VALUE.")
]
#: The form an operator's parameters take now.
OP_FORM = "--op NAME:KEY=VALUE"
#: ``--chain SPEC``: the older spelling of a repeated ``--op`` (hidden).
ChainAlias = Annotated[list[str] | None, typer.Option("--chain", hidden=True, help="Older spelling of --op.")]


def older_spelling(old: str, new: str, given: Any) -> None:
    """Say on stderr, once, that option ``old`` is spelt ``new`` now, when it was ``given``."""
    if given:
        typer.echo(f"note: {old} is now {new}", err=True)


def op_settings(set_: list[str] | None, param: list[str] | None) -> dict[str, Any]:
    """The older ``--set`` and ``--param`` items after ``--op`` as one mapping of raw values (a
    key given twice, in either, is an error); each says :data:`OP_FORM` on stderr."""
    from interbias.utils.errors import OperatorError
    from interbias.utils.keyvalue import parse_key_values

    older_spelling("--param", OP_FORM, param)
    older_spelling("--op NAME --set KEY=VALUE", OP_FORM, set_)
    return parse_key_values([*(param or []), *(set_ or [])], option="--set" if set_ else "--param", error=OperatorError)


def operator_or_chain(
    op: list[str] | None, set_: list[str] | None, param: list[str] | None, chain: list[str] | None
) -> tuple[str | None, dict[str, Any], list[str]]:
    """(one operator, its parameters, chain specs) of repeatable ``--op`` with ``--set``
    (:func:`interbias.operators.spec.with_settings`); the older ``--chain`` gives a chain even
    of one operator, as its output has always said."""
    from interbias.operators.spec import with_settings

    older_spelling("--chain", "--op", chain)
    settings = op_settings(set_, param)
    if chain:
        return None, settings, [*(op or []), *chain]
    return with_settings(list(op or []), settings)
