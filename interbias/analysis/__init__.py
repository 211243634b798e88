"""Analysis of results tables: contrasts, summaries (and, in later modules, gaps, bootstrap,
fairness, geometry, reports). Works on any CSV with the results.csv columns (docs/outputs.md)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from interbias.metrics.registry import METRICS
from interbias.run.results import normalise_results
from interbias.utils.csvfile import read_frame
from interbias.utils.errors import AnalysisError

#: Metrics a results table may be read for: every registered metric (the analysis proper takes
#: fewer: :data:`interbias.analysis.suite.ANALYSIS_METRICS`).
METRIC_CHOICES = tuple(s.name for s in METRICS.registered())


def read_results(path: Path, *, required: tuple[str, ...] = (), metric: str | None = None) -> pd.DataFrame:
    """Read a results CSV, checking required columns and that ``metric`` is numeric; normalised
    once here (:func:`interbias.run.results.normalise_results`)."""
    path = Path(path)
    if path.is_dir():
        from interbias.run.rundir import RESULTS

        path = path / RESULTS
    frame = read_frame(path, what="results file", error=AnalysisError)
    need = list(required) + ([metric] if metric else [])
    missing = [c for c in need if c not in frame.columns]
    if missing:
        raise AnalysisError(
            f"{path}: missing required column(s) {', '.join(missing)}; found: {', '.join(frame.columns) or '(none)'}"
        )
    if metric:
        if metric not in METRIC_CHOICES:
            raise AnalysisError(f"unknown metric {metric!r}; valid: {', '.join(METRIC_CHOICES)}")
        values = pd.to_numeric(frame[metric].str.strip(), errors="coerce")
        bad = values.isna() | ~np.isfinite(values)
        if bad.any():
            rows = [str(i + 2) for i in np.flatnonzero(bad.to_numpy())[:5]]
            raise AnalysisError(
                f"{path}: column {metric!r} has {int(bad.sum())} non-numeric value(s); first at line(s) {', '.join(rows)}"
            )
        frame[metric] = values.astype(float)
    return normalise_results(frame)
