"""The old names of commands, kept as hidden aliases: each runs the same function as the
command's path now and first says that path, once, on stderr (so scripts written for the old
names keep working).

Where a command lives is where its module is: ``cli/<noun>/`` registers the noun's group and
each of its modules registers its commands on it; a module directly in ``cli/`` registers a
top-level command. :data:`OLD_NAMES` is only the table of names that came before; a new
command needs no row here.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from typing import Any

import typer
from typer.core import TyperGroup
from typer.models import CommandInfo, TyperInfo

#: Each old name -> the command's (or group's) path now.
OLD_NAMES: dict[tuple[str, ...], tuple[str, ...]] = {
    ("compare",): ("runs", "compare"),
    ("leaderboard",): ("runs", "leaderboard"),
    ("card",): ("runs", "card"),
    ("metrics",): ("scores", "metrics"),
    ("fairness",): ("scores", "fairness"),
    ("cm-eval",): ("scores", "cm-eval"),
    ("embed",): ("encoders", "embed"),
    ("models", "list"): ("encoders", "status"),
    ("models", "fetch"): ("encoders", "fetch"),
    ("models", "verify"): ("encoders", "verify"),
    ("geometry",): ("audit", "geometry"),
    ("repair",): ("audit", "repair"),
    ("blackbox",): ("audit", "blackbox"),
    ("corpus", "build"): ("data", "build"),
    ("corpus", "prepare"): ("data", "prepare"),
    ("corpus", "info"): ("data", "info"),
    ("operators",): ("data", "operators"),
    ("degrade",): ("data", "degrade"),
}

#: The help of each old group of commands (``interbias models --help``).
OLD_GROUPS: dict[str, str] = {
    "models": "Fetch encoder checkpoints from the Hugging Face Hub into their folders, pinned in models.lock.",
    "corpus": "Build the embedded corpus, prepare manifests of corpora on disk, and count their attributes.",
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


def _find(app: typer.Typer, path: tuple[str, ...]) -> CommandInfo | TyperInfo:
    """The command or group of ``app`` at ``path``; an error naming :data:`OLD_NAMES` if none."""
    here: typer.Typer | None = app
    for i, name in enumerate(path):
        assert here is not None
        last = i == len(path) - 1
        group = next((g for g in here.registered_groups if g.name == name), None)
        if group is not None:
            if last:
                return group
            here = group.typer_instance
            continue
        command = next((c for c in here.registered_commands if command_name(c) == name), None)
        if command is not None and last:
            return command
        break
    raise RuntimeError(f"interbias.cli.layout.OLD_NAMES: no command `interbias {' '.join(path)}`")


def add_old_names(app: typer.Typer) -> None:
    """Register each old name of :data:`OLD_NAMES` on ``app`` as a hidden alias of the command
    or group it names now; an old group (``models``) becomes a hidden group of the aliases."""
    old_groups: dict[str, typer.Typer] = {}
    for old, new in OLD_NAMES.items():
        now = _find(app, new)
        if isinstance(now, TyperInfo):
            app.registered_groups.append(_alias_group(now, " ".join(old), " ".join(new)))
            continue
        alias = _alias_command(now, " ".join(old), " ".join(new), hidden=len(old) == 1)
        if len(old) == 1:
            app.registered_commands.append(alias)
            continue
        if old[0] not in old_groups:
            moved_to = f"The commands of this group are now under `interbias {new[0]}`.\n\n"
            old_groups[old[0]] = typer.Typer(help=moved_to + OLD_GROUPS.get(old[0], ""), no_args_is_help=True)
            app.registered_groups.append(TyperInfo(old_groups[old[0]], name=old[0], hidden=True))
        old_groups[old[0]].registered_commands.append(alias)
