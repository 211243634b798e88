"""The ``interbias`` command line: thin typer commands over the library.

Library errors (:class:`InterbiasError`) become one line on stderr and exit code 1; a
traceback is shown only with ``--debug``. Each command module registers itself on ``app``.

When the reader of the output goes away (``interbias list | head -1``), a command stops
quietly with exit code 141, what a shell reports for a program ended by SIGPIPE (as
``cat big | head -1`` does): no message, and ``set -o pipefail`` still sees the truncation.
"""

from __future__ import annotations

import functools
import os
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
            fail(msg.replace("\n", " "))
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


from interbias.cli import analyze as _analyze  # noqa: E402,F401
from interbias.cli import blackbox as _blackbox  # noqa: E402,F401
from interbias.cli import card as _card  # noqa: E402,F401
from interbias.cli import cm as _cm  # noqa: E402,F401
from interbias.cli import cm_eval as _cm_eval  # noqa: E402,F401
from interbias.cli import compare as _compare  # noqa: E402,F401
from interbias.cli import corpus as _corpus  # noqa: E402,F401
from interbias.cli import encoders as _encoders  # noqa: E402,F401
from interbias.cli import export as _export  # noqa: E402,F401
from interbias.cli import fairness as _fairness  # noqa: E402,F401
from interbias.cli import geometry as _geometry  # noqa: E402,F401
from interbias.cli import leaderboard as _leaderboard  # noqa: E402,F401
from interbias.cli import listing as _listing  # noqa: E402,F401
from interbias.cli import metrics as _metrics  # noqa: E402,F401
from interbias.cli import models as _models  # noqa: E402,F401
from interbias.cli import operators as _operators  # noqa: E402,F401
from interbias.cli import plan as _plan  # noqa: E402,F401
from interbias.cli import repair as _repair  # noqa: E402,F401
from interbias.cli import report as _report  # noqa: E402,F401
from interbias.cli import run as _run  # noqa: E402,F401
from interbias.cli import validate as _validate  # noqa: E402,F401


def main() -> None:
    app()
