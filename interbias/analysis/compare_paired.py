"""``compare --paired``: two runs on one trial list, compared trial by trial.

When both runs hold per-trial scores on the same trial list (equal ``trials_sha256``), each
matched results row (experiment × cell × model) and metric gets the paired difference
d = metric(new) − metric(base), measured on the trials both rows measured, and its standard
error from a **paired speaker bootstrap**: each replicate redraws the trial list's speakers
(two-way, within blocks of speakers that share strata; :class:`SpeakerBootstrap`) and
recomputes both runs' metric under the same trial weights, so speaker effects common to the
two runs cancel. With SE from the replicates:

- regression (the default): one-sided p = P(Z > (d − margin) / SE) per row (higher EER /
  minDCF is worse), Holm over every row × metric; the gate fails (exit 1) only when a
  regression larger than ``margin`` is resolved after Holm (or a row is missing).
- equivalence (``--equivalence E``): two one-sided tests, p = max(P(Z > (d + E)/SE),
  P(Z < (d − E)/SE)); the gate passes only when every row is shown within ±E at α (the
  intersection-union test needs no multiplicity adjustment).

Both tests are z-tests with the bootstrap SE; a row whose replicates have no spread (identical
scores) has d exactly and is decided by d itself. Replicates draw from
``derive_rng("compare-paired", seed)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import norm

from interbias.analysis.fairness_cluster import SpeakerBootstrap
from interbias.analysis.fairness_stats import holm
from interbias.metrics.registry import replicable
from interbias.metrics.weighted import metric_batch, sort_cell
from interbias.utils.errors import AnalysisError
from interbias.utils.seeding import derive_rng

KEY = ("experiment", "cell", "model")
PAIRED_METRICS = replicable(calibrated=False)
COLUMNS = (
    *KEY, "metric", "n_trials", "base", "new", "diff", "se", "ci_low", "ci_high",
    "p_regression", "p_holm", "regression", "p_equivalence", "equivalent",
)  # fmt: skip


@dataclass(frozen=True)
class PairedRow:
    """One matched results row: its key and both runs' scores on the same trials (aligned)."""

    key: tuple[str, str, str]
    trial_rows: np.ndarray  #: positions in the trial list
    labels: np.ndarray
    base: np.ndarray
    new: np.ndarray


@dataclass(frozen=True)
class PairedComparison:
    rows: pd.DataFrame
    margin: float
    equivalence: float | None
    alpha: float
    n_boot: int
    only_base: pd.DataFrame
    only_new: pd.DataFrame

    @property
    def family(self) -> str:
        n = len(self.rows)
        if self.equivalence is not None:
            return (
                f"equivalence: {n} row x metric value(s), each shown within +/-{self.equivalence:g} by two "
                f"one-sided z-tests at alpha {self.alpha:g} (all must pass: intersection-union, no adjustment); "
                f"SE from a paired speaker bootstrap ({self.n_boot} replicates)"
            )
        return (
            f"regression: {n} row x metric value(s), one-sided z-tests of new - base > {self.margin:g}, "
            f"Holm-adjusted together at alpha {self.alpha:g}; SE from a paired speaker bootstrap "
            f"({self.n_boot} replicates)"
        )

    @property
    def ok(self) -> bool:
        if len(self.only_base) or len(self.only_new):
            return False
        if self.equivalence is not None:
            return bool(self.rows["equivalent"].all())
        return not bool(self.rows["regression"].any())


