"""Encoders × experiments across runs, with intervals, a macro column and a cautious rank.

A column is one experiment on one trial list (``trials_sha256``): an experiment run twice on
different trial lists gives two columns, and encoders are compared only within a column,
never across trial lists. A cell is the mean of the metric over the experiment's cells (as in
the macro average); the macro column is the mean of an encoder's columns.

Rank: computed on the macro over the columns every ranked encoder has (``common``). For two
encoders the paired difference of their macro replicates (same speaker resample within a trial
list, independent across trial lists) gives a percentile interval; an encoder is separated
from another only when that interval excludes zero. rank = 1 + the number of encoders
separated from it and better (lower metric), so encoders that cannot be told apart share a
rank (``not_separated_from`` lists them).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from interbias.analysis.bootstrap import percentile_ci
from interbias.analysis.runs import RunAnalysis, experiment_replicates


@dataclass(frozen=True)
class Column:
    experiment: str
    trials_sha256: str
    label: str


@dataclass
class Leaderboard:
    metric: str
    level: float
    columns: list[Column]
    models: list[str]
    table: pd.DataFrame
    pairs: pd.DataFrame
    notes: list[str] = field(default_factory=list)

    def display(self) -> pd.DataFrame:
        """One text cell per encoder × column: ``value [lo, hi]`` or ``missing``."""
        out = self.table[["model"]].copy()
        for name in [c.label for c in self.columns] + ["macro"]:
            out[name] = [
                "missing" if pd.isna(v) else f"{v:.4f} [{lo:.4f}, {hi:.4f}]"
                for v, lo, hi in zip(self.table[name], self.table[f"{name}_lo"], self.table[f"{name}_hi"], strict=True)
            ]
        out["rank"] = self.table["rank"].map(lambda r: "" if pd.isna(r) else f"{int(r)}")
        out["not_separated_from"] = self.table["not_separated_from"]
        return out


def _columns(runs: list[RunAnalysis]) -> list[Column]:
    keys = list(
        dict.fromkeys((str(e), r.trials_sha256) for r in runs for e in dict.fromkeys(r.analysis.results["experiment"]))
    )
    shas: dict[str, list[str]] = {}
    for exp, sha in keys:
        shas.setdefault(exp, []).append(sha)
    return [Column(e, s, e if len(shas[e]) == 1 else f"{e} [{s[:8]}]") for e, s in keys]


def _entries(runs: list[RunAnalysis], notes: list[str]) -> dict[tuple[str, str, str], tuple[float, np.ndarray]]:
    """(model, experiment, sha) -> (value, replicates); a repeat in a later run is noted, not used."""
    out: dict[tuple[str, str, str], tuple[float, np.ndarray]] = {}
    for r in runs:
        for (model, exp), v in experiment_replicates(r.analysis).items():
            key = (model, exp, r.trials_sha256)
            if key in out:
                notes.append(f"{model} on {exp} appears again in {r.path} (same trial list): the first run is used")
                continue
            out[key] = v
    return out


def _rank(models: list[str], reps: dict[str, np.ndarray], level: float) -> tuple[dict, dict, pd.DataFrame]:
    better: dict[str, int] = {m: 0 for m in models}
    ties: dict[str, list[str]] = {m: [] for m in models}
    rows = []
    for i, a in enumerate(models):
        for b in models[i + 1 :]:
            lo, hi, _ = percentile_ci(reps[a] - reps[b], level)
            diff = float(np.nanmean(reps[a] - reps[b]))
            separated = bool(lo > 0 or hi < 0)
            if separated:  # the worse of the two has one more encoder separated from it and better
                better[b if hi < 0 else a] += 1
            else:
                ties[a].append(b)
                ties[b].append(a)
            rows.append(
                {
                    "model_a": a,
                    "model_b": b,
                    "mean_diff": diff,
                    "lo": float(lo),
                    "hi": float(hi),
                    "separated": separated,
                }
            )
    rank = {m: 1 + better[m] for m in models}
    return rank, ties, pd.DataFrame(rows, columns=["model_a", "model_b", "mean_diff", "lo", "hi", "separated"])


def build(runs: list[RunAnalysis]) -> Leaderboard:
    first = runs[0].analysis
    metric, level = first.options.metric, first.replicates.level if first.replicates else 0.95
    notes: list[str] = []
    cols = _columns(runs)
    entries = _entries(runs, notes)
    models = list(dict.fromkeys(m for m, _, _ in entries))
    for exp in dict.fromkeys(c.experiment for c in cols):
        shas = [c.trials_sha256[:12] for c in cols if c.experiment == exp]
        if len(shas) > 1:
            notes.append(
                f"{exp} was run on {len(shas)} different trial lists ({', '.join(shas)}): encoders are compared "
                "only within the same trial list, one column each"
            )
    rows = []
    have = {m: [c for c in cols if (m, c.experiment, c.trials_sha256) in entries] for m in models}
    common = [c for c in cols if all(c in have[m] for m in models)]
    macro_reps: dict[str, np.ndarray] = {}
    for m in models:
        row: dict[str, object] = {"model": m}
        for c in cols:
            v = entries.get((m, c.experiment, c.trials_sha256))
            lo, hi = percentile_ci(v[1], level)[:2] if v else (np.nan, np.nan)
            row.update({c.label: v[0] if v else np.nan, f"{c.label}_lo": float(lo), f"{c.label}_hi": float(hi)})
        vals = [entries[(m, c.experiment, c.trials_sha256)] for c in have[m]]
        mreps = np.mean([v[1] for v in vals], axis=0)
        lo, hi, _ = percentile_ci(mreps, level)
        row.update(macro=float(np.mean([v[0] for v in vals])), macro_lo=float(lo), macro_hi=float(hi))
        row.update(n_columns=len(vals), missing=", ".join(c.label for c in cols if c not in have[m]))
        if common:
            macro_reps[m] = np.mean([entries[(m, c.experiment, c.trials_sha256)][1] for c in common], axis=0)
        rows.append(row)
    table = pd.DataFrame(rows)
    if common:
        rank, ties, pairs = _rank(models, macro_reps, level)
        table["rank"] = [rank[m] for m in models]
        table["not_separated_from"] = [", ".join(ties[m]) for m in models]
        if len(common) < len(cols):
            notes.append(
                "rank uses the macro over the columns every encoder has ("
                + ", ".join(c.label for c in common)
                + "); the macro column averages each encoder's own columns"
            )
    else:
        table["rank"], table["not_separated_from"] = np.nan, ""
        pairs = pd.DataFrame(columns=["model_a", "model_b", "mean_diff", "lo", "hi", "separated"])
        notes.append("no column is shared by every encoder: no rank")
    for m in models:
        missing = [c.label for c in cols if c not in have[m]]
        if missing:
            notes.append(f"{m}: missing from {', '.join(missing)}")
    return Leaderboard(
        metric,
        level,
        cols,
        models,
        table.sort_values(["rank", "model"], na_position="last").reset_index(drop=True),
        pairs,
        notes,
    )
