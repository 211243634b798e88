"""Comparing two results tables for CI: rows matched by experiment × cell × model.

A metric has moved when |new − base| > tolerance (NaN on both sides counts as unchanged, NaN
on one side as moved). A row present in only one table is reported as missing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from interbias.analysis import read_results
from interbias.metrics.registry import results_columns
from interbias.run.rundir import RESULTS
from interbias.utils.errors import AnalysisError

KEY = ("experiment", "cell", "model")
COMPARED = results_columns()


@dataclass(frozen=True)
class Comparison:
    tolerance: float
    metrics: tuple[str, ...]
    diffs: pd.DataFrame  # one row per matched row × metric
    only_base: pd.DataFrame
    only_new: pd.DataFrame

    @property
    def moved(self) -> pd.DataFrame:
        return self.diffs[self.diffs["moved"]]

    @property
    def ok(self) -> bool:
        return self.moved.empty and self.only_base.empty and self.only_new.empty


def _load(path: Path, metrics: tuple[str, ...]) -> pd.DataFrame:
    frame = read_results(path, required=(*KEY, *metrics))
    dup = frame.duplicated(list(KEY), keep=False)
    if dup.any():
        r = frame[dup].iloc[0]
        same = (frame[list(KEY)] == r[list(KEY)]).all(axis=1)
        raise AnalysisError(
            f"{path}: row {r['experiment']} / {r['cell']} / {r['model']} appears {int(same.sum())} times"
        )
    for m in metrics:
        raw = frame[m].str.strip()
        values = pd.to_numeric(raw, errors="coerce")
        bad = values.isna() & ~raw.str.lower().isin(["", "nan"])
        if bad.any():
            raise AnalysisError(f"{path}: column {m!r} has {int(bad.sum())} non-numeric value(s)")
        frame[m] = values.astype(float)
    return frame.set_index(list(KEY))


def results_file(path: Path) -> Path:
    """``path`` when it is a results file, its results.csv when it is a run directory."""
    path = Path(path)
    if path.is_dir():
        if not (path / RESULTS).is_file():
            raise AnalysisError(f"{path}: a folder without {RESULTS} (give a run directory or a results file)")
        return path / RESULTS
    if not path.is_file():
        raise AnalysisError(f"results file {path} does not exist")
    return path


def compare_results(base: Path, new: Path, *, tolerance: float, metrics: tuple[str, ...] | None = None) -> Comparison:
    if not tolerance >= 0:
        raise AnalysisError(f"--tolerance must be >= 0, got {tolerance}")
    base, new = results_file(base), results_file(new)
    if metrics is None:
        cols = [set(read_results(p).columns) for p in (base, new)]
        metrics = tuple(m for m in COMPARED if m in cols[0] and m in cols[1])
        if not metrics:
            raise AnalysisError(f"no metric column ({', '.join(COMPARED)}) in both {base} and {new}")
    unknown = [m for m in metrics if m not in COMPARED]
    if unknown:
        raise AnalysisError(f"unknown metric(s) {', '.join(unknown)}; valid: {', '.join(COMPARED)}")
    b, n = _load(base, metrics), _load(new, metrics)
    common = b.index.intersection(n.index, sort=False)
    rows = []
    for key in common:
        for m in metrics:
            x, y = float(b.at[key, m]), float(n.at[key, m])
            both_nan = np.isnan(x) and np.isnan(y)
            diff = 0.0 if both_nan else y - x
            moved = (not both_nan) and (np.isnan(diff) or abs(diff) > tolerance)
            rows.append(
                {**dict(zip(KEY, key, strict=True)), "metric": m, "base": x, "new": y, "diff": diff, "moved": moved}
            )
    cols = [*KEY, "metric", "base", "new", "diff", "moved"]
    only_b = b.index.difference(n.index, sort=False).to_frame(index=False)
    only_n = n.index.difference(b.index, sort=False).to_frame(index=False)
    return Comparison(tolerance, metrics, pd.DataFrame(rows, columns=cols), only_b, only_n)