def paired_test(
    trials: pd.DataFrame,
    rows: Sequence[PairedRow],
    *,
    metrics: Sequence[str] = ("eer", "min_dcf"),
    margin: float = 0.0,
    equivalence: float | None = None,
    alpha: float = 0.05,
    n_boot: int = 1000,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per paired results row × metric (columns :data:`COLUMNS`). ``trials``: the
    shared trial list (``enrol_speaker``, ``test_speaker``, ``stratum``)."""
    _check(metrics, margin, equivalence, alpha, n_boot)
    boot = SpeakerBootstrap.draw(
        trials["enrol_speaker"].to_numpy(),
        trials["test_speaker"].to_numpy(),
        trials["stratum"].to_numpy() if "stratum" in trials.columns else np.zeros(len(trials), str),
        n_boot=n_boot,
        rng=derive_rng("compare-paired", seed),
    )
    out = []
    for row in rows:
        weights = boot.pair_weights(boot.pair[row.trial_rows])
        cells = sort_cell(row.base, row.labels), sort_cell(row.new, row.labels)
        for metric in metrics:
            one = np.ones((1, len(row.labels)))
            b, n = (float(metric_batch(metric, c, one)[0]) for c in cells)
            reps = metric_batch(metric, cells[1], weights) - metric_batch(metric, cells[0], weights)
            ok = np.isfinite(reps)
            se = float(np.std(reps[ok], ddof=1)) if ok.sum() > 1 else math.nan
            lo, hi = np.quantile(reps[ok], [alpha / 2, 1 - alpha / 2]) if ok.any() else (math.nan, math.nan)
            d = n - b
            out.append(
                {
                    **dict(zip(KEY, row.key, strict=True)), "metric": metric, "n_trials": len(row.labels),
                    "base": b, "new": n, "diff": d, "se": se, "ci_low": float(lo), "ci_high": float(hi),
                    "p_regression": _upper(d - margin, se),
                    "p_equivalence": math.nan if equivalence is None else _tost(d, se, equivalence),
                }
            )  # fmt: skip
    frame = pd.DataFrame(out, columns=[c for c in COLUMNS if c not in ("p_holm", "regression", "equivalent")])
    adj, rej = holm(frame["p_regression"].to_numpy(), alpha) if len(frame) else (np.array([]), np.array([], bool))
    frame["p_holm"] = adj
    frame["regression"] = rej
    frame["equivalent"] = frame["p_equivalence"] <= alpha
    return frame[list(COLUMNS)]


def _check(metrics: Sequence[str], margin: float, equivalence: float | None, alpha: float, n_boot: int) -> None:
    unknown = [m for m in metrics if m not in PAIRED_METRICS]
    if unknown:
        raise AnalysisError(f"--paired metric(s) {', '.join(unknown)}: valid: {', '.join(PAIRED_METRICS)}")
    if not margin >= 0:
        raise AnalysisError(f"--margin must be >= 0, got {margin}")
    if equivalence is not None and not equivalence > 0:
        raise AnalysisError(f"--equivalence must be > 0, got {equivalence}")
    if not 0 < alpha < 1:
        raise AnalysisError(f"--alpha must be in (0, 1), got {alpha}")
    if n_boot < 50:
        raise AnalysisError(f"--bootstrap must be at least 50, got {n_boot}")


def _upper(excess: float, se: float) -> float:
    """P(Z > excess / SE); with no spread, 0 when excess > 0 else 1."""
    if not np.isfinite(excess):
        return math.nan
    if not se > 0:
        return 0.0 if excess > 0 else 1.0
    return float(norm.sf(excess / se))


def _tost(d: float, se: float, margin: float) -> float:
    """Two one-sided tests of |d| < margin: the larger of the two p-values."""
    return max(_upper(d + margin, se), _upper(margin - d, se))


# ---- run directories ----------------------------------------------------------------------------


def _run_dir(path: Path) -> Path:
    from interbias.run.rundir import RunDir

    path = Path(path)
    folder = path if path.is_dir() else path.parent
    if not RunDir(folder).has_scores:
        raise AnalysisError(
            f"{path}: --paired needs a run directory with per-trial scores (scores/ and trials.parquet); "
            "compare results files without scores with --tolerance"
        )
    return folder


def compare_paired(
    base: Path,
    new: Path,
    *,
    metrics: tuple[str, ...] | None = None,
    margin: float = 0.0,
    equivalence: float | None = None,
    alpha: float = 0.05,
    n_boot: int = 1000,
) -> PairedComparison:
    """The paired comparison of two run directories (or their results.csv) on one trial list."""
    from interbias.analysis import read_results
    from interbias.run.rundir import RESULTS, RunDir

    _check(metrics or ("eer",), margin, equivalence, alpha, n_boot)
    runs = [RunDir(_run_dir(p)) for p in (base, new)]
    res = [read_results(r.file(RESULTS), required=(*KEY, "trials_sha256")).set_index(list(KEY)) for r in runs]
    shas = {str(s) for frame in res for s in frame["trials_sha256"]}
    if len(shas) != 1:
        raise AnalysisError(
            f"--paired needs one trial list: the runs' trials_sha256 differ ({', '.join(sorted(shas))}); "
            "compare them with --tolerance"
        )
    trials = runs[0].read_trials().frame
    common = res[0].index.intersection(res[1].index, sort=False)
    paired = [_paired_row(runs, trials, key) for key in common]
    metrics = metrics or tuple(m for m in ("eer", "min_dcf") if m in res[0].columns and m in res[1].columns)
    rows = paired_test(
        trials, paired, metrics=metrics, margin=margin, equivalence=equivalence, alpha=alpha, n_boot=n_boot
    )
    only_b = res[0].index.difference(res[1].index, sort=False).to_frame(index=False)
    only_n = res[1].index.difference(res[0].index, sort=False).to_frame(index=False)
    return PairedComparison(rows, margin, equivalence, alpha, n_boot, only_b, only_n)


def _paired_row(runs: list, trials: pd.DataFrame, key: tuple) -> PairedRow:
    """Both runs' scores of one row on the trials both measured (eval, bona fide, not dropped)."""
    from interbias.run.measured import measured

    _, cell, model = key
    frames = []
    for run in runs:
        path = run.scores_path(model, cell)
        if not path.is_file():
            raise AnalysisError(f"{run.path}: scores of {model} / {cell} are missing ({path.name})")
        sc = run.read_scores(model, cell)
        joined = sc.drop(columns=[c for c in ("split", "trial_type") if c in sc.columns]).merge(
            trials[["trial_id", *[c for c in ("split", "trial_type") if c in trials.columns]]], on="trial_id"
        )
        frames.append(joined.set_index("trial_id")[measured(joined)])
    ids = frames[0].index.intersection(frames[1].index).sort_values()
    position = pd.Series(np.arange(len(trials)), index=trials["trial_id"].to_numpy())
    return PairedRow(
        key=tuple(str(k) for k in key),  # type: ignore[arg-type]
        trial_rows=position.loc[ids].to_numpy(),
        labels=frames[0].loc[ids, "label"].to_numpy().astype(bool),
        base=frames[0].loc[ids, "score"].to_numpy(np.float64),
        new=frames[1].loc[ids, "score"].to_numpy(np.float64),
    )
