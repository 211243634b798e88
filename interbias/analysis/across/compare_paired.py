"""``compare --paired``: two runs on one trial list, compared trial by trial.

When both runs hold per-trial scores on the same trial list (equal ``trials_sha256``), each
matched results row (experiment × cell × model) and metric gets the paired difference
d = metric(new) − metric(base), measured on the trials both rows measured, and its standard
error from the **corrected paired speaker bootstrap** the findings use
(:mod:`interbias.analysis.effects`): each replicate redraws the trial list's speakers (two-way,
within blocks of speakers that share strata) and recomputes both runs' metric under the same
trial weights, so speaker effects common to the two runs cancel (V_S); a second bootstrap
redraws the non-target speaker pairs (V_N), and SE² = a·V_S − c·V_N with the design constants
of :class:`~interbias.analysis.effects.Correction` (``design="speaker"``: SE² = V_S, the normal).

The family: every row × metric except rows whose scores are identical in both runs (identical
inputs, e.g. clean cells: d = 0 exactly), minDCF rows without support at p_target 0.01
(n_nontarget·0.01 < :data:`~interbias.analysis.effects.MIN_EVENTS`) and rows whose Satterthwaite
df is below :data:`~interbias.analysis.across.paired_power.MIN_DF` (a t test there can hardly ever
reject at a Holm level, yet would enlarge the family); those are counted and said (``family``).

- regression (the default): one-sided p = P(T > (d − margin) / SE), T Student's t with the
  corrected SE's Satterthwaite df, per row; Holm over the family; the gate fails (exit 1) only
  when a regression larger than ``margin`` is resolved after Holm (or a row is missing). The
  smallest detectable regression is stated from that same test
  (:mod:`interbias.analysis.across.paired_power`: 80 % power for one regression at Holm's first level
  α/m, the noncentral t at the row's df, the SE measured under a planted regression of that
  size at the family's median-SE row).
- equivalence (``--equivalence E``): two one-sided tests, p = max(P(T > (d + E)/SE),
  P(T < (d − E)/SE)); the gate passes only when every row of the family is shown within ±E at
  α (the intersection-union test needs no multiplicity adjustment).

A row whose replicates have no spread (identical scores) has d exactly and is decided by d
itself. Replicates draw from ``derive_rng("bootstrap", unit, seed, b)`` (the analysis's).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import norm
from scipy.stats import t as student_t

from interbias.analysis.across.paired_power import MIN_DF, POWER, Detectable, PlantContext, detectable, row_spread
from interbias.analysis.effects import DESIGNS, MIN_EVENTS, Correction
from interbias.analysis.groups.fairness_stats import holm
from interbias.analysis.stats.bootstrap import MIN_BOOT, MIN_BOOT_CORRECTED, Resampler, TrialDesign
from interbias.analysis.stats.cost import check_boot_time
from interbias.analysis.suite import design_constants
from interbias.metrics.registry import replicable
from interbias.metrics.weighted import metric_batch, sort_cell
from interbias.utils.budget import TIME_LIMIT_S
from interbias.utils.errors import AnalysisError

KEY = ("experiment", "cell", "model")
PAIRED_METRICS = replicable(calibrated=False)
COLUMNS = (
    *KEY, "metric", "n_trials", "base", "new", "diff", "se", "se_speaker", "df", "ci_low", "ci_high",
    "p_regression", "p_holm", "regression", "p_equivalence", "equivalent", "left_out", "note",
)  # fmt: skip
#: Why a row × metric is not in the gate's family (``left_out``).
IDENTICAL = "identical scores in both runs (identical inputs)"
UNSUPPORTED = "minDCF without support at p_target 0.01"
#: Said of rows whose corrected variance is not positive (too few speakers or pairs): they keep
#: the larger, conservative SE √(a·V_S) and the normal.
SPEAKER_SE = "with the speaker SE (corrected variance not positive: too few speakers or pairs)"
LOW_DF = f"Satterthwaite df below {MIN_DF:g} (too few speakers or pairs for a t test)"


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
    design: str = "corrected"

    @property
    def family(self) -> str:
        tested = self.rows[self.rows["left_out"] == ""]
        n = len(tested)
        se = "corrected paired speaker bootstrap" if self.design == "corrected" else "paired speaker bootstrap"
        out = left_out_line(self.rows)
        if self.equivalence is not None:
            return (
                f"equivalence: {n} row x metric value(s), each shown within +/-{self.equivalence:g} by two "
                f"one-sided tests at alpha {self.alpha:g} (all must pass: intersection-union, no adjustment); "
                f"SE from a {se} ({self.n_boot} replicates){out}"
            )
        return (
            f"regression: {n} row x metric value(s), one-sided tests of new - base > {self.margin:g}, "
            f"Holm-adjusted together at alpha {self.alpha:g}; SE from a {se} ({self.n_boot} replicates){out}"
            f"{detectable_line(self.rows)}"
        )

    @property
    def ok(self) -> bool:
        if len(self.only_base) or len(self.only_new):
            return False
        tested = self.rows[self.rows["left_out"] == ""]
        if self.equivalence is not None:
            return bool(tested["equivalent"].all())
        return not bool(tested["regression"].any())


def left_out_line(rows: pd.DataFrame) -> str:
    """``; left out of the family: N identical…, M …; K with the speaker SE …`` (empty when
    none is left out or noted)."""
    counts = rows.loc[rows["left_out"] != "", "left_out"].value_counts(sort=False)
    out = "; left out of the family: " + ", ".join(f"{n} {why}" for why, n in counts.items()) if len(counts) else ""
    noted = int((rows["note"] == SPEAKER_SE).sum())
    return out + (f"; {noted} {SPEAKER_SE}" if noted else "")


def detectable_line(rows: pd.DataFrame) -> str:
    """``; smallest detectable regression (80 % power, …): eer 0.0412 (t, df 23, SE …)`` from
    the sizes :func:`paired_test` attached (empty when none)."""
    found: tuple[Detectable, ...] = rows.attrs.get("detectable", ())
    if not found:
        return ""
    m = found[0].family
    return (
        f"; smallest detectable regression ({POWER:.0%} power when it is the only one; one-sided t at "
        f"Holm's first level alpha/{m}; SE measured with a regression of that size planted in the "
        "median-SE row): " + ", ".join(d.text() for d in found)
    )


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
    design: str = "corrected",
    state_power: bool = True,
) -> pd.DataFrame:
    """One row per paired results row × metric (columns :data:`COLUMNS`). ``trials``: the
    shared trial list (``trial_id``, ``enrol_speaker``, ``test_speaker``, ``label``,
    ``stratum``). With ``state_power`` (regression gate), ``attrs["detectable"]`` holds each
    metric's smallest detectable regression (:func:`detectable_line`)."""
    _check(metrics, margin, equivalence, alpha, n_boot, design)
    frame_in = trials if "stratum" in trials.columns else trials.assign(stratum="all")
    trial_design = TrialDesign.from_frame(frame_in)
    speaker = Resampler(trial_design, n_boot=n_boot, seed=seed, unit="speaker")
    pairs = Resampler(trial_design, n_boot=n_boot, seed=seed, unit="nontarget") if design == "corrected" else None
    out = []
    for row in rows:
        corr = Correction(None, *design_constants(trial_design, [row.trial_rows])) if pairs is not None else None  # type: ignore[arg-type]
        cells = sort_cell(row.base, row.labels), sort_cell(row.new, row.labels)
        w_s = speaker.weights(row.trial_rows)
        w_n = pairs.weights(row.trial_rows) if pairs is not None else None
        for metric in metrics:
            out.append(_one(row, metric, cells, w_s, w_n, corr, margin, equivalence, alpha, n_boot))
    frame = pd.DataFrame(out, columns=[c for c in COLUMNS if c not in ("p_holm", "regression", "equivalent")])
    frame["p_holm"] = np.nan
    frame["regression"] = False
    tested = (frame["left_out"] == "").to_numpy()
    if tested.any():
        adj, rej = holm(frame.loc[tested, "p_regression"].to_numpy(), alpha)
        frame.loc[tested, "p_holm"] = adj
        frame.loc[tested, "regression"] = rej
    frame["equivalent"] = frame["p_equivalence"] <= alpha
    frame = frame[list(COLUMNS)]
    if state_power and equivalence is None and tested.any():
        found = _detectable(frame, rows, (speaker, pairs, trial_design), margin=margin, alpha=alpha, n_boot=n_boot)
        frame.attrs["detectable"] = found
    return frame


