"""Bootstrap replicates of every results cell's metric, shared by contrasts, gaps and macros.

Each cell × model gets ``B`` replicate values from the same trial weights (one resample per
replicate for the whole run, see :mod:`interbias.analysis.bootstrap`), so any statistic built
from cells (IE, gap, mean over models) gets its replicates by the same arithmetic applied to
the cells' replicates, and its percentile interval from those.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from interbias.analysis.bootstrap import Resampler, percentile_ci
from interbias.analysis.scored_run import ScoredRun
from interbias.metrics.weighted import metric_batch
from interbias.metrics.weighted_llr import CALIBRATED_METRICS
from interbias.utils.errors import AnalysisError

Key = tuple[str, str, str]


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
        w = resampler.weights(cs.rows)
        if metric in CALIBRATED_METRICS:
            reps = run.calibration(str(row.model)).batch(metric, cs.scores, cs.labels, w, cs.sorted)
        else:
            reps = metric_batch(metric, cs.sorted, w)
        values[(str(row.experiment), str(row.model), str(row.cell))] = reps
        if advance is not None:
            advance(1)
    return Replicates(metric, resampler.unit, resampler.n_boot, resampler.seed, level, resampler.rule, values)
