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
from interbias.cli.layout import OLD_NAMES, renamed

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
    for old, new in OLD_NAMES.items():
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


def test_an_old_name_of_no_command_is_an_error_naming_the_table(monkeypatch) -> None:
    """An old name pointing at a path nothing registered would alias nothing: refused at import."""
    from interbias.cli import layout

    root, data = typer.Typer(), typer.Typer()
    root.add_typer(data, name="data")
    data.command("build")(lambda: None)
    monkeypatch.setattr(layout, "OLD_NAMES", {("corpus", "x"): ("data", "x")})
    with pytest.raises(RuntimeError, match="OLD_NAMES: no command `interbias data x`"):
        layout.add_old_names(root)
    monkeypatch.setattr(layout, "OLD_NAMES", {("corpus", "build"): ("data", "build")})
    layout.add_old_names(root)
    old = next(g for g in root.registered_groups if g.name == "corpus")
    assert old.hidden and [layout.command_name(c) for c in old.typer_instance.registered_commands] == ["build"]


def test_a_command_with_no_old_name_has_no_alias() -> None:
    """Only the names of :data:`OLD_NAMES` are aliases: ``runs inventory`` (born in its noun)
    has no second, hidden path."""
    hidden = {path for path, cmd in TREE.items() if path and TREE[path[:1]].hidden}
    assert {old[:1] for old in OLD_NAMES} == {path[:1] for path in hidden}
    assert not any(path[-1] == "inventory" for path in hidden)


def test_a_command_copied_and_not_renamed_is_an_error_naming_both_places() -> None:
    """typer would let the second ``compare`` hide the first: the CLI refuses at import."""
    from interbias.cli import one_name_each

    root, runs = typer.Typer(), typer.Typer()
    root.add_typer(runs, name="runs")
    runs.command("compare")(lambda: None)
    runs.command("leaderboard")(lambda: None)
    one_name_each(root)
    runs.command("compare")(lambda: None)
    with pytest.raises(RuntimeError, match=r"`interbias runs compare` is registered twice \(test_cli_aliases, "):
        one_name_each(root)
