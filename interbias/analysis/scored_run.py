"""A run directory as analysis input (:class:`ScoredRun`, a :class:`interbias.run.rundir.RunDir`):
trial list, per-trial scores, resolved experiment, run.json. Per-trial scores are checked against the trial
list (ids, labels) and against ``results.csv`` (the metric recomputed from them must match).

Analyses see exactly the trials a results row was computed on (:func:`interbias.run.measured.measured`:
eval split, bona fide), so the design holds those trials only and each cell keeps those it did not drop.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd

from interbias.analysis.stats.bootstrap import TrialDesign
from interbias.metrics import registry
from interbias.metrics.weighted import SortedCell, sort_cell
from interbias.metrics.weighted_llr import SharedCalibration
from interbias.run.measured import kept as not_dropped
from interbias.run.measured import measured
from interbias.run.rundir import EXPERIMENT, RUN_JSON, TRIALS, TRIALS_META, CalibrationRecord, RunDir
from interbias.utils.errors import AnalysisError, MetricError

#: Recomputed metric and results.csv must agree this closely.
_MATCH_TOL = 1e-9


@dataclass
class CellScores:
    """One cell × model: kept trials (positions in the design), scores, labels, sort."""

    rows: np.ndarray
    scores: np.ndarray
    labels: np.ndarray
    sorted: SortedCell
    n_dropped: int


class ScoredRun(RunDir):
    """A run directory read for per-trial analyses: its resolved experiment and run.json (raw),
    its trial design and each cell's kept scores, checked against the trial list."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.resolved = self.read_json(EXPERIMENT, AnalysisError)
        self.run_json = self.read_json(RUN_JSON, AnalysisError)
        self._design: TrialDesign | None = None
        self._cells: dict[tuple[str, str], CellScores] = {}
        self._calibrations: dict[str, SharedCalibration] = {}

    @classmethod
    def open(cls, results_path: Path) -> ScoredRun:
        """The folder of ``results_path`` (a results.csv or the run directory itself)."""
        folder = Path(results_path)
        return cls(folder if folder.is_dir() else folder.parent)

    def require_scores(self, what: str) -> None:
        if not self.has_scores:
            raise AnalysisError(
                f"{what} need per-trial scores: no trials.parquet and scores/ beside the results in {self.path} "
                "(a run directory written by `interbias run` has them)"
            )

    @property
    def trials_sha256(self) -> str | None:
        meta = self.read_json(TRIALS_META, AnalysisError)
        return None if meta is None else str(meta.get("sha256"))

    def design(self) -> TrialDesign:
        if self._design is None:
            self.require_scores("per-trial analyses")
            try:
                frame = pd.read_parquet(self.file(TRIALS))
            except (OSError, ValueError) as exc:
                raise AnalysisError(f"{self.file(TRIALS)}: not readable ({exc})") from exc
            self._design = TrialDesign.from_frame(frame[measured(frame)])
        return self._design

    def cell(self, model: str, cell: str) -> CellScores:
        key = (model, cell)
        if key not in self._cells:
            path = self.scores_path(model, cell)
            if not path.is_file():
                raise AnalysisError(f"no per-trial scores for model {model!r}, cell {cell!r} (expected {path})")
            frame = self.read_scores(model, cell)
            design = self.design()
            dropped = ~not_dropped(frame)
            # the design holds the measured trials only (eval, bona fide): these and not dropped
            kept = frame[~dropped & np.isin(frame["trial_id"].to_numpy(np.int64), design.trial_id)]
            rows = design.rows(kept["trial_id"].to_numpy())
            labels = kept["label"].to_numpy().astype(bool)
            if not np.array_equal(labels, design.label[rows]):
                raise AnalysisError(f"{path}: labels disagree with trials.parquet")
            scores = kept["score"].to_numpy(np.float64)
            try:
                srt = sort_cell(scores, labels)
            except MetricError as exc:
                raise AnalysisError(f"{path}: {exc}") from None
            self._cells[key] = CellScores(rows, scores, labels, srt, int(dropped.sum()))
        return self._cells[key]

    def draw_mean(self, func: Callable[[np.ndarray, np.ndarray], float], model: str, cell: str) -> float:
        """Mean of ``func(scores, labels)`` over a cell's draws (``score``, ``score_d1``, …)."""
        frame = self.read_scores(model, cell)
        kept = frame[measured(frame)]  # the trials the row measured (eval, bona fide, not dropped)
        labels = kept["label"].to_numpy().astype(bool)
        cols = ["score"] + [c for c in kept.columns if c.startswith("score_d")]
        return float(np.mean([func(kept[c].to_numpy(np.float64), labels) for c in cols]))

    @cached_property
    def calibration_record(self) -> CalibrationRecord | None:
        """The run's calibration record (:meth:`RunDir.read_calibration`), read once."""
        return self.read_calibration(AnalysisError)

    def calibration(self, model: str) -> SharedCalibration:
        """``model``'s shared calibration (read once per model)."""
        if model not in self._calibrations:
            self._calibrations[model] = SharedCalibration.of_run(self.calibration_record, model)
        return self._calibrations[model]

    def metric_function(self, metric: str, model: str) -> Callable[[np.ndarray, np.ndarray], float]:
        """``metric(scores, labels)`` of ``model``'s cells: a calibration metric at the model's
        shared calibration (:mod:`interbias.metrics.weighted_llr`)."""
        spec = registry.spec(metric)
        if spec.calibrated:
            cal = self.calibration(model)
            return lambda s, lab: spec.function(cal, s, lab)
        return spec.function

    def check_against(self, results: pd.DataFrame, metric: str) -> None:
        """Every results row must have scores that reproduce its ``metric`` and trial list."""
        sha = self.trials_sha256
        if "trials_sha256" in results.columns and sha is not None:
            other = sorted(set(results["trials_sha256"].astype(str)) - {sha})
            if other:
                raise AnalysisError(
                    f"results.csv names trial list {other[0][:12]}…, but {self.path}/trials.json holds {sha[:12]}…"
                )
        if "cell" not in results.columns:
            raise AnalysisError("per-trial analyses need the results column 'cell' to find each cell's scores")
        for row in results.itertuples(index=False):
            func = self.metric_function(metric, str(row.model))
            cs = self.cell(str(row.model), str(row.cell))
            value = func(cs.scores, cs.labels)
            if float(getattr(row, "operator_draws", 1) or 1) > 1:  # the draw-mean (interbias.run.cells)
                value = self.draw_mean(func, str(row.model), str(row.cell))
            if abs(value - float(getattr(row, metric))) > _MATCH_TOL:
                raise AnalysisError(
                    f"scores of {row.model} / {row.cell} give {metric} {value:.6f}, results.csv says "
                    f"{float(getattr(row, metric)):.6f}: the scores do not belong to these results"
                )
