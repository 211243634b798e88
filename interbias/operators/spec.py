"""The one written form of an operator, shared by the command line and the experiment files:
``NAME`` or ``NAME:KEY=VALUE[,KEY=VALUE...]`` (``codec:codec=gsm``, ``noise:snr_db=5,kind=babble``).

On the command line it is ``--op SPEC`` (repeated: a chain, in order); in a YAML chain a
string item in the same form stands for the mapping ``{op: NAME, KEY: VALUE, ...}``. Values stay
strings here; :func:`interbias.operators.make_operator` types them against the operator's
fields and names the valid parameters when a key is unknown.
"""

from __future__ import annotations

from typing import Any

from interbias.utils.errors import OperatorError
from interbias.utils.keyvalue import parse_key_values

#: The form of one operator spec, for messages and help.
SPEC_FORM = "NAME or NAME:KEY=VALUE[,KEY=VALUE...]"


def parse_op_spec(spec: str, *, where: str = "--op") -> tuple[str, dict[str, Any]]:
    """(name, raw parameters) of one spec; a malformed spec or a repeated key is one
    :class:`OperatorError` naming ``where`` and the spec."""
    name, sep, rest = spec.partition(":")
    here = f"{where} {spec!r}"
    if not name.strip() or (sep and not rest.strip()):
        raise OperatorError(f"{here}: expected {SPEC_FORM}")
    params = parse_key_values(rest.split(",") if sep else [], option=f"{here}:", error=OperatorError)
    return name.strip(), params


def op_mapping(spec: str, *, where: str) -> dict[str, Any]:
    """A spec as the YAML mapping ``{op: NAME, KEY: VALUE, ...}``."""
    name, params = parse_op_spec(spec, where=where)
    return {"op": name, **params}


def with_settings(
    specs: list[str], settings: dict[str, Any], *, where: str = "--op"
) -> tuple[str | None, dict[str, Any], list[str]]:
    """``--op`` specs and ``--set`` parameters as (one operator's name, its parameters, chain):
    one spec gives the operator, its parameters merged with ``settings`` (a key in both is an
    error); several give the chain, in order, and then ``settings`` must be empty."""
    if len(specs) > 1:
        if settings:
            raise OperatorError(
                f"--set {next(iter(settings))}: with several {where} give each operator's parameters as NAME:KEY=VALUE"
            )
        return None, {}, list(specs)
    if not specs:
        if settings:
            raise OperatorError(f"--set {next(iter(settings))}: no {where} to apply it to")
        return None, {}, []
    name, params = parse_op_spec(specs[0], where=where)
    both = sorted(set(params) & set(settings))
    if both:
        raise OperatorError(f"{where} {specs[0]!r} and --set both give {both[0]!r}")
    return name, {**params, **settings}, []
