"""The ``interbias`` command line: thin typer commands over the library.

Library errors (:class:`InterbiasError`) become one line on stderr and exit code 1; a
traceback is shown only with ``--debug``. Each command module registers itself where it lives:
a module here on ``app``, a module of ``cli/<noun>/`` on that noun's group.

When the reader of the output goes away (``interbias list | head -1``), a command stops
quietly with exit code 141, what a shell reports for a program ended by SIGPIPE (as
``cat big | head -1`` does): no message, and ``set -o pipefail`` still sees the truncation.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import os
import pkgutil
import sys
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer

from interbias.utils.errors import InterbiasError

#: The line under the command list: where a new user starts.
START_HERE = (
    "Start here: `make demo` (installs, runs E16 on the embedded corpus, analyses it), or "
    "`interbias run E16 --corpus synthetic`; `interbias list` shows what runs here."
)

app = typer.Typer(
    name="interbias",
    help="Compound-condition speaker-verification benchmark: run experiments, analyse results.",
    epilog=START_HERE,
    invoke_without_command=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

#: Exit code when stdout's reader has gone (128 + SIGPIPE, as a shell reports it).
BROKEN_PIPE_EXIT = 141

_state = {"debug": False}
F = TypeVar("F", bound=Callable[..., Any])


@app.callback()
def _main(
    ctx: typer.Context,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks for errors.")] = False,
) -> None:
    _state["debug"] = debug
    if ctx.invoked_subcommand is None:  # bare `interbias`: the help, ending with where to start
        text = ctx.get_help()  # typer's rich help prints itself and returns ""
        if text:
            typer.echo(text)
        raise typer.Exit(0)


def fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(1)


def guarded(fn: F) -> F:
    """Turn library errors (and OS errors such as a full disk) into one line and exit 1."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            result = fn(*args, **kwargs)
            sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
            return result
        except BrokenPipeError:
            _silence_stdout()
            raise typer.Exit(BROKEN_PIPE_EXIT) from None
        except (InterbiasError, OSError) as exc:
            if _state["debug"]:
                raise
            msg = (
                str(exc) if isinstance(exc, InterbiasError) else f"{exc.strerror or exc}: {exc.filename or ''}".strip()
            )
            lines = getattr(exc, "lines", None) or (msg.replace("\n", " "),)  # ShortfallError: one per missing thing
            for line in lines[:-1]:
                typer.echo(f"error: {line}", err=True)
            fail(lines[-1])
        except KeyboardInterrupt:
            typer.echo("interrupted", err=True)
            raise typer.Exit(130) from None

    return wrapper  # type: ignore[return-value]


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so output still buffered is not flushed into the closed pipe
    at exit (which would print Python's "Exception ignored ... BrokenPipeError")."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout without a file descriptor (a test's capture): nothing to flush
        pass
    finally:
        os.close(devnull)


def _register_commands() -> None:
    """Import every module of this package, in name order (deterministic): each registers its
    commands where it lives (a noun's package registers the noun; a module of it, its commands)."""
    for module in pkgutil.walk_packages(__path__, prefix=f"{__name__}."):
        importlib.import_module(module.name)


_register_commands()
from interbias.cli.layout import add_old_names, command_name  # noqa: E402

#: The ``--help`` panels, in order, and the top-level entries each holds, in order: every entry
#: is in one (a noun's commands: its package, ``cli/<noun>/``).
PANELS: dict[str, tuple[str, ...]] = {
    "Run": ("run", "validate", "list", "plan", "export"),
    "Analyse": ("analyze", "report", "fuse", "runs", "scores"),
    "Models, audits, data": ("encoders", "cm", "audit", "data"),
}


def flowing(text: str) -> str:
    """``text`` with each paragraph's line breaks joined (the docstrings' wrapping would break
    help sentences mid-line); list items (``- ``, ``* ``) keep a line each; a paragraph
    starting with ``\b`` is kept as written."""
    paragraphs = []
    for para in inspect.cleandoc(text).split("\n\n"):
        if para.startswith("\b"):
            paragraphs.append(para)
            continue
        lines: list[str] = []
        for line in para.split("\n"):
            item = line.lstrip().startswith(("- ", "* "))
            if lines and not item:
                lines[-1] += " " + line.strip()
            else:
                lines.append(line.rstrip() if item else line.strip())
        paragraphs.append("\n".join(lines))
    return "\n\n".join(paragraphs)


def _arrange(typer_app: typer.Typer, panels: dict[str, tuple[str, ...]] | None = None) -> None:
    """Flowing help on every command and group (walked); at the top level each command in its
    panel of :data:`PANELS`, in the panels' order; in a group, its commands in the order they
    registered (its modules by name, each module's commands as written)."""
    where = {name: panel for panel, names in (panels or {}).items() for name in names}
    order = {name: i for i, name in enumerate(where)}
    if panels is not None:
        names = [
            c.name or (c.callback.__name__.replace("_", "-") if c.callback else "")
            for c in typer_app.registered_commands
            if not c.hidden
        ]
        shown = [g.name or "" for g in typer_app.registered_groups if not g.hidden]
        unplaced = sorted(set(names + shown) - set(where))
        if unplaced:
            raise RuntimeError(f"command(s) {', '.join(unplaced)} in no --help panel: add them to interbias.cli.PANELS")
    for info in typer_app.registered_commands:
        info.help = flowing(info.help or inspect.getdoc(info.callback) or "")
        name = info.name or (info.callback.__name__.replace("_", "-") if info.callback else "")
        if panels is not None and not info.hidden:
            info.rich_help_panel = where[name]
    for group in typer_app.registered_groups:
        sub = group.typer_instance
        if sub is None:
            continue
        sub.info.help = flowing(group.help or sub.info.help or "")
        group.help = sub.info.help
        if panels is not None and not group.hidden:
            group.rich_help_panel = where[group.name or ""]
        _arrange(sub)
    if panels is not None:
        typer_app.registered_commands.sort(
            key=lambda c: order.get(c.name or (c.callback.__name__.replace("_", "-") if c.callback else ""), len(order))
        )
        typer_app.registered_groups.sort(key=lambda g: order.get(g.name or "", len(order)))


def one_name_each(typer_app: typer.Typer, path: str = "interbias") -> None:
    """Refuse two commands or groups of one name in a group (typer would let the later hide the
    earlier: a command copied from a neighbour and not renamed would vanish), naming where each
    is registered."""
    seen: dict[str, str] = {}
    entries = [
        (command_name(c), f"{c.callback.__module__}" if c.callback else "?") for c in typer_app.registered_commands
    ]
    entries += [(g.name or "", f"the group {g.name}") for g in typer_app.registered_groups]
    for name, where in entries:
        if name in seen:
            raise RuntimeError(f"`{path} {name}` is registered twice ({seen[name]}, {where}): rename one")
        seen[name] = where
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            one_name_each(group.typer_instance, f"{path} {group.name}")


def _flags_without_type() -> None:
    """typer (0.29) shows a flag's type (``--json <bool>``) though a flag takes no value: a
    flag's help shows none."""
    from typer.core import TyperOption

    shown = TyperOption.display_type_rich

    def display_type_rich(self: TyperOption, ctx: Any) -> str | None:
        return None if self.is_flag else shown(self, ctx)

    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


add_old_names(app)
one_name_each(app)
_arrange(app, PANELS)
_flags_without_type()


def main() -> None:
    app()
