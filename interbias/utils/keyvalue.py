"""The one ``KEY=VALUE`` parser of the command line (``degrade --param``, ``corpus --set``,
``cm dsr --attack``): keys and values stripped, a malformed item or a repeated key is one
error naming the option."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from interbias.utils.errors import InterbiasError


def parse_key_values(
    items: Iterable[str],
    *,
    option: str,
    error: type[InterbiasError],
    lists: bool = False,
    key_name: str = "KEY",
) -> dict[str, Any]:
    """``KEY=VALUE`` strings as a mapping (values are strings; with ``lists``, a value holding
    commas becomes the list of its comma-separated parts). ``option`` names the flag in errors
    (``--param 'codec': expected KEY=VALUE``, ``--param codec: given twice``)."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise error(f"{option} {item!r}: expected {key_name}=VALUE")
        if key in out:
            raise error(f"{option} {key}: given twice")
        out[key] = [v.strip() for v in value.split(",")] if lists and "," in value else value.strip()
    return out
