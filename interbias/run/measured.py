"""Which trials a results row measured, and the score files that hold them.

A results row's metrics use the trials that are **measured**: in the eval split (when the trial
list has a ``split`` column; the dev split is kept for calibration and thresholds), bona fide
(when it has a ``trial_type`` column; spoof trials are summarised apart) and not dropped (when
the frame has a ``dropped`` column: an utterance of the trial had no embedding). This module is
the one place that rule is written; the cell scorer, export, fairness, the countermeasure
metrics and the analysis all call it, so a re-scored export gives the row's numbers.

Score files (one label vocabulary for all of them, :data:`LABELS`): label 1 = should be
accepted (target trial, bona fide audio), 0 = should be rejected (non-target, spoof).

- CSV with ``score`` and ``label`` columns (and any others), or the same as ``.parquet``;
- whitespace lines ``enrol test score label`` (WeSpeaker/Kaldi score files, :data:`SV_LINE`);
- whitespace lines ``id score label`` (countermeasure score files, :data:`CM_LINE`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from interbias.utils.csvfile import read_frame
from interbias.utils.errors import InterbiasError
from interbias.utils.textfile import read_utf8

#: Label words of every score file, lower-cased: 1 = should be accepted, 0 = should be rejected.
LABELS: dict[str, int] = {
    "1": 1,
    "true": 1,
    "target": 1,
    "bonafide": 1,
    "bona-fide": 1,
    "bona_fide": 1,
    "genuine": 1,
    "real": 1,
    "0": 0,
    "false": 0,
    "nontarget": 0,
    "spoof": 0,
    "fake": 0,
}
#: The words export writes for speaker-verification trials (WeSpeaker/Kaldi).
SV_WORDS = ("nontarget", "target")
#: Column names of the two whitespace layouts.
SV_LINE = ("enrol", "test", "score", "label")
CM_LINE = ("id", "score", "label")


def _equals(frame: pd.DataFrame, name: str, value: str) -> np.ndarray | None:
    """Per row, whether column ``name`` (as text) is ``value``; None without that column."""
    if name not in frame.columns:
        return None
    return (frame[name].astype(str) == value).to_numpy(dtype=bool, na_value=False)


def in_split(frame: pd.DataFrame, split: str) -> np.ndarray:
    """Trials of ``split`` (``eval`` or ``dev``); every trial counts as eval without a split column."""
    hit = _equals(frame, "split", split)
    return np.full(len(frame), split == "eval") if hit is None else hit


def bona_fide(frame: pd.DataFrame) -> np.ndarray:
    """Trials that are not spoof trials (every trial without a ``trial_type`` column)."""
    spoof = _equals(frame, "trial_type", "spoof")
    return np.ones(len(frame), bool) if spoof is None else ~spoof


def kept(frame: pd.DataFrame) -> np.ndarray:
    """Trials that were scored (not ``dropped``; every trial without that column)."""
    if "dropped" not in frame.columns:
        return np.ones(len(frame), bool)
    return ~frame["dropped"].to_numpy(dtype=bool)


def measured(frame: pd.DataFrame) -> np.ndarray:
    """The trials a results row's metrics use: eval split, bona fide, not dropped (see module docs).
    ``frame`` is a trial list or a scores file joined with its ``split``/``trial_type`` columns."""
    return in_split(frame, "eval") & bona_fide(frame) & kept(frame)


def calibration_trials(frame: pd.DataFrame) -> np.ndarray:
    """The trials thresholds and calibrations are fitted on: dev split, bona fide, not dropped
    (none without a ``split`` column)."""
    return in_split(frame, "dev") & bona_fide(frame) & kept(frame)


def parse_labels(values: pd.Series, *, where: Callable[[int], str], error: type[InterbiasError]) -> np.ndarray:
    """Labels in :data:`LABELS`'s vocabulary as 0/1 ``int8``; the first unknown one is an error
    starting with its place (``where(i)`` names value ``i``: file and line)."""
    mapped = pd.Series(values).astype(str).str.strip().str.lower().map(LABELS)
    if mapped.isna().any():
        i = int(np.flatnonzero(mapped.isna().to_numpy())[0])
        raise error(
            f"{where(i)}: label {pd.Series(values).iloc[i]!r} is not one of 1/0, true/false, target/nontarget, "
            "bonafide/spoof (also genuine/real, fake)"
        )
    return mapped.to_numpy(dtype=np.int8)


def _whitespace_frame(path: Path, text: str, layout: tuple[str, ...], error: type[InterbiasError]) -> pd.DataFrame:
    rows, lines = [], []
    for lineno, line in enumerate(text.splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != len(layout):
            raise error(f"{path}:{lineno}: expected '{' '.join(layout).upper()}', got {line!r}")
        rows.append(parts)
        lines.append(lineno)
    frame = pd.DataFrame(rows, columns=list(layout), dtype=str)
    frame.attrs["lines"] = lines
    return frame


def read_score_file(path: Path, *, error: type[InterbiasError], layout: tuple[str, ...] = SV_LINE) -> pd.DataFrame:
    """A score file (see module docs) as a frame with float64 ``score`` and int8 ``label`` (1 =
    accept) plus its other columns. ``layout`` names the columns of a whitespace file. Every
    problem (missing file or column, unknown label, a score that is not a finite number, no
    rows) is one ``error`` naming the file and row."""
    path = Path(path)
    if not path.is_file():
        raise error(f"score file {path} does not exist")
    if path.suffix == ".parquet":
        try:
            frame = pd.read_parquet(path)
        except (OSError, ValueError) as exc:
            raise error(f"{path}: not a readable parquet file ({exc})") from None
        first = 1
    else:
        text = read_utf8(path, what="scores file", error=error)
        if "," in text.lstrip().split("\n", 1)[0]:
            frame, first = read_frame(path, what="scores file", error=error), 2
        else:
            frame, first = _whitespace_frame(path, text, layout, error), 1
    missing = [c for c in ("score", "label") if c not in frame.columns]
    if missing:
        raise error(f"{path}: missing column(s) {', '.join(missing)}; found: {', '.join(map(str, frame.columns))}")
    if not len(frame):
        raise error(f"scores file {path} has no rows")
    lines = frame.attrs.get("lines") or range(first, first + len(frame))
    unit = "row" if path.suffix == ".parquet" else "line"

    def where(i: int) -> str:
        return f"{path}: {unit} {lines[i]}"

    labels = parse_labels(frame["label"], where=where, error=error)
    scores = pd.to_numeric(frame["score"], errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(scores)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise error(f"{where(i)}: score {frame['score'].iloc[i]!r} is not a finite number")
    frame = frame.copy()
    frame["score"] = scores
    frame["label"] = labels
    return frame


def format_scores(scores: np.ndarray) -> list[str]:
    """Shortest strings that parse back to the same float64 (Python's ``repr``): a re-read score
    file reproduces the row's metrics exactly."""
    return [repr(float(x)) for x in np.asarray(scores, dtype=np.float64)]
