"""Printing data frames as rich tables (plain text when not a terminal)."""

from __future__ import annotations

import math

import pandas as pd
from rich.console import Console
from rich.table import Table


def fmt(value: object, digits: int = 4) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        return f"{value:.{digits}f}"
    return str(value)


def print_frame(frame: pd.DataFrame, title: str, columns: list[str] | None = None, *, digits: int = 4) -> None:
    import sys

    # Terminals get their own width; pipes and CI logs get a wide, uncoloured table.
    console = Console() if sys.stdout.isatty() else Console(width=200, no_color=True)
    cols = [c for c in (columns or list(frame.columns)) if c in frame.columns]
    table = Table(title=title, show_lines=False, title_justify="left")
    for c in cols:
        table.add_column(c, justify="right" if pd.api.types.is_numeric_dtype(frame[c]) else "left")
    for _, row in frame[cols].iterrows():
        table.add_row(*(fmt(row[c], digits) for c in cols))
    console.print(table)
