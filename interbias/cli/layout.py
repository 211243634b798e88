"""Where each command lives: the nouns of ``interbias --help`` and the old names kept as aliases.

Each command module registers its commands on the root app under the name it has always had;
:func:`arrange_nouns` then moves them into the noun groups of :data:`MOVES` and leaves each old
name behind as a hidden alias that runs the same function and first says its new name, once, on
stderr (so scripts written for the old names keep working). A command registered on the root
and not moved stays a top-level entry (``run``, ``analyze``, ...).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from typing import Any

import typer
from typer.core import TyperGroup
from typer.models import CommandInfo, TyperInfo

#: The noun groups: name -> (help, example).
GROUPS: dict[str, tuple[str, str]] = {
    "runs": (
        "Across runs: compare two, rank encoders (leaderboard), one page per encoder (card), what a folder holds (inventory).",
        "Example: interbias runs compare base/results.csv new/results.csv --tolerance 0.005",
    ),
    "scores": (
        "Metrics of score files: EER, minDCF and AUC; group fairness; countermeasure metrics (cm-eval).",
        "Example: interbias scores metrics scores.txt --json",
    ),
    "encoders": (
        "Speaker encoders: list the labels, fetch and verify their checkpoints, embed audio files.",
        "Example: interbias encoders list --json",
    ),
    "audit": (
        "Audits of an encoder's embedding space (TRIAD/ORCA): geometry, ORCA repair, and the "
        "black-box audit of score-only systems.",
        "Example: interbias audit geometry --encoder CAM++ --sentences 8",
    ),
    "data": (
        "Corpora and conditions: build or prepare a corpus manifest, count its attributes, list the "
        "degradation operators and degrade one file.",
        "Example: interbias data build synthetic --speakers 96",
    ),
}

#: Each moved command: its path now -> the path its module registers it under (its old name).
MOVES: dict[tuple[str, ...], tuple[str, ...]] = {
    ("runs", "compare"): ("compare",),
    ("runs", "leaderboard"): ("leaderboard",),
    ("runs", "card"): ("card",),
    ("scores", "metrics"): ("metrics",),
    ("scores", "fairness"): ("fairness",),
    ("scores", "cm-eval"): ("cm-eval",),
    ("encoders", "list"): ("encoders",),
    ("encoders", "status"): ("models", "list"),
    ("encoders", "fetch"): ("models", "fetch"),
    ("encoders", "verify"): ("models", "verify"),
    ("encoders", "embed"): ("embed",),
    ("audit", "geometry"): ("geometry",),
    ("audit", "repair"): ("repair",),
    ("audit", "blackbox"): ("blackbox",),
    ("data", "build"): ("corpus", "build"),
    ("data", "prepare"): ("corpus", "prepare"),
    ("data", "info"): ("corpus", "info"),
    ("data", "operators"): ("operators",),
    ("data", "degrade"): ("degrade",),
}

#: A group run with options only (or nothing) runs this command of it: ``interbias encoders
#: --json`` is ``interbias encoders list --json``, as the old ``encoders`` command was.
DEFAULT_COMMAND: dict[str, str] = {"encoders": "list"}


def renamed(old: str, new: str) -> str:
    """The one stderr line an old command name prints before it runs."""
    return f"note: `interbias {old}` is now `interbias {new}`"


def command_name(info: CommandInfo) -> str:
    """The name typer gives a registered command (its function's name, dashed, when unnamed)."""
    return info.name or (info.callback.__name__.replace("_", "-") if info.callback else "")


def announcing(fn: Callable[..., Any], old: str, new: str) -> Callable[..., Any]:
    """``fn`` that first prints :func:`renamed` on stderr (typer reads the wrapped signature)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        typer.echo(renamed(old, new), err=True)
        return fn(*args, **kwargs)

    return wrapper


class DefaultCommandGroup(TyperGroup):
    """A group that runs :data:`DEFAULT_COMMAND` of it when given no command (only options)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        default = DEFAULT_COMMAND.get(ctx.info_name or "")
        if default and (not args or (args[0].startswith("-") and args[0] not in ctx.help_option_names)):
            typer.echo(renamed(ctx.info_name, f"{ctx.info_name} {default}"), err=True)
            args = [default, *args]
        return super().parse_args(ctx, args)


def _alias_group(group: TyperInfo, old: str, new: str) -> TyperInfo:
    """A hidden copy of ``group`` named ``old`` whose every command announces its ``new`` path."""
    sub = group.typer_instance
    assert sub is not None
    moved_to = f"This group is now `interbias {new}`.\n\n"
    alias = typer.Typer(help=moved_to + (sub.info.help or ""), no_args_is_help=True)
    for info in sub.registered_commands:
        name = command_name(info)
        alias.registered_commands.append(_alias_command(info, f"{old} {name}", f"{new} {name}", hidden=False))
    for inner in sub.registered_groups:
        shown = _alias_group(inner, f"{old} {inner.name}", f"{new} {inner.name}")
        shown.hidden = False  # only the old top-level name is hidden
        alias.registered_groups.append(shown)
    return TyperInfo(alias, name=old.split()[-1], hidden=True)


def _alias_command(info: CommandInfo, old: str, new: str, *, hidden: bool = True) -> CommandInfo:
    alias = copy.copy(info)
    alias.name = old.split()[-1]
    alias.hidden = hidden
    assert info.callback is not None
    alias.callback = announcing(info.callback, old, new)
    return alias


def arrange_nouns(app: typer.Typer) -> None:
    """Move the commands of ``app`` into :data:`GROUPS` after :data:`MOVES`, leaving each old
    name as a hidden alias. A command of a dissolved old group that :data:`MOVES` does not
    place is an error naming it (add it to :data:`MOVES`)."""
    leaves = {command_name(c): c for c in app.registered_commands}
    groups = {g.name or "": g for g in app.registered_groups}
    nouns = {
        name: typer.Typer(help=h, epilog=e, no_args_is_help=name not in DEFAULT_COMMAND)
        for name, (h, e) in GROUPS.items()
    }
    for group in [g for g in app.registered_groups if g.name in nouns and g.typer_instance is not None]:
        # a module that registers a group under a noun's own name adds its commands to the noun
        nouns[group.name or ""].registered_commands.extend(group.typer_instance.registered_commands)
        app.registered_groups.remove(group)
    aliases: dict[str, typer.Typer] = {}  # a dissolved old group -> its hidden alias group
    moved_leaves: set[str] = set()
    moved_groups: set[str] = set()
    for new, old in MOVES.items():
        target = nouns[new[0]]
        if len(old) == 1 and old[0] in leaves:
            target.registered_commands.append(_renamed_copy(leaves[old[0]], new[-1]))
            moved_leaves.add(old[0])
            if old[0] not in GROUPS:  # a noun of the same name takes the old command's place
                app.registered_commands.append(_alias_command(leaves[old[0]], old[0], " ".join(new)))
        elif len(old) == 1 and old[0] in groups:
            moved = copy.copy(groups[old[0]])
            moved.name = new[-1]
            target.registered_groups.append(moved)
            moved_groups.add(old[0])
            app.registered_groups.append(_alias_group(groups[old[0]], old[0], " ".join(new)))
        elif len(old) == 2 and old[0] in groups:
            sub = groups[old[0]].typer_instance
            assert sub is not None
            info = next((c for c in sub.registered_commands if command_name(c) == old[1]), None)
            if info is None:
                raise RuntimeError(f"interbias.cli.layout.MOVES: no command `{' '.join(old)}`")
            target.registered_commands.append(_renamed_copy(info, new[-1]))
            moved_groups.add(old[0])
            if old[0] not in aliases:
                moved_to = f"The commands of this group are now under `interbias {new[0]}`.\n\n"
                aliases[old[0]] = typer.Typer(help=moved_to + (sub.info.help or ""), no_args_is_help=True)
            aliases[old[0]].registered_commands.append(_alias_command(info, " ".join(old), " ".join(new), hidden=False))
        else:
            raise RuntimeError(f"interbias.cli.layout.MOVES: no command `{' '.join(old)}`")
    for name in moved_groups & set(aliases):
        sub = groups[name].typer_instance
        assert sub is not None
        left = {command_name(c) for c in sub.registered_commands} - {n for _, n in _moves_from(name)}
        if left:
            raise RuntimeError(
                f"command(s) {', '.join(f'{name} {n}' for n in sorted(left))} in no group: add them to interbias.cli.layout.MOVES"
            )
        app.registered_groups.append(TyperInfo(aliases[name], name=name, hidden=True))
    app.registered_commands[:] = [c for c in app.registered_commands if c.hidden or command_name(c) not in moved_leaves]
    app.registered_groups[:] = [g for g in app.registered_groups if g.hidden or g.name not in moved_groups]
    for name, noun in nouns.items():
        cls = DefaultCommandGroup if name in DEFAULT_COMMAND else None
        app.registered_groups.append(TyperInfo(noun, name=name, **({"cls": cls} if cls else {})))


def _moves_from(group: str) -> list[tuple[str, ...]]:
    return [old for old in MOVES.values() if len(old) == 2 and old[0] == group]


def _renamed_copy(info: CommandInfo, name: str) -> CommandInfo:
    moved = copy.copy(info)
    moved.name = name
    return moved
