"""A run directory as analysis input: trial list, per-trial scores, resolved experiment, run.json.

``results/<run_id>/`` holds ``results.csv``, ``trials.parquet`` + ``trials.json``,
``scores/<slug(model)>/<slug(cell)>.parquet`` (trial_id, label, score, dropped),
``experiment.resolved.json`` and ``run.json``. Per-trial scores are checked against the trial
list (ids, labels) and against ``results.csv`` (the metric recomputed from them must match).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from interbias import metrics
from interbias.analysis.bootstrap import TrialDesign
from interbias.analysis.weighted import SortedCell, sort_cell
from interbias.errors import AnalysisError, MetricError
from interbias.paths import slug

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


def _read_json(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise AnalysisError(f"{path}: not readable JSON ({exc})") from exc


@dataclass
class RunDir:
    path: Path
    resolved: dict[str, Any] | None
    run_json: dict[str, Any] | None
    _design: TrialDesign | None = None
    _cells: dict[tuple[str, str], CellScores] = field(default_factory=dict)

    @classmethod
    def open(cls, results_path: Path) -> RunDir:
        """The folder of ``results_path`` (a results.csv or the run directory itself)."""
        folder = Path(results_path)
        folder = folder if folder.is_dir() else folder.parent
        return cls(folder, _read_json(folder / "experiment.resolved.json"), _read_json(folder / "run.json"))

    @property
    def has_scores(self) -> bool:
        return (self.path / "trials.parquet").is_file() and (self.path / "scores").is_dir()

    def require_scores(self, what: str) -> None:
        if not self.has_scores:
            raise AnalysisError(
                f"{what} need per-trial scores: no trials.parquet and scores/ beside the results in {self.path} "
                "(a run directory written by `interbias run` has them)"
            )

    @property
    def trials_sha256(self) -> str | None:
        meta = _read_json(self.path / "trials.json")
        return None if meta is None else str(meta.get("sha256"))

    def design(self) -> TrialDesign:
        if self._design is None:
            self.require_scores("per-trial analyses")
            try:
                frame = pd.read_parquet(self.path / "trials.parquet")
            except (OSError, ValueError) as exc:
                raise AnalysisError(f"{self.path / 'trials.parquet'}: not readable ({exc})") from exc
            self._design = TrialDesign.from_frame(frame)
        return self._design

    def scores_path(self, model: str, cell: str) -> Path:
        return self.path / "scores" / slug(model) / f"{slug(cell)}.parquet"

    def cell(self, model: str, cell: str) -> CellScores:
        key = (model, cell)
        if key not in self._cells:
            path = self.scores_path(model, cell)
            if not path.is_file():
                raise AnalysisError(f"no per-trial scores for model {model!r}, cell {cell!r} (expected {path})")
            frame = pd.read_parquet(path)
            dropped = frame["dropped"].to_numpy(bool) if "dropped" in frame.columns else np.zeros(len(frame), bool)
            kept = frame[~dropped]
            design = self.design()
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
        func = {"eer": metrics.eer, "eer_legacy": metrics.eer_legacy, "min_dcf": metrics.min_dcf}[metric]
        for row in results.itertuples(index=False):
            cs = self.cell(str(row.model), str(row.cell))
            value = func(cs.scores, cs.labels)
            if abs(value - float(getattr(row, metric))) > _MATCH_TOL:
                raise AnalysisError(
                    f"scores of {row.model} / {row.cell} give {metric} {value:.6f}, results.csv says "
                    f"{float(getattr(row, metric)):.6f}: the scores do not belong to these results"
                )
