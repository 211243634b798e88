"""The report's calibration section: where the run's calibration costs most, and the Bayes
error-rate plot (normalised DCF against prior log-odds, actual and minimum, per cell × model).

Reads the calibration columns of results.csv (:mod:`interbias.run.calibrate`) and, for the
plot, the per-trial scores with the calibration recorded in run.json (slope, offset per model,
or per cell with ``fit_on: each``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.figure import Figure

from interbias.analysis.reporting.plots import new_figure
from interbias.metrics.llr import bayes_error_curve

if TYPE_CHECKING:
    from interbias.analysis.scored_run import ScoredRun

#: Prior log-odds of the Bayes error-rate plot (θ = logit p_target).
PRIOR_LOG_ODDS = np.linspace(-7.0, 7.0, 57)
TABLE_COLUMNS = ["model", "cell", "act_dcf", "min_dcf", "calibration_loss", "cllr", "min_cllr", "threshold_drift"]


def calibration_losses(results: pd.DataFrame) -> pd.Series:
    """The results' ``calibration_loss`` as numbers (NaN where empty: results read as text
    hold ``""`` for a run without a dev split); all NaN when the column is absent."""
    if "calibration_loss" not in results.columns:
        return pd.Series(np.nan, index=results.index)
    return pd.to_numeric(results["calibration_loss"], errors="coerce")


def has_calibration(results: pd.DataFrame) -> bool:
    """Whether any results row carries a measured calibration loss."""
    return bool(calibration_losses(results).notna().any())


def worst_cells(results: pd.DataFrame, per_model: int = 3) -> pd.DataFrame:
    """Per model, the ``per_model`` cells with the largest calibration loss (largest first)."""
    frame = results[calibration_losses(results).notna()].copy()
    for col in TABLE_COLUMNS[2:]:
        if col in frame.columns:
            frame[col] = pd.to_numeric(frame[col], errors="coerce")
    ranked = frame.sort_values(["model", "calibration_loss", "cell"], ascending=[True, False, True], kind="stable")
    return ranked.groupby("model", sort=False).head(per_model).reset_index(drop=True)


def bayes_curves(run: ScoredRun, results: pd.DataFrame) -> dict[str, list[tuple[str, np.ndarray, np.ndarray]]]:
    """model -> [(cell, actual DCF, minimum DCF)] over :data:`PRIOR_LOG_ODDS` (C_miss = C_fa = 1)."""
    record = run.calibration_record
    out: dict[str, list[tuple[str, np.ndarray, np.ndarray]]] = {}
    for r in results[calibration_losses(results).notna()].itertuples(index=False):
        cal = record.for_cell(str(r.model), str(r.cell)) if record is not None else None
        if cal is None:
            continue
        cs = run.cell(str(r.model), str(r.cell))
        act, low = bayes_error_curve(cs.scores, cal[0] * cs.scores + cal[1], cs.labels, PRIOR_LOG_ODDS)
        out.setdefault(str(r.model), []).append((str(r.cell), act, low))
    return out


def bayes_figure(curves: dict[str, list[tuple[str, np.ndarray, np.ndarray]]]) -> Figure:
    """One panel per model: per cell the actual (solid) and minimum (dotted, same colour)
    normalised DCF against prior log-odds; the dashed line is the cost of a fixed decision."""
    n = len(curves)
    cols = min(n, 2)
    rows = (n + cols - 1) // cols
    fig = new_figure(6.0 * cols, 4.5 * rows)
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).ravel()
    for ax, (model, items) in zip(axes, curves.items(), strict=False):
        for i, (cell, act, low) in enumerate(items):
            colour = colormaps["tab20"](i % 20)
            ax.plot(PRIOR_LOG_ODDS, act, color=colour, lw=1.2, label=cell)
            ax.plot(PRIOR_LOG_ODDS, low, color=colour, lw=0.9, ls=":")
        ax.axhline(1.0, color="0.5", lw=0.8, ls="--")
        ax.set_ylim(0, 1.2)
        ax.set_xlabel("prior log-odds θ = logit(p_target)")
        ax.set_ylabel("normalised DCF")
        ax.set_title(f"Bayes error rate: {model}")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6, loc="upper right")
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig


def false_alarm_step(results: pd.DataFrame, points: Sequence[dict[str, Any]]) -> float | None:
    """What one false alarm adds to act_dcf at the first operating point in the cell with the
    fewest non-targets: C_fa·(1 − p) / (N_non · min(C_miss·p, C_fa·(1 − p))) — the resolution
    of the act_dcf and calibration_loss columns (``None`` when unknown). ``points``: the
    calibration record's operating points."""
    if not points or "n_nontarget" not in results.columns:
        return None
    n_non = pd.to_numeric(results["n_nontarget"], errors="coerce").min()
    p, c_miss, c_fa = (float(points[0][k]) for k in ("p_target", "c_miss", "c_fa"))
    if not n_non or not np.isfinite(n_non):
        return None
    return c_fa * (1 - p) / (float(n_non) * min(c_miss * p, c_fa * (1 - p)))
