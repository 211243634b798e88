"""Validation of the additive (main-effects) prediction on held-out joint cells (Section 6).

Per experiment × model, the metric of cell (l_1, …, l_k) is modelled as
M = μ + Σ_f α_f(l_f) (treatment coding: α_f(ref_f) = 0), fitted by ordinary least squares
over measured cells. Leave-one-setting-out: each joint cell (two or more factors away from
reference) is removed in turn, the model is fitted on every other measured cell and predicts
the removed one; error = observed − predicted. The prediction is reported only where it is
estimable (the held-out cell's design row lies in the row space of the fitted cells' design);
otherwise the setting is listed as not estimable. With only the reference row and column of a
two-factor grid, the prediction equals the four-term one and the error equals IE.
The tolerance is fixed up front (default 0.01 EER): the summary gives the share of settings
with |error| ≤ tolerance and names the worst settings.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from interbias.analysis.contrasts import SLOTS, Grid, grids
from interbias.utils.errors import AnalysisError

DEFAULT_TOLERANCE = 0.01
_WORST = 3


@dataclass(frozen=True)
class AdditivityTables:
    settings: pd.DataFrame
    summary: pd.DataFrame


def _design(g: Grid, keys: list[tuple[str, ...]]) -> np.ndarray:
    columns = [(i, lv) for i, s in enumerate(g.slots) for lv in g.levels[s] if lv != g.ref[s]]
    x = np.zeros((len(keys), 1 + len(columns)))
    x[:, 0] = 1.0
    for r, k in enumerate(keys):
        for c, (i, lv) in enumerate(columns, start=1):
            x[r, c] = float(k[i] == lv)
    return x


def _loso(g: Grid, tolerance: float) -> list[dict]:
    keys = list(g.value)
    y = np.array([g.value[k] for k in keys])
    x = _design(g, keys)
    rows = []
    for j, k in enumerate(keys):
        away = sum(v != g.ref[s] for v, s in zip(k, g.slots, strict=True))
        if away < 2:
            continue
        train = np.arange(len(keys)) != j
        xt, yt = x[train], y[train]
        rank = np.linalg.matrix_rank(xt)
        estimable = np.linalg.matrix_rank(np.vstack([xt, x[j]])) == rank
        row = {
            **g.info,
            **{f"level_{s}": "" for s in SLOTS},
            **{f"level_{s}": v for s, v in zip(g.slots, k, strict=True)},
            "setting": ",".join(f"{g.factor[s]}={v}" for s, v in zip(g.slots, k, strict=True)),
            "cell": g.cell.get(k, ""),
            "observed": y[j],
            "n_fit_cells": int(train.sum()),
            "n_params": x.shape[1],
            "estimable": bool(estimable),
            "tolerance": tolerance,
        }
        if estimable:
            beta = np.linalg.lstsq(xt, yt, rcond=None)[0]
            pred = float(x[j] @ beta)
            err = float(y[j] - pred)
            row.update(predicted=pred, error=err, abs_error=abs(err), within_tolerance=abs(err) <= tolerance)
        else:
            row.update(predicted=np.nan, error=np.nan, abs_error=np.nan, within_tolerance=False)
        rows.append(row)
    return rows


SETTING_COLUMNS = [
    "experiment",
    "dataset",
    "model",
    "family",
    "level_a",
    "level_b",
    "level_c",
    "setting",
    "cell",
    "metric",
    "observed",
    "predicted",
    "error",
    "abs_error",
    "within_tolerance",
    "tolerance",
    "estimable",
    "n_fit_cells",
    "n_params",
]
SUMMARY_COLUMNS = [
    "experiment",
    "model",
    "family",
    "metric",
    "tolerance",
    "n_settings",
    "n_estimable",
    "n_within",
    "share_within",
    "mean_error",
    "mean_abs_error",
    "median_abs_error",
    "max_abs_error",
    "worst_settings",
]


def validate_additivity(
    results: pd.DataFrame, metric: str = "eer", *, tolerance: float = DEFAULT_TOLERANCE
) -> AdditivityTables:
    """Leave-one-setting-out errors of the main-effects model, per setting and per model."""
    if not (tolerance > 0 and tolerance < float("inf")):
        raise AnalysisError(f"--tolerance must be positive, got {tolerance}")
    rows = []
    for g in grids(results, metric):
        if len(g.slots) >= 2:
            rows += [{**r, "metric": metric} for r in _loso(g, tolerance)]
    settings = pd.DataFrame(rows, columns=SETTING_COLUMNS)
    summary = []
    for (exp, model, family), grp in settings.groupby(["experiment", "model", "family"], sort=False):
        est = grp[grp["estimable"]]
        worst = est.reindex(est["abs_error"].sort_values(ascending=False).index).head(_WORST)
        summary.append(
            {
                "experiment": exp,
                "model": model,
                "family": family,
                "metric": metric,
                "tolerance": tolerance,
                "n_settings": len(grp),
                "n_estimable": len(est),
                "n_within": int(est["within_tolerance"].sum()),
                "share_within": float(est["within_tolerance"].mean()) if len(est) else np.nan,
                "mean_error": float(est["error"].mean()) if len(est) else np.nan,
                "mean_abs_error": float(est["abs_error"].mean()) if len(est) else np.nan,
                "median_abs_error": float(est["abs_error"].median()) if len(est) else np.nan,
                "max_abs_error": float(est["abs_error"].max()) if len(est) else np.nan,
                "worst_settings": "; ".join(f"{r.setting} ({r.error:+.4f})" for r in worst.itertuples()),
            }
        )
    return AdditivityTables(settings, pd.DataFrame(summary, columns=SUMMARY_COLUMNS))
