"""One rule for every numeric option: each int or float option of every command has a range,
and a value outside it (NaN, infinite, below or above the range) is refused in one line, exit 1,
before the command reads anything."""

from __future__ import annotations

import inspect
import math
import typing
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from interbias.cli import app
from interbias.cli.numeric import RANGES, Range, range_of

runner = CliRunner()
#: Options that take any whole number (hashed into derived seeds).
ANY_INT = {"--seed"}


def _numeric_params(fn: typing.Any) -> dict[str, type]:
    """Parameter name -> int or float, from the command function's annotations."""
    hints = typing.get_type_hints(inspect.unwrap(fn), include_extras=True)
    out = {}
    for name, hint in hints.items():
        base = typing.get_args(hint)[0] if typing.get_origin(hint) is typing.Annotated else hint
        kinds = set(typing.get_args(base)) - {type(None)} or {base}
        if len(kinds) == 1 and kinds <= {int, float}:
            out[name] = kinds.pop()
    return out


def _commands() -> list[tuple[list[str], typing.Any]]:
    """(command path, click command) of every visible command."""
    out = []

    def walk(cmd: typing.Any, path: list[str]) -> None:
        if getattr(cmd, "hidden", False):
            return
        if hasattr(cmd, "commands"):
            for name, sub in cmd.commands.items():
                walk(sub, [*path, name])
        else:
            out.append((path, cmd))

    walk(typer.main.get_command(app), [])
    return out


def _options() -> list[tuple[list[str], typing.Any, str, type]]:
    """(command path, command, flag, int or float) of every numeric option."""
    out = []
    for path, cmd in _commands():
        flags = {p.name: p.opts[0] for p in cmd.params}
        for name, kind in _numeric_params(cmd.callback).items():
            if name in flags:
                out.append((path, cmd, flags[name], kind))
    return out


def _bad_values(r: Range, kind: type) -> list[str]:
    """Values outside ``r`` that the option's type parses."""
    out = [] if kind is int else ["nan", "inf"]
    if math.isfinite(r.low):
        out.append(str(int(r.low) - 1) if kind is int else str(float(r.low if r.low_open else r.low - 0.5)))
    if math.isfinite(r.high):
        out.append(str(int(r.high) + 1) if kind is int else str(float(r.high if r.high_open else r.high + 0.5)))
    return out


CASES = [
    pytest.param(path, flag, value, id=f"{' '.join(path)} {flag} {value}")
    for path, _, flag, kind in _options()
    if flag not in ANY_INT
    for value in _bad_values(range_of(flag, " ".join(path)), kind)
]


def test_every_numeric_option_has_a_range() -> None:
    options = _options()
    assert len(options) > 60  # every command's, found from the command line itself
    missing = [f"{' '.join(p)} {flag}" for p, _, flag, _ in options if flag not in ANY_INT and flag not in RANGES]
    assert missing == []


def _argv(cmd: typing.Any, path: list[str], placeholder: Path) -> list[str]:
    """The command with a placeholder for each required argument or option."""
    argv = list(path)
    for p in cmd.params:
        if p.required:
            argv += [str(placeholder)] if p.param_type_name == "argument" else [p.opts[0], str(placeholder)]
    return argv


@pytest.mark.parametrize(("path", "flag", "value"), CASES)
def test_a_value_outside_the_range_is_one_line_before_any_work(path, flag, value, tmp_path) -> None:
    placeholder = tmp_path / "missing.csv"  # never read: the numbers are checked first
    cmd = dict((tuple(p), c) for p, c in _commands())[tuple(path)]
    res = runner.invoke(app, [*_argv(cmd, path, placeholder), flag, value])
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert res.exit_code == 1, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)
    want = f"error: {flag} must be " + ("a whole number" if value.lstrip("-").isdigit() else "a finite number")
    assert len(lines) == 1 and lines[0].startswith(want), res.output
    assert list(tmp_path.iterdir()) == []


def test_a_number_inside_a_comma_list_follows_the_same_rule(tmp_path) -> None:
    path = ["audit", "blackbox", "prepare"]
    cmd = dict((tuple(p), c) for p, c in _commands())[tuple(path)]
    res = runner.invoke(app, [*_argv(cmd, path, tmp_path / "missing.csv"), "--noise-snr", "15,nan"])
    assert res.exit_code == 1 and res.output == "error: --noise-snr must be a finite number, got nan\n"
