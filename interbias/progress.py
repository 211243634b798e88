"""Progress reporting: rich bars on a terminal, plain lines otherwise, nothing with --quiet."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO


class Reporter:
    def __init__(self, *, quiet: bool = False, stream: TextIO | None = None) -> None:
        self.quiet = quiet
        self.stream = stream or sys.stderr
        self.rich = (not quiet) and hasattr(self.stream, "isatty") and self.stream.isatty()

    def info(self, message: str) -> None:
        if not self.quiet:
            print(message, file=self.stream, flush=True)

    def notice(self, message: str) -> None:
        """A line the user must see even with ``--quiet`` (e.g. a lock taken over)."""
        print(message, file=self.stream, flush=True)

    @contextmanager
    def task(self, description: str, total: int) -> Iterator[Callable[[int], None]]:
        """A unit of long work; yields ``advance(n)``."""
        if self.quiet or total == 0:
            yield lambda n=1: None
            return
        if self.rich:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            with Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeRemainingColumn(),
                console=Console(file=self.stream),
                transient=False,
            ) as bar:
                tid = bar.add_task(description, total=total)
                yield lambda n=1: bar.advance(tid, n)
            return
        t0 = time.perf_counter()
        done = [0]

        def advance(n: int = 1) -> None:
            done[0] += n

        self.info(f"{description}: {total} to do")
        yield advance
        self.info(f"{description}: {done[0]}/{total} in {time.perf_counter() - t0:.1f} s")
