"""Where the deployed threshold sits on each DET curve: per model and cell, the (FAR, FRR) of
the decisions the run's shared dev calibration makes at its first operating point
(:mod:`interbias.metrics.deployed`); models without a shared calibration get no mark."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from interbias.metrics.deployed import deployed_point
from interbias.utils.errors import AnalysisError

if TYPE_CHECKING:
    from interbias.analysis.scored_run import ScoredRun


def deployed_marks(run: ScoredRun, frame: pd.DataFrame) -> dict[str, dict[str, tuple[float, float]]]:
    """model -> cell -> (FAR, FRR) at the deployed threshold, on the cell's measured trials."""
    record = run.read_calibration(AnalysisError)
    exp = run.experiment(AnalysisError)
    if record is None or exp is None:
        return {}
    point = exp.operating_points[0].cost
    out: dict[str, dict[str, tuple[float, float]]] = {}
    for r in frame.itertuples(index=False):
        cal = record.shared(str(r.model))
        if cal is None or not cal[0] > 0:
            continue
        cs = run.cell(str(r.model), str(r.cell))
        dp = deployed_point(cs.scores, cs.labels, cal[0], cal[1], point)
        out.setdefault(str(r.model), {})[str(r.cell)] = (dp.far, dp.frr)
    return out


def det_caption(reference: str | None, marks: dict[str, dict[str, tuple[float, float]]]) -> str:
    """The DET figure's caption; it says where the deployed threshold is marked, or why not."""
    base = (
        "Miss against false-alarm rate on normal-deviate axes: one row of panels per model, one panel per "
        f"level named above it; the reference cell ({reference or 'none'}) dashed black in every panel. The dotted "
        "diagonal is where the equal error rate is read; each cell's value is in the tables."
    )
    if not marks:
        return base + " No deployed threshold is marked: the run has no shared dev calibration."
    return base + (
        " A dot on each curve marks the deployed threshold (the shared dev calibration's Bayes "
        "threshold at the experiment's first operating point): that cell's (FAR, FRR) there."
    )
