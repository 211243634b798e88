"""Encoders × experiments across runs, with intervals, a macro column and a cautious rank.

A column is one experiment on one trial list (``trials_sha256``): an experiment run twice on
different trial lists gives two columns, and encoders are compared only within a column,
never across trial lists. A cell is the mean of the metric over the experiment's cells (as in
the macro average); the macro column is the mean of an encoder's columns.

Rank: computed on the macro over the columns every ranked encoder has (``common``). For two
encoders, ``observed_diff`` = macro(a) − macro(b) on the data, and the paired difference of
their macro replicates gives a percentile interval (``lo``, ``hi``), an SE and a two-sided
p-value (:mod:`interbias.analysis.stats.multiplicity`: Wald test with the bootstrap SE). Replicates
are paired within a trial list (the same speaker resample for every encoder); replicate ``b``
of every run uses the same seed, so across trial lists the resamples are not independent
draws (they pick the same positions where speaker blocks have the same sizes): a column
mixing trial lists has an approximate interval. Holm's adjustment over all pairs
(``p_holm``); a pair is separated when p_holm < 1 − level. rank = 1 + the length of the
longest chain of separations above the encoder (k separated from and better than m, observed
lower metric, gives rank(m) ≥ rank(k) + 1), so a separated pair never shares a rank and the
better one always ranks above, even when separations are not transitive; encoders that no
adjusted comparison separates share a rank where no chain sets them apart
(``not_separated_from`` lists them).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from interbias.analysis.across.runs import RunAnalysis, experiment_replicates
from interbias.analysis.stats import multiplicity
from interbias.analysis.stats.bootstrap import percentile_ci


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


PAIR_COLUMNS = ["model_a", "model_b", "observed_diff", "lo", "hi", "se", "p_value", "p_holm", "separated"]


def rank_encoders(
    models: list[str], observed: dict[str, float], reps: dict[str, np.ndarray], level: float
) -> tuple[dict[str, int], dict[str, list[str]], pd.DataFrame]:
    """(rank, not-separated-from, pairs) from each encoder's observed macro and its replicates."""
    rows = []
    for i, a in enumerate(models):
        for b in models[i + 1 :]:
            d = reps[a] - reps[b]
            lo, hi, _ = percentile_ci(d, level)
            rows.append(
                {
                    "model_a": a,
                    "model_b": b,
                    "observed_diff": observed[a] - observed[b],
                    "lo": float(lo),
                    "hi": float(hi),
                }
            )
    pairs = pd.DataFrame(rows, columns=PAIR_COLUMNS[:5])
    d_reps = np.array([reps[r.model_a] - reps[r.model_b] for r in pairs.itertuples(index=False)]).reshape(
        len(pairs), -1
    )
    pairs["se"] = multiplicity.bootstrap_se(d_reps) if len(pairs) else []
    pairs["p_value"] = multiplicity.wald_p(pairs["observed_diff"].to_numpy(float), pairs["se"].to_numpy(float))
    pairs["p_holm"] = multiplicity.adjust(pairs["p_value"].to_numpy(float), "holm")
    pairs["separated"] = (pairs["p_holm"] < round(1 - level, 12)).astype(bool)
    rank, ties = chain_ranks(observed, pairs)
    return {m: rank[m] for m in models}, ties, pairs[PAIR_COLUMNS]


def chain_ranks(observed: dict[str, float], pairs: pd.DataFrame) -> tuple[dict[str, int], dict[str, list[str]]]:
    """rank(m) = 1 + max rank of the encoders separated from m and better (observed lower), else
    1; and per encoder the encoders not separated from it. ``pairs``: model_a, model_b,
    observed_diff (a − b), separated."""
    ties: dict[str, list[str]] = {m: [] for m in observed}
    above: dict[str, list[str]] = {m: [] for m in observed}
    for r in pairs.itertuples(index=False):
        if r.separated:
            better, worse = (r.model_a, r.model_b) if r.observed_diff < 0 else (r.model_b, r.model_a)
            above[worse].append(better)
        else:
            ties[r.model_a].append(r.model_b)
            ties[r.model_b].append(r.model_a)
    rank: dict[str, int] = {}
    for m in sorted(observed, key=lambda k: (observed[k], k)):  # every encoder above m comes earlier
        rank[m] = 1 + max((rank[k] for k in above[m]), default=0)
    return rank, ties


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
    if len(models) < 2:
        table["rank"], table["not_separated_from"] = np.nan, ""
        pairs = pd.DataFrame(columns=PAIR_COLUMNS)
        notes.append(f"a single encoder ({', '.join(models) or 'none'}): no pair of encoders to compare, no rank")
    elif common:
        observed = {m: float(np.mean([entries[(m, c.experiment, c.trials_sha256)][0] for c in common])) for m in models}
        rank, ties, pairs = rank_encoders(models, observed, macro_reps, level)
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
        pairs = pd.DataFrame(columns=PAIR_COLUMNS)
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
