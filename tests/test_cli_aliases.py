"""The command line of nouns: at most 14 top-level entries, and every old command name still
runs the same function, hidden from ``--help``, after one stderr line naming its new path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from interbias.cli import app
from interbias.cli.layout import MOVES, renamed

runner = CliRunner()


def click_tree() -> dict[tuple[str, ...], Any]:
    """Every command and group of the CLI, hidden ones included, by path."""
    found: dict[tuple[str, ...], Any] = {}

    def walk(cmd: Any, path: tuple[str, ...]) -> None:
        found[path] = cmd
        for name, sub in getattr(cmd, "commands", {}).items():
            walk(sub, (*path, name))

    walk(typer.main.get_command(app), ())
    return found


TREE = click_tree()


def old_paths() -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    """(old path, new path) of every leaf command that moved, a moved group's commands walked."""
    out = []
    for new, old in MOVES.items():
        for path in TREE:
            if path[: len(new)] == new and not hasattr(TREE[path], "commands"):
                out.append(((*old, *path[len(new) :]), path))
    return out


OLD = old_paths()


def test_help_lists_at_most_14_entries_and_no_old_name() -> None:
    shown = [name for name, cmd in TREE[()].commands.items() if not cmd.hidden]
    assert len(shown) <= 14, shown
    res = runner.invoke(app, ["--help"], terminal_width=200)
    listed = {line.split()[1] for line in res.output.splitlines() if line.startswith("│ ") and len(line.split()) > 1}
    assert set(shown) <= listed
    hidden = {old[0] for old, _ in OLD} - set(shown)
    assert hidden and not hidden & listed, hidden & listed


@pytest.mark.parametrize("old,new", OLD, ids=[" ".join(o) for o, _ in OLD])
def test_every_old_name_resolves_to_a_command_with_the_same_options(old: tuple[str, ...], new: tuple[str, ...]) -> None:
    """An old path is a command (or, for ``encoders``, the group that runs its default) taking
    the new command's arguments and options."""
    if old == ("encoders",):
        assert new == ("encoders", "list")
        return
    assert old in TREE and TREE[old[:1]].hidden, old
    assert [p.opts for p in TREE[old].params] == [p.opts for p in TREE[new].params]


def two_score_files(tmp_path: Path) -> Path:
    rng = np.random.default_rng(7)
    path = tmp_path / "scores.txt"
    rows = [f"a b {s:.6f} target" for s in rng.normal(1.0, 1.0, 40)]
    rows += [f"a c {s:.6f} nontarget" for s in rng.normal(-1.0, 1.0, 40)]
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.mark.parametrize(
    "old,new",
    [
        (["operators", "--json"], ["data", "operators", "--json"]),
        (["encoders", "--json"], ["encoders", "list", "--json"]),
        (["models", "list", "--json", "--quick"], ["encoders", "status", "--json", "--quick"]),
        (["metrics", "{scores}", "--json"], ["scores", "metrics", "{scores}", "--json"]),
    ],
)
def test_an_old_name_prints_the_same_output_and_its_new_name_once_on_stderr(
    old: list[str], new: list[str], tmp_path: Path
) -> None:
    scores = str(two_score_files(tmp_path))
    old = [scores if a == "{scores}" else a for a in old]
    new = [scores if a == "{scores}" else a for a in new]
    before = runner.invoke(app, old)
    after = runner.invoke(app, new)
    assert before.exit_code == after.exit_code == 0, before.output
    assert before.stdout == after.stdout and json.loads(before.stdout)
    old_name = " ".join(w for w in old if not w.startswith("-") and w != scores)
    new_name = " ".join(w for w in new if not w.startswith("-") and w != scores)
    assert before.stderr == renamed(old_name, new_name) + "\n"
    assert after.stderr == ""


def test_an_old_group_name_keeps_its_help() -> None:
    res = runner.invoke(app, ["cm-eval", "--help"])
    assert res.exit_code == 0 and "eer" in res.output
    assert runner.invoke(app, ["corpus", "build", "--help"]).exit_code == 0


def test_a_command_left_in_a_dissolved_group_or_a_move_of_nothing_is_an_error(monkeypatch) -> None:
    """A command added to an old group that MOVES does not place would vanish: arranging refuses."""
    from interbias.cli import layout

    def fresh() -> typer.Typer:
        root, old = typer.Typer(), typer.Typer()
        root.add_typer(old, name="corpus")
        old.command("build")(lambda: None)
        old.command("extra")(lambda: None)
        return root

    monkeypatch.setattr(layout, "GROUPS", {"data": ("Data.", "Example: interbias data build")})
    monkeypatch.setattr(layout, "MOVES", {("data", "build"): ("corpus", "build")})
    with pytest.raises(RuntimeError, match="corpus extra in no group"):
        layout.arrange_nouns(fresh())
    monkeypatch.setattr(layout, "MOVES", {("data", "build"): ("corpus", "build"), ("data", "x"): ("corpus", "x")})
    with pytest.raises(RuntimeError, match="no command `corpus x`"):
        layout.arrange_nouns(fresh())
