"""Per-model summaries of a results table: macro averages, chance diagnostics, cell intervals.

Macro average (InterBias-SV, Section 5): per model, the metric is first averaged over the
cells of each experiment (each cell once), then the experiment means are averaged with equal
weight. Cells above chance (EER > 0.5) are listed: EER is not clipped, and a value above 0.5
means the scores rank the two classes the wrong way round more often than not.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from interbias.analysis.contrasts import CHANCE, normalised
from interbias.analysis.stats.bootstrap import bootstrap_bias, reflected_ci
from interbias.analysis.stats.replicates import Replicates
from interbias.metrics.registry import names

#: Metrics whose cell interval is reflected around the estimate (biased replicates: a minimum
#: over thresholds, see interbias.metrics.verification.min_dcf_from_sweep).
REFLECTED = names(lambda s: s.interval == "reflected")


def _cell_reps(replicates: Replicates, grp: pd.DataFrame) -> np.ndarray:
    return np.stack([replicates.values[(r.experiment, r.model, r.cell)] for r in grp.itertuples(index=False)])


def macro(results: pd.DataFrame, metric: str, replicates: Replicates | None = None) -> pd.DataFrame:
    """Rows ``scope=experiment`` (mean over that experiment's cells) and ``scope=macro`` (mean of
    the experiment means), per model; with replicates, percentile intervals of both."""
    frame = normalised(results)
    chance = CHANCE.get(metric)
    rows = []
    for (model, family), grp in frame.groupby(["model", "family"], sort=False):
        exp_means, exp_reps = [], []
        for exp, sub in grp.groupby("experiment", sort=False):
            vals = sub[metric].to_numpy(float)
            row = {
                "model": model,
                "family": family,
                "scope": "experiment",
                "experiment": exp,
                "metric": metric,
                "n_experiments": 1,
                "n_cells": len(vals),
                "value": float(vals.mean()),
                "n_cells_above_chance": int((vals > chance).sum()) if chance is not None else 0,
            }
            exp_means.append(row["value"])
            if replicates is not None:
                reps = _cell_reps(replicates, sub).mean(axis=0)
                exp_reps.append(reps)
                lo, hi, _ = replicates.ci(reps)
                row.update(lo=float(lo), hi=float(hi))
            rows.append(row)
        row = {
            "model": model,
            "family": family,
            "scope": "macro",
            "experiment": "(all)",
            "metric": metric,
            "n_experiments": len(exp_means),
            "n_cells": len(grp),
            "value": float(np.mean(exp_means)),
            "n_cells_above_chance": int(sum(r["n_cells_above_chance"] for r in rows[-len(exp_means) :])),
        }
        if replicates is not None:
            lo, hi, _ = replicates.ci(np.mean(exp_reps, axis=0))
            row.update(lo=float(lo), hi=float(hi))
        rows.append(row)
    cols = [
        "model",
        "family",
        "scope",
        "experiment",
        "metric",
        "n_experiments",
        "n_cells",
        "value",
        "n_cells_above_chance",
    ]
    if replicates is not None:
        cols += ["lo", "hi", *replicates.stamp()]
    out = pd.DataFrame(rows, columns=cols)
    if replicates is not None:
        for k, v in replicates.stamp().items():
            out[k] = v
    return out


def above_chance(results: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Cells whose metric exceeds its chance level (EER > 0.5); empty for metrics without one."""
    frame = normalised(results)
    chance = CHANCE.get(metric)
    cols = ["experiment", "model", "family", "cell", "metric", "value", "flag"]
    if chance is None:
        return pd.DataFrame(columns=cols)
    hit = frame[frame[metric].astype(float) > chance]
    return pd.DataFrame(
        {
            "experiment": hit["experiment"],
            "model": hit["model"],
            "family": hit["family"],
            "cell": hit["cell"],
            "metric": metric,
            "value": hit[metric].astype(float),
            "flag": f"above chance ({metric} > {chance:g}): scores rank the classes the wrong way round",
        },
        columns=cols,
    ).reset_index(drop=True)


def cell_intervals(results: pd.DataFrame, replicates: Replicates) -> pd.DataFrame:
    """One row per results cell: the estimate, its bootstrap interval (percentile; for minDCF
    the reflected interval, which contains the estimate: ``interval`` says which) and the
    bootstrap bias (mean replicate − estimate)."""
    frame = normalised(results)
    metric = replicates.metric
    reps = _cell_reps(replicates, frame) if len(frame) else np.zeros((0, replicates.n_boot))
    lo, hi, n_valid = replicates.ci(reps)
    out = frame[["experiment", "model", "family", "cell"]].copy()
    out["metric"] = metric
    out["value"] = frame[metric].astype(float).to_numpy()
    reflected = metric in REFLECTED
    if reflected and len(frame):
        lo, hi = reflected_ci(out["value"].to_numpy(), reps, replicates.level)
    out["lo"], out["hi"], out["n_boot_valid"] = lo, hi, n_valid
    out["interval"] = "reflected" if reflected else "percentile"
    out["bias"] = bootstrap_bias(out["value"].to_numpy(), reps) if len(frame) else np.zeros(0)
    for k, v in replicates.stamp().items():
        out[k] = v
    return out.reset_index(drop=True)
