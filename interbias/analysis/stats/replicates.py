"""Bootstrap replicates of every results cell's metric, shared by contrasts, gaps and macros.

Each cell × model gets ``B`` replicate values from the same trial weights (one resample per
replicate for the whole run, see :mod:`interbias.analysis.stats.bootstrap`), so any statistic built
from cells (IE, gap, mean over models) gets its replicates by the same arithmetic applied to
the cells' replicates, and its percentile interval from those.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from interbias.analysis.scored_run import CellScores, ScoredRun
from interbias.analysis.stats.bootstrap import Resampler, percentile_ci
from interbias.metrics.weighted import SortedCell, metric_by_class
from interbias.metrics.weighted_llr import CALIBRATED_METRICS, SharedCalibration
from interbias.utils.errors import AnalysisError

Key = tuple[str, str, str]
#: Weights held at once per cell (trials × replicates of one block): 8 M int64, 64 MB.
BLOCK_WEIGHTS = 8_000_000
#: Weights per block of a calibration metric, held as float64 twice (the block and its per-class
#: copies) beside the narrow integer block: 2 M weights, about 40 MB.
CALIBRATED_BLOCK_WEIGHTS = 2_000_000


@dataclass(frozen=True)
class Replicates:
    metric: str
    unit: str
    n_boot: int
    seed: int
    level: float
    rule: str
    values: dict[Key, np.ndarray] = field(default_factory=dict)

    def of(self, experiment: str, model: str, cell: str) -> np.ndarray | None:
        return self.values.get((str(experiment), str(model), str(cell)))

    def combine(self, experiment: str, model: str, coef: dict[str, float]) -> np.ndarray:
        """Replicates of Σ coef[cell]·M(cell) over cells of one experiment × model."""
        out = np.zeros(self.n_boot)
        for cell, c in coef.items():
            r = self.of(experiment, model, cell)
            if r is None:
                raise AnalysisError(f"no bootstrap replicates for {experiment} / {model} / {cell}")
            out = out + c * np.asarray(r, dtype=np.float64)
        return out

    def ci(self, reps: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return percentile_ci(reps, self.level)

    @property
    def pct(self) -> str:
        return f"{100 * self.level:g}%"

    def stamp(self) -> dict[str, Any]:
        """Columns that travel with every CI: replicates, resampling unit, master seed, level."""
        return {"ci_level": self.level, "n_boot": self.n_boot, "boot_unit": self.unit, "boot_seed": self.seed}

    def describe(self) -> str:
        return (
            f"{self.pct} percentile intervals from B={self.n_boot} {self.unit}-level bootstrap replicates "
            f"(master seed {self.seed}; {self.rule})"
        )

    def to_json(self, resampler: Resampler | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "metric": self.metric,
            "unit": self.unit,
            "n_boot": self.n_boot,
            "seed": self.seed,
            "ci_level": self.level,
            "interval": "percentile",
            "rule": self.rule,
            "replicate_seed": f"derive_seed('bootstrap', '{self.unit}', {self.seed}, b) for b in 0..{self.n_boot - 1}",
            "n_valid": {"|".join(k): int(np.isfinite(v).sum()) for k, v in sorted(self.values.items())},
        }
        if resampler is not None and resampler.unit == "speaker":
            out["replicate_seeds"] = resampler.replicate_seeds()
            out["speaker_blocks"] = [
                [resampler.design.speakers[i] for i in blk.tolist()] for blk in resampler.design.blocks()
            ]
        return out


def replicate_blocks(n_trials: int, n_boot: int, budget: int) -> Iterator[slice]:
    """Consecutive slices of the replicates ``0 .. n_boot − 1``, each of at most ``budget``
    weights of ``n_trials`` trials (at least one replicate per slice)."""
    step = max(1, budget // max(1, n_trials))
    for lo in range(0, n_boot, step):
        yield slice(lo, min(lo + step, n_boot))


def calibrated_replicates(
    metric: str, cell: CellScores, calibration: SharedCalibration, resampler: Resampler
) -> np.ndarray:
    """``calibration.batch(metric, …, resampler.weights(cell.rows), …)`` with the same values,
    computed a block of replicates at a time (:func:`replicate_blocks`, at most
    :data:`CALIBRATED_BLOCK_WEIGHTS` weights a block), so memory is O(block), not O(B · trials).
    ``cell``: one cell of a :class:`ScoredRun` (:meth:`ScoredRun.cell`)."""
    parts = []
    for reps in replicate_blocks(len(cell.rows), resampler.n_boot, CALIBRATED_BLOCK_WEIGHTS):
        w = np.ascontiguousarray(resampler.weights_by_trial(cell.rows, reps).T, dtype=np.float64)
        parts.append(calibration.batch(metric, cell.scores, cell.labels, w, cell.sorted))
    return np.concatenate(parts) if parts else np.zeros(0)


def blocked_replicates(metric: str, cell: SortedCell, rows: np.ndarray, resampler: Resampler) -> np.ndarray:
    """``metric_batch(metric, cell, resampler.weights(rows))`` with the same values, computed
    a block of replicates at a time, each class's weights drawn in score order, so that no
    block holds more than :data:`BLOCK_WEIGHTS` weights (memory O(len(rows)), not O(B · len(rows)))."""
    t_rows, n_rows = rows[cell.target_order], rows[cell.nontarget_order]
    parts = []
    for reps in replicate_blocks(len(rows), resampler.n_boot, BLOCK_WEIGHTS):
        w_t, w_n = resampler.weights_by_trial(t_rows, reps), resampler.weights_by_trial(n_rows, reps)
        parts.append(metric_by_class(metric, cell, w_t, w_n))
    return np.concatenate(parts) if parts else np.zeros(0)


def bootstrap_cells(
    results: pd.DataFrame,
    run: ScoredRun,
    metric: str,
    resampler: Resampler,
    *,
    level: float = 0.95,
    advance: Callable[[int], None] | None = None,
) -> Replicates:
    """Replicates of ``metric`` for every row of ``results`` (one run directory's cells);
    ``advance(1)`` is called after each row (progress). Calibration metrics
    (:mod:`interbias.metrics.weighted_llr`) keep each model's shared calibration fixed."""
    run.check_against(results, metric)
    values: dict[Key, np.ndarray] = {}
    for row in results.itertuples(index=False):
        cs = run.cell(str(row.model), str(row.cell))
        if metric in CALIBRATED_METRICS:
            reps = calibrated_replicates(metric, cs, run.calibration(str(row.model)), resampler)
        else:
            reps = blocked_replicates(metric, cs.sorted, cs.rows, resampler)
        values[(str(row.experiment), str(row.model), str(row.cell))] = reps
        if advance is not None:
            advance(1)
    return Replicates(metric, resampler.unit, resampler.n_boot, resampler.seed, level, resampler.rule, values)
