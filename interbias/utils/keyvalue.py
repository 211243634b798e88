"""The one ``KEY=VALUE`` parser of the command line (``--set`` of ``data degrade``, ``cm score``,
``data build``; ``cm dsr --attack``): keys and values stripped, a malformed item or a repeated key is one
error naming the option; :func:`typed_overrides` reads such values into a dataclass's fields
(``cm train --set``); :func:`comma_list` splits a comma-separated option."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import fields
from typing import Any

from interbias.utils.errors import ConfigError, InterbiasError


def comma_list(text: str) -> list[str]:
    """The items of a comma-separated option, stripped; empty items dropped ("a, ,b" -> [a, b])."""
    return [x.strip() for x in text.split(",") if x.strip()]


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


def typed_overrides(config: Any, pairs: dict[str, str], where: str) -> dict[str, Any]:
    """``pairs`` as values of the dataclass ``config``'s fields: int or float after the field's
    type, ``max_per_class`` also ``none``/``all``/empty (None). An unknown key or a value that is
    not a number is one :class:`~interbias.utils.errors.ConfigError` line starting ``where``."""
    kinds = {f.name: f.type for f in fields(config)}
    kw: dict[str, Any] = {}
    for k, v in pairs.items():
        if k not in kinds:
            raise ConfigError(f"{where}: unknown setting {k!r}; valid: {', '.join(kinds)}")
        try:
            if k == "max_per_class":
                kw[k] = None if v.lower() in ("", "none", "all") else int(v)
            else:
                kw[k] = (float if "float" in str(kinds[k]) else int)(v)
        except ValueError:
            raise ConfigError(f"{where}: {k}={v!r} is not a number") from None
    return kw


def typed_settings(
    record: Any, pairs: dict[str, str], where: str, *, keys: Iterable[str] | None = None
) -> dict[str, Any]:
    """``--set`` values typed against the dataclass ``record``'s fields (``keys``: only these
    may be set): int, float, bool (true/false, yes/no, 1/0), ``X | None`` (``none``), a tuple
    (comma-separated). An unknown key or a value of the wrong type is one
    :class:`~interbias.utils.errors.ConfigError` starting ``where`` that lists the valid keys."""
    kinds = {f.name: str(f.type) for f in fields(record)}
    valid = [k for k in kinds if keys is None or k in set(keys)]
    out: dict[str, Any] = {}
    for key, text in pairs.items():
        if key not in valid:
            raise ConfigError(f"{where}: unknown setting {key!r}; valid: {', '.join(valid)}")
        out[key] = _typed(text, kinds[key], f"{where}: {key}={text!r}")
    return out


def _typed(text: str, kind: str, where: str) -> Any:
    """``text`` as a value of the annotation ``kind`` (a string, as ``from __future__ import
    annotations`` leaves it)."""
    if "None" in kind and text.lower() in ("none", ""):
        return None
    base = kind.replace("| None", "").strip()
    if base.startswith("tuple"):
        return tuple(comma_list(text))
    try:
        if base == "bool":
            flag = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}.get(text.lower())
            if flag is None:
                raise ValueError(text)
            return flag
        if base == "int":
            return int(text)
        if base == "float":
            return float(text)
    except ValueError:
        raise ConfigError(f"{where} is not {'a ' + base if base != 'int' else 'an int'}") from None
    return text
