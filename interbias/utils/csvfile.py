"""Strict CSV reading for every user table (manifests, score files, results): UTF-8 with an
optional byte-order mark, a header that names each column once, and rows that have as many
fields as the header. Each problem is one error naming the file, the line and the column."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pandas as pd

from interbias.utils.errors import InterbiasError
from interbias.utils.textfile import read_utf8


def check_header(header: list[str], *, where: str, error: type[InterbiasError]) -> None:
    """Refuse a header that names one column twice (a reader would keep only one copy)."""
    seen: dict[str, int] = {}
    for i, name in enumerate(header, 1):
        if name in seen:
            raise error(f"{where}: column {name!r} appears twice in the header (columns {seen[name]} and {i})")
        seen[name] = i


def records(
    text: str, *, where: str, error: type[InterbiasError], short_rows: bool = False
) -> tuple[list[str], list[list[str]], list[int]]:
    """(header, rows, line of each row) of CSV ``text``; blank lines are skipped. A row with
    more fields than the header is refused; one with fewer only unless ``short_rows``."""
    reader = csv.reader(io.StringIO(text, newline=""))
    rows: list[list[str]] = []
    lines: list[int] = []
    try:
        header = next(reader, [])
        check_header(header, where=where, error=error)
        for record in reader:
            if not record or record == [""]:
                continue
            if len(record) > len(header) or (len(record) < len(header) and not short_rows):
                hint = (
                    "a value holding a comma must be quoted"
                    if len(record) > len(header)
                    else "every row gives every column; an empty value is written as nothing between two commas"
                )
                raise error(f"{where}:{reader.line_num}: {len(record)} field(s), the header has {len(header)} ({hint})")
            rows.append(record + [""] * (len(header) - len(record)))
            lines.append(reader.line_num)
    except csv.Error as exc:
        raise error(f"{where}:{reader.line_num}: not valid CSV ({exc})") from None
    return header, rows, lines


def read_frame(path: Path, *, what: str, error: type[InterbiasError]) -> pd.DataFrame:
    """A CSV file as a frame of strings (empty cells are ``""``), read strictly."""
    path = Path(path)
    header, rows, _ = records(read_utf8(path, what=what, error=error), where=str(path), error=error)
    if not header:
        raise error(f"{path}: {what} is empty (no header line)")
    return pd.DataFrame(rows, columns=header, dtype=str) if rows else pd.DataFrame(columns=header, dtype=str)
