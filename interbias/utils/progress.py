"""Progress reporting: rich bars on a terminal, plain lines otherwise, nothing with --quiet.

Without a terminal (a CI log, a batch job) a long task prints a line when it starts, one with
a first estimate after its first few items (the rate counted from the first finished item, so
start-up does not inflate it, over at least a quarter of the interval), then one at the first
item that finishes at least ``interval_s`` seconds after the previous line (done/total, rate,
time left), and one when it ends. Lines come with finished items (no timer thread), so one item that takes longer than the
interval delays the next line. Time comes from an injectable clock, so tests drive it.
"""

from __future__ import annotations

import os
import shutil
import sys
import textwrap
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TextIO

#: Seconds between plain progress lines (the issue asks for one every 15–30 s).
INTERVAL_S = 20.0
#: Items after which a plain task prints its first estimate of the time left.
FIRST_ESTIMATE_AFTER = 8
#: ... and the share of ``interval_s`` that must pass after the first finished item: parallel
#: workers finish their first units together, so a rate over a shorter span overshoots.
FIRST_ESTIMATE_SPAN = 0.25
#: Columns of a stream that is not a terminal when $COLUMNS is unset (a pipe, a CI log).
DEFAULT_WIDTH = 80


def terminal_width(stream: Any) -> int:
    """Columns to print into: the terminal's when ``stream`` is one, else $COLUMNS (at least
    40), else :data:`DEFAULT_WIDTH`."""
    if hasattr(stream, "isatty") and stream.isatty():
        return shutil.get_terminal_size().columns
    try:
        return max(40, int(os.environ.get("COLUMNS", "")))
    except ValueError:
        return DEFAULT_WIDTH


def wrapped(text: str, width: int, indent: str = "") -> str:
    """``text`` wrapped to ``width`` columns, continuation lines indented by two more spaces;
    words, numbers and paths are never split (a path longer than the width stays whole), nor
    words joined by a no-break space."""
    lines = textwrap.wrap(
        text,
        width=width,
        initial_indent=indent,
        subsequent_indent=indent + "  ",
        break_long_words=False,
        break_on_hyphens=False,
    )
    return "\n".join(lines or [indent]).replace("\u00a0", " ")  # glued words (no-break spaces) print as spaces


def duration(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``, ``2 h 07 min``: a human reading of a span of time."""
    s = max(0, int(round(seconds)))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def progress_line(description: str, done: int, total: int, items_per_s: float | None) -> str:
    """``embedding: 120/5976 (2.0 %), 3.1/s, about 31 min 29 s left``; ``items_per_s`` in items per second."""
    share = 100.0 * done / total if total else 100.0
    if not items_per_s or items_per_s <= 0:
        return f"{description}: {done}/{total} ({share:.1f} %)"
    left = (total - done) / items_per_s
    return f"{description}: {done}/{total} ({share:.1f} %), {items_per_s:.3g}/s, about {duration(left)} left"


class _PlainTask:
    """The plain-text progress of one task: decides when a line is due.

    The rate (and so the time left) counts from the first finished item on: what comes before
    it (worker start-up, model loading, a first slow item) is paid once, not per item, and
    would otherwise inflate the first estimates many times over. The first estimate waits for
    ``FIRST_ESTIMATE_AFTER`` more items and a quarter of the interval (5 s by default) after that
    first item, so that units finishing together in parallel workers do not make it overshoot."""

    def __init__(self, reporter: Reporter, description: str, total: int) -> None:
        self.reporter, self.description, self.total = reporter, description, total
        self.t0 = reporter.clock()
        self.last = self.t0
        self.done = 0
        self.first: tuple[float, int] | None = None  # (clock, done) at the first finished item(s)
        self.estimated = False

    def items_per_s(self, now: float) -> float | None:
        """Items per second since the first finished item; None before a second one."""
        if self.first is None or now <= self.first[0] or self.done <= self.first[1]:
            return None
        return (self.done - self.first[1]) / (now - self.first[0])

    def advance(self, n: int = 1) -> None:
        self.done += n
        now = self.reporter.clock()
        if self.first is None:
            self.first = (now, self.done)
            return
        if self.done >= self.total or now - self.first[0] < self.reporter.interval_s * FIRST_ESTIMATE_SPAN:
            return
        since = self.done - self.first[1]
        first = not self.estimated and since >= min(FIRST_ESTIMATE_AFTER, self.total - self.first[1])
        if first or now - self.last >= self.reporter.interval_s:
            self.estimated = True
            self.last = now
            self.reporter.info(progress_line(self.description, self.done, self.total, self.items_per_s(now)))

    def finish(self) -> None:
        elapsed = self.reporter.clock() - self.t0
        self.reporter.info(f"{self.description}: {self.done}/{self.total} in {elapsed:.1f} s")


class Reporter:
    """Where progress goes. ``clock`` (seconds, monotonic) and ``interval_s`` are injectable."""

    def __init__(
        self,
        *,
        quiet: bool = False,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.perf_counter,
        interval_s: float = INTERVAL_S,
    ) -> None:
        self.quiet = quiet
        self.stream = stream or sys.stderr
        self.rich = (not quiet) and hasattr(self.stream, "isatty") and self.stream.isatty()
        self.clock = clock
        self.interval_s = interval_s

    def info(self, message: str, *, wrap: bool = False) -> None:
        """``message`` unless quiet; ``wrap``: wrapped to the stream's width (:func:`wrapped`)."""
        if not self.quiet:
            print(wrapped(message, terminal_width(self.stream)) if wrap else message, file=self.stream, flush=True)

    def notice(self, message: str, *, wrap: bool = False) -> None:
        """A line the user must see even with ``--quiet`` (e.g. a lock taken over)."""
        print(wrapped(message, terminal_width(self.stream)) if wrap else message, file=self.stream, flush=True)

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
        plain = _PlainTask(self, description, total)
        self.info(f"{description}: {total} to do")
        yield plain.advance
        plain.finish()


def embeddings_ahead(
    encoders: Sequence[Any], todo: Mapping[str, Mapping[str, tuple[Any, Sequence[str]]]], n_cached: int
) -> str:
    """The work ahead of the embedding stage, in one line: per encoder (``label``, ``fingerprint``),
    the embeddings still to compute, from ``todo`` (utterance -> chain fp -> (chain, encoder fps))."""
    per_fp: dict[str, int] = {}
    for per_chain in todo.values():
        for _chain, fps in per_chain.values():
            for fp in fps:
                per_fp[fp] = per_fp.get(fp, 0) + 1
    n_todo = sum(per_fp.values())
    parts = ", ".join(f"{e.label} {per_fp.get(e.fingerprint, 0)}" for e in encoders)
    line = f"embeddings: {n_cached} from the cache, {n_todo} to compute"
    return f"{line} ({parts})" if n_todo else line