def _detectable(
    frame: pd.DataFrame, rows: Sequence[PairedRow], boot: tuple, *, margin: float, alpha: float, n_boot: int
) -> tuple[Detectable, ...]:
    """Per metric, the smallest detectable regression at the family's median-SE row
    (:mod:`interbias.analysis.across.paired_power`)."""
    speaker, pairs, trial_design = boot
    tested = frame[frame["left_out"] == ""]
    by_key = {row.key: row for row in rows}
    out = []
    for metric, part in tested.groupby("metric", sort=False):
        part = part[np.isfinite(part["se"])].sort_values("se", kind="stable")
        if not len(part):
            continue
        pick = part.iloc[(len(part) - 1) // 2]
        row = by_key[tuple(str(pick[k]) for k in KEY)]
        corr = Correction(None, *design_constants(trial_design, [row.trial_rows])) if pairs is not None else None  # type: ignore[arg-type]
        w_n = pairs.weights(row.trial_rows) if pairs is not None else None
        ctx = PlantContext(row.key, row.labels, row.base, row.new, speaker.weights(row.trial_rows), w_n, corr, n_boot)
        null = row_spread(str(metric), (sort_cell(row.base, row.labels), sort_cell(row.new, row.labels)),
                          ctx.w_s, w_n, corr, n_boot, SPEAKER_SE)  # fmt: skip
        out.append(detectable(ctx, str(metric), null, family=len(tested), alpha=alpha, margin=margin))
    return tuple(out)


def _one(
    row: PairedRow,
    metric: str,
    cells: tuple,
    w_s: np.ndarray,
    w_n: np.ndarray | None,
    corr: Correction | None,
    margin: float,
    equivalence: float | None,
    alpha: float,
    n_boot: int,
) -> dict:
    """One row × metric: d, its SE (corrected when ``corr``), df, interval, p-values and why it
    is left out of the family (``""`` when it is in)."""
    one = np.ones((1, len(row.labels)))
    b, n = (float(metric_batch(metric, c, one)[0]) for c in cells)
    d = n - b
    spread = row_spread(metric, cells, w_s, w_n, corr, n_boot, SPEAKER_SE)
    se, df, v_s = spread.se, spread.df, spread.v_s
    why = ""
    if np.array_equal(row.base, row.new):
        why = IDENTICAL
    elif metric == "min_dcf" and (~row.labels).sum() * 0.01 < MIN_EVENTS:
        why = UNSUPPORTED
    elif df < MIN_DF:
        why = LOW_DF
    q = float(student_t.isf(alpha / 2, df)) if np.isfinite(df) else float(norm.isf(alpha / 2))
    lo, hi = (d - q * se, d + q * se) if se > 0 else (d, d) if v_s == 0 else (math.nan, math.nan)
    return {
        **dict(zip(KEY, row.key, strict=True)), "metric": metric, "n_trials": len(row.labels),
        "base": b, "new": n, "diff": d, "se": se, "se_speaker": math.sqrt(v_s) if v_s >= 0 else math.nan,
        "df": df, "ci_low": lo, "ci_high": hi,
        "p_regression": _upper(d - margin, se if v_s > 0 else 0.0, df),
        "p_equivalence": math.nan if equivalence is None else _tost(d, se if v_s > 0 else 0.0, equivalence, df),
        "left_out": why, "note": spread.note if not why else "",
    }  # fmt: skip


def _check(
    metrics: Sequence[str], margin: float, equivalence: float | None, alpha: float, n_boot: int, design: str
) -> None:
    unknown = [m for m in metrics if m not in PAIRED_METRICS]
    if unknown:
        raise AnalysisError(f"--paired metric(s) {', '.join(unknown)}: valid: {', '.join(PAIRED_METRICS)}")
    if not (math.isfinite(margin) and margin >= 0):
        raise AnalysisError(f"--margin must be a finite number >= 0, got {margin}")
    if equivalence is not None and not (math.isfinite(equivalence) and equivalence > 0):
        raise AnalysisError(f"--equivalence must be a finite number > 0, got {equivalence}")
    if not 0 < alpha < 1:
        raise AnalysisError(f"--alpha must be in (0, 1), got {alpha}")
    if design not in DESIGNS:
        raise AnalysisError(f"--bootstrap-design {design!r}: valid: {', '.join(DESIGNS)}")
    need = MIN_BOOT_CORRECTED if design == "corrected" else MIN_BOOT
    if n_boot < need:
        raise AnalysisError(f"--bootstrap must be at least {need} for the {design} design, got {n_boot}")


def _upper(excess: float, se: float, df: float = math.inf) -> float:
    """P(T > excess / SE), T Student's t with ``df`` (the normal when infinite); with no spread,
    0 when excess > 0 else 1."""
    if not np.isfinite(excess):
        return math.nan
    if not se > 0:
        return 0.0 if excess > 0 else 1.0
    return float(student_t.sf(excess / se, df)) if np.isfinite(df) else float(norm.sf(excess / se))


def _tost(d: float, se: float, margin: float, df: float = math.inf) -> float:
    """Two one-sided tests of |d| < margin: the larger of the two p-values."""
    return max(_upper(d + margin, se, df), _upper(margin - d, se, df))


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
    design: str = "corrected",
    time_limit_s: float | None = TIME_LIMIT_S,
) -> PairedComparison:
    """The paired comparison of two run directories (or their results.csv) on one trial list."""
    from interbias.analysis import read_results
    from interbias.run.rundir import RESULTS, RunDir

    _check(metrics or ("eer",), margin, equivalence, alpha, n_boot, design)
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
    passes = 2 * len(metrics) * (2 if design == "corrected" else 1)  # both runs, each metric, each design pass
    weights = passes * sum(len(row.labels) for row in paired)
    each = f"{passes} × {weights // max(1, passes):,} trial weights of {len(paired)} row(s)"
    check_boot_time(n_boot, weights, each, limit_s=time_limit_s)
    rows = paired_test(
        trials,
        paired,
        metrics=metrics,
        margin=margin,
        equivalence=equivalence,
        alpha=alpha,
        n_boot=n_boot,
        design=design,
    )
    only_b = res[0].index.difference(res[1].index, sort=False).to_frame(index=False)
    only_n = res[1].index.difference(res[0].index, sort=False).to_frame(index=False)
    return PairedComparison(rows, margin, equivalence, alpha, n_boot, only_b, only_n, design)


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
