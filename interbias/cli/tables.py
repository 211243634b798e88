"""Printing data frames and text to the terminal so that they fit it and nothing is truncated.

The width is the terminal's, else ``$COLUMNS``, else 80 (pipes and CI logs get 80 columns,
not a 200-column table). A table keeps its columns in the order given (most important first)
and drops trailing columns that do not fit, saying which and where the full table is; text
columns wrap between words rather than end in "…" (a column is never narrower than its longest
word, so no word is split); numbers are never cut. ``wide``: every column at
whatever width it needs. At most ``max_rows`` rows unless ``wide``, the rest counted.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pandas as pd
from rich.console import Console
from rich.table import Table

from interbias.utils.progress import terminal_width, wrapped

#: Narrowest a text column is folded to before trailing columns are dropped instead.
MIN_TEXT = 14
#: A numeric column's header longer than this folds onto more lines (its numbers keep their width).
HEADER = 12
#: Rows printed by default (``wide``: all).
MAX_ROWS = 30


def fmt(value: object, digits: int = 3, column: str = "") -> str:
    """A cell: floats with ``digits`` decimals (counts as integers, p-values ``< 0.001``),
    never ``-0.000``; NaN as empty."""
    from interbias.analysis.reporting.numbers import format_value

    return format_value(value, column, digits)


def width() -> int:
    """Columns to print into: the terminal's, else $COLUMNS, else
    :data:`interbias.utils.progress.DEFAULT_WIDTH` (80)."""
    return Console().width if sys.stdout.isatty() else terminal_width(sys.stdout)


def console(wide: bool = False) -> Console:
    w = 10_000 if wide else width()
    return Console(width=w, no_color=not sys.stdout.isatty(), soft_wrap=False, highlight=False)


def echo_wrapped(text: str, indent: str = "", *, wide: bool = False) -> None:
    """``text`` wrapped to the width (continuation lines indented by two more spaces); words,
    paths and commands are never split (a path longer than the width stays whole)."""
    if wide:
        print(indent + text)
        return
    print(wrapped(text, width(), indent))


#: Columns kept at full width before text columns are folded to keep more of them.
MIN_KEEP = 4


#: A column's (width, is text, narrowest it folds to: its longest word, at least MIN_TEXT).
Width = tuple[int, bool, int]


def _text_share(widths: list[Width], total: int) -> int | None:
    """The widest each text column may be so that the numbers keep their whole width within
    ``total`` characters (``None`` when everything fits at full width)."""
    if 1 + sum(w + 3 for w, _, _ in widths) <= total:
        return None
    n_text = sum(1 for _, text, _ in widths if text)
    fixed = 1 + sum(w + 3 for w, text, _ in widths if not text) + 3 * n_text
    return max(MIN_TEXT, (total - fixed) // max(1, n_text))


def _fits(widths: list[Width], total: int, *, fold: bool = True) -> int:
    """How many leading columns fit in ``total`` characters (``fold``: text columns folded to
    their narrowest, never splitting a word)."""
    used, n = 1, 0
    for w, text, narrowest in widths:
        need = (narrowest if text and fold else w) + 3
        if used + need > total:
            break
        used, n = used + need, n + 1
    return max(n, 1)


def print_frame(
    frame: pd.DataFrame,
    title: str,
    columns: list[str] | None = None,
    *,
    digits: int = 3,
    wide: bool = False,
    full: str | None = None,
    max_rows: int = MAX_ROWS,
    min_keep: int = MIN_KEEP,
) -> None:
    """Print ``frame`` (``columns`` in importance order) as a table that fits; ``full``: where
    the whole table is (a file name), said when columns or rows are left out; text columns are
    folded (between words) when fewer than ``min_keep`` columns fit at full width."""
    cols = [c for c in (columns or list(frame.columns)) if c in frame.columns]
    shown = frame if wide or len(frame) <= max_rows else frame.head(max_rows)
    cells = {c: [fmt(v, digits, c) for v in shown[c]] for c in cols}
    widths = []
    for c in cols:
        numeric = pd.api.types.is_numeric_dtype(frame[c]) or pd.api.types.is_bool_dtype(frame[c])
        head = min(len(str(c)), HEADER) if numeric else len(str(c))  # a long header folds, a number never
        w = max([head, *map(len, cells[c])])
        word = max((len(x) for v in [str(c), *cells[c]] for x in v.split()), default=0)
        widths.append((w, not numeric, min(w, max(MIN_TEXT, word))))
    keep = len(cols) if wide else _fits(widths, width(), fold=False)  # whole labels where they fit
    if not wide and keep < min(len(cols), min_keep):
        keep = _fits(widths, width())
    table = Table(title=title, show_lines=False, title_justify="left", pad_edge=False, expand=False)
    share = None if wide else _text_share(widths[:keep], width())
    for c, (w, text, narrowest) in zip(cols[:keep], widths[:keep], strict=True):
        just = "left" if text else "right"
        most = max(share, narrowest) if text and share is not None and share < w else None
        table.add_column(c, justify=just, overflow="fold", min_width=narrowest if text else w, max_width=most)
    for i in range(len(shown)):
        table.add_row(*(cells[c][i] for c in cols[:keep]))
    console(wide).print(table)
    notes = []
    if keep < len(cols):
        notes.append(f"{len(cols) - keep} column(s) not shown: {', '.join(cols[keep:])}")
    if len(shown) < len(frame):
        notes.append(f"{len(frame) - len(shown)} more row(s)")
    if notes:
        hints = [f"full table: {full}"] if full else []
        hints += ["--wide prints everything"] if has_wide_option() else []
        echo_wrapped(f"({'; '.join(notes + ([', or '.join(hints)] if hints else []))})")


def has_wide_option() -> bool:
    """Whether the command being run has a ``--wide`` option (a hint never names one it lacks)."""
    import click

    ctx = click.get_current_context(silent=True)
    return ctx is not None and any("--wide" in getattr(p, "opts", ()) for p in ctx.command.params)


def short_paths(text: str, *, wide: bool = False) -> str:
    """``text`` with the long path prefixes a reader already knows shortened (``wide``: as it
    is): the cache as ``$INTERBIAS_CACHE``, installed packages as ``<site-packages>``, the home
    folder as ``~``."""
    if wide:
        return text
    import site
    import sysconfig

    from interbias.utils.paths import cache_dir

    prefixes = [(str(cache_dir()), "$INTERBIAS_CACHE")]
    packages = {sysconfig.get_paths()["purelib"], *site.getsitepackages()}
    prefixes += [(p, "<site-packages>") for p in sorted(packages, key=len, reverse=True)]
    prefixes.append((str(Path.home()), "~"))
    for long, short in prefixes:
        long = long.rstrip("/")
        if long:
            text = re.sub(re.escape(long) + r"(?=[/\s)\]:;,]|$)", short, text)
    return text
