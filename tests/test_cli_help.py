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
                if not sub.hidden:  # an old name kept as an alias: tests/test_cli_aliases.py
                    walk(sub, (*path, name))
        else:
            out.append((path, cmd))

    walk(root, ())
    return out


COMMANDS = commands()


def test_the_walk_finds_the_commands() -> None:
    names = {" ".join(p) for p, _ in COMMANDS}
    assert {"run", "analyze", "report", "validate", "data build", "encoders fetch", "scores cm-eval eer"} <= names


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


def test_commands_are_grouped_into_panels_and_flags_show_no_type() -> None:
    """``interbias --help`` lists at most 14 entries in panels (run, analyse, models/audits/data),
    every entry in one; no flag shows a ``<bool>`` value it does not take."""
    from interbias.cli import PANELS

    res = runner.invoke(app, ["--help"], terminal_width=200)
    assert res.exit_code == 0
    heads = [line.strip("╭─╮ ") for line in res.output.splitlines() if line.startswith("╭─")]
    assert heads == ["Options", "Run", "Analyse", "Models, audits, data"]
    top = {p[0] for p, _ in COMMANDS}
    assert top == {name for names in PANELS.values() for name in names}
    assert len(top) <= 14
    for path in [(), *{(p[0],) for p, _ in COMMANDS}, ("validate",), ("run",), ("audit", "repair")]:
        out = runner.invoke(app, [*path, "--help"], terminal_width=200).output
        assert "<bool>" not in out, (path, out)
    assert "--json " in runner.invoke(app, ["validate", "--help"], terminal_width=200).output


def test_help_paragraphs_flow() -> None:
    """A docstring's line breaks do not break a help sentence: within a paragraph only list
    items start a new line."""
    from interbias.cli import flowing

    assert flowing(
        "One long\n    sentence here.\n\n    Second\n    paragraph:\n    - item one\n      goes on\n    - two"
    ) == ("One long sentence here.\n\nSecond paragraph:\n- item one goes on\n- two")
    for path, command in COMMANDS:
        for para in (command.help or "").split("\n\n"):
            for line in para.split("\n")[1:]:
                assert line.lstrip().startswith(("- ", "* ")) or para.startswith("\b"), (path, para)
