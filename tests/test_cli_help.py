"""Every command's ``--help``: exit 0, its usage line, and every argument and option named
(replaces the per-file help-only tests)."""

from __future__ import annotations

from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from interbias.cli import app

runner = CliRunner()


def commands() -> list[tuple[tuple[str, ...], Any]]:
    """(path of names, command) for every leaf command of the CLI, groups walked."""
    root = typer.main.get_command(app)
    out: list[tuple[tuple[str, ...], Any]] = []

    def walk(cmd: Any, path: tuple[str, ...]) -> None:
        if hasattr(cmd, "commands"):  # a group (typer's vendored click)
            for name, sub in sorted(cmd.commands.items()):
                walk(sub, (*path, name))
        else:
            out.append((path, cmd))

    walk(root, ())
    return out


COMMANDS = commands()


def test_the_walk_finds_the_commands() -> None:
    names = {" ".join(p) for p, _ in COMMANDS}
    assert {"run", "analyze", "report", "validate", "corpus build", "models fetch", "cm-eval eer"} <= names


@pytest.mark.parametrize("path", [p for p, _ in COMMANDS], ids=[" ".join(p) for p, _ in COMMANDS])
def test_help_names_every_argument_and_option(path: tuple[str, ...]) -> None:
    command = dict(COMMANDS)[path]
    res = runner.invoke(app, [*path, "--help"], terminal_width=200)
    assert res.exit_code == 0, res.output
    assert res.output.startswith(f"Usage: interbias {' '.join(path)} ") or res.output.lstrip().startswith("Usage:")
    text = " ".join(res.output.split())
    for param in command.params:
        if param.param_type_name == "argument":
            names = [n for n in (param.name, getattr(param, "metavar", None)) if n]
            assert any(n.lower() in text.lower() for n in names), (names, res.output)
        elif not getattr(param, "hidden", False):
            assert any(opt in text for opt in param.opts), (param.opts, res.output)
