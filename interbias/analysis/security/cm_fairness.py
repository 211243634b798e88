"""CM fairness under compound conditions (the deepfake gender-fairness study's Tables I–V, per cell).

One implementation, two entry points: the five group metrics, the dev-EER threshold and the
Holm-corrected tests (clustered by speaker by default) are :mod:`interbias.analysis.groups.fairness` (``fairness_report`` with
positive class ``spoof``), the same code ``interbias scores fairness`` runs on a score file.

- Threshold: per model, the EER threshold of its clean-cell dev scores (label 1 = bona fide),
  applied unchanged to the eval scores of every cell and to both genders.
- Tables (one per metric): per model × cell the female and male values, their difference
  (female − male), the raw and Holm-adjusted p-value of the speaker-clustered test (Holm across
  every comparison of the run).
- Interaction contrast of the fairness gap g = value_female − value_male, for factor levels
  a ≠ ref_a, b ≠ ref_b: IC = g(a, b) − g(a, ref_b) − g(ref_a, b) + g(ref_a, ref_b). IC > 0:
  the compound condition moves the gap more than the two conditions alone predict.
- Speaker-level bootstrap: each replicate draws the eval speakers of each gender with
  replacement (all their utterances, bona fide and spoof, come along), the same draw for
  every cell, so cell differences and IC are paired; percentile 95 % intervals over the
  replicates where the value is defined (``n_boot`` counts them). Replicate r of model m
  uses ``derive_rng("cm-bootstrap", seed, m, r)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from interbias.analysis.groups.fairness import (
    METRICS,
    FairnessReport,
    Threshold,
    Unit,
    confusion,
    fairness_report,
    metric_counts,
    ratio,
    single_groups,
)
from interbias.metrics import verification as metrics
from interbias.metrics.thresholds import ThresholdRule
from interbias.utils.errors import AnalysisError
from interbias.utils.seeding import derive_rng

TABLE_COLUMNS = (
    "metric", "model", "cell", "female", "male", "difference", "ci_low", "ci_high", "n_boot",
    "z", "p_value", "p_holm", "significant", "threshold",
)  # fmt: skip
INTERACTION_COLUMNS = (
    "model", "metric", "factor_a", "level_a", "factor_b", "level_b", "gap_ab", "gap_a", "gap_b", "gap_ref",
    "ic", "ci_low", "ci_high", "n_boot",
)  # fmt: skip


def labels01(frame: pd.DataFrame) -> np.ndarray:
    return (frame["label"].astype(str) == "bonafide").to_numpy().astype(np.int64)


def dev_thresholds(scores: pd.DataFrame, ref_cell: str, rule: str = "eer") -> dict[str, Threshold]:
    """Per model, the threshold ``rule`` chooses on its clean-cell dev scores."""
    the_rule = ThresholdRule.parse(rule)
    out = {}
    for model, rows in scores.groupby("model", sort=False):
        dev = rows[(rows["cell"] == ref_cell) & (rows["split"] == "dev")]
        if not len(dev):
            raise AnalysisError(f"{model}: no dev scores in the reference cell {ref_cell}")
        lab = labels01(dev)
        value = the_rule.choose(dev["score"].to_numpy(), lab)
        source = f"dev split of {ref_cell}: {len(dev)} utterances ({int(lab.sum())} bona fide, {int((lab == 0).sum())} spoof)"
        out[str(model)] = Threshold(float(value), the_rule.label, source)
    return out


def cm_units(scores: pd.DataFrame, thresholds: dict[str, Threshold]) -> list[Unit]:
    """One fairness unit per model × cell of the eval scores, grouped by gender."""
    ev = scores[scores["split"] == "eval"]
    units = []
    for (model, cell), rows in ev.groupby(["model", "cell"], sort=False):
        units.append(
            Unit(
                keys={"model": str(model), "cell": str(cell)},
                scores=rows["score"].to_numpy(dtype=np.float64),
                labels=labels01(rows),
                groups={"gender": single_groups(rows["gender"].tolist())},
                threshold=thresholds[str(model)],
                speakers=(rows["speaker"].astype(str).to_numpy(), rows["speaker"].astype(str).to_numpy()),
            )
        )
    return units


def cm_fairness(
    scores: pd.DataFrame, ref_cell: str, *, rule: str = "eer", alpha: float = 0.05, test: str = "speaker"
) -> FairnessReport:
    """The fairness report of a CM score table (positive class: spoof); ``test`` ``speaker``
    clusters each utterance by its speaker, ``trial-z`` treats utterances as independent."""
    units = cm_units(scores, dev_thresholds(scores, ref_cell, rule))
    return fairness_report(units, positive="spoof", alpha=alpha, test=test)


def gaps(s: np.ndarray, lab: np.ndarray, gender: np.ndarray, thr: float) -> dict[str, float]:
    """female − male value of every metric at ``thr`` (positive class spoof); NaN where undefined."""
    out = {}
    conf = {g: confusion(s[gender == g], lab[gender == g], thr, "spoof") for g in ("female", "male")}
    for name in METRICS:
        f_num, f_den, _, _ = metric_counts(conf["female"], name)
        m_num, m_den, _, _ = metric_counts(conf["male"], name)
        out[name] = ratio(f_num, f_den) - ratio(m_num, m_den)
    return out


def cell_values(ev: pd.DataFrame, thr: float) -> dict[str, dict[str, float]]:
    """Per cell: the EER and the five gaps of these eval rows."""
    out = {}
    for cell, rows in ev.groupby("cell", sort=False):
        s, lab = rows["score"].to_numpy(np.float64), labels01(rows)
        g = rows["gender"].astype(str).to_numpy()
        vals = gaps(s, lab, g, thr)
        vals["eer"] = metrics.eer(s, lab) if 0 < lab.sum() < len(lab) else math.nan
        out[str(cell)] = vals
    return out


def contrasts(
    values: dict[str, dict[str, float]], grid: Sequence[tuple[str, str, str, str, str]]
) -> dict[tuple, float]:
    """IC per (metric, level_a, level_b) from ``grid`` rows (level_a, level_b, cell_ab, cell_a, cell_b, cell_ref)."""
    out = {}
    for la, lb, ab, a, b, ref in [(g[0], g[1], *g[2]) for g in grid]:  # type: ignore[misc]
        for name in METRICS:
            out[(name, la, lb)] = values[ab][name] - values[a][name] - values[b][name] + values[ref][name]
    return out


def bootstrap(ev: pd.DataFrame, thr: float, grid: list, *, n: int, seed: int, model: str) -> dict[str, list]:
    """Replicates of every cell value and IC (module docstring)."""
    speakers = {g: sorted(ev.loc[ev["gender"] == g, "speaker"].unique()) for g in ("female", "male")}
    groups = {s: idx for s, idx in ev.groupby("speaker", sort=False).indices.items()}
    reps: dict[str, list] = {}
    for r in range(n):
        rng = derive_rng("cm-bootstrap", seed, model, r)
        take = [groups[s] for g in ("female", "male") for s in rng.choice(speakers[g], len(speakers[g]), replace=True)]
        sample = ev.iloc[np.concatenate(take)]
        vals = cell_values(sample, thr)
        for cell, v in vals.items():
            for k, x in v.items():
                reps.setdefault(f"{cell}|{k}", []).append(x)
        for key, x in contrasts(vals, grid).items():
            reps.setdefault("ic|" + "|".join(key), []).append(x)
    return reps


def interval(xs: list[float] | None) -> tuple[float, float, int]:
    """Percentile 95 % interval over the finite replicates, and their number."""
    a = np.asarray([x for x in (xs or []) if np.isfinite(x)], dtype=np.float64)
    if not len(a):
        return math.nan, math.nan, 0
    lo, hi = np.quantile(a, [0.025, 0.975])
    return float(lo), float(hi), len(a)


def paper_tables(report: FairnessReport, boots: dict[str, dict[str, list]]) -> pd.DataFrame:
    """Tables I–V in long form: one row per metric × model × cell (module docstring)."""
    comp = report.comparisons
    if not len(comp):
        raise AnalysisError("CM fairness: no female/male comparison (is gender in the manifest?)")
    comp = comp[(comp["group_by"] == "gender") & (comp["group_a"] == "female") & (comp["group_b"] == "male")]
    rows = []
    for r in comp.itertuples(index=False):
        lo, hi, nb = interval(boots.get(r.model, {}).get(f"{r.cell}|{r.metric}"))
        rows.append(
            {
                "metric": r.metric, "model": r.model, "cell": r.cell, "female": r.value_a, "male": r.value_b,
                "difference": r.difference, "ci_low": lo, "ci_high": hi, "n_boot": nb, "z": r.z,
                "p_value": r.p_value, "p_holm": r.p_holm, "significant": r.significant, "threshold": r.threshold,
            }
        )  # fmt: skip
    return pd.DataFrame(rows, columns=list(TABLE_COLUMNS))


def interaction_table(
    scores: pd.DataFrame, thresholds: dict[str, Threshold], grid: list, factors: tuple[str, str], boots: dict
) -> pd.DataFrame:
    """The interaction contrast of the fairness gap per model, metric and level pair."""
    rows = []
    ev = scores[scores["split"] == "eval"]
    for model, mrows in ev.groupby("model", sort=False):
        vals = cell_values(mrows, thresholds[str(model)].value)
        for (name, la, lb), ic in contrasts(vals, grid).items():
            ab, a, b, ref = next(g[2] for g in grid if g[0] == la and g[1] == lb)
            lo, hi, nb = interval(boots.get(str(model), {}).get(f"ic|{name}|{la}|{lb}"))
            rows.append(
                {
                    "model": model, "metric": name, "factor_a": factors[0], "level_a": la, "factor_b": factors[1],
                    "level_b": lb, "gap_ab": vals[ab][name], "gap_a": vals[a][name], "gap_b": vals[b][name],
                    "gap_ref": vals[ref][name], "ic": ic, "ci_low": lo, "ci_high": hi, "n_boot": nb,
                }
            )  # fmt: skip
    return pd.DataFrame(rows, columns=list(INTERACTION_COLUMNS))


def markdown_tables(tables: pd.DataFrame) -> str:
    """The five tables (I–V) as Markdown: model, cell, female, male, difference [CI], p (Holm)."""
    roman = ("I", "II", "III", "IV", "V")
    out = []
    for i, name in enumerate(METRICS):
        t = tables[tables["metric"] == name]
        out.append(f"### Table {roman[i]}: {name.replace('_', ' ')} ({METRICS[name][0]}, positive = spoof)\n")
        out.append("| model | cell | female | male | difference [95% CI] | p (Holm) |")
        out.append("| --- | --- | ---: | ---: | ---: | ---: |")
        for r in t.itertuples(index=False):
            ci = f" [{r.ci_low:+.4f}, {r.ci_high:+.4f}]" if np.isfinite(r.ci_low) else ""
            diff = f"{fmt_value(r.difference, '+.4f')}{ci}"
            out.append(
                f"| {r.model} | {r.cell} | {fmt_value(r.female)} | {fmt_value(r.male)} | {diff} | {_p(r.p_holm)} |"
            )
        out.append("")
    return "\n".join(out)


def fmt_value(x: Any, spec: str = ".4f") -> str:
    """A value, or ``n/a`` where its denominator was zero (NaN)."""
    return "n/a" if x is None or not np.isfinite(x) else format(x, spec)


def _p(p: Any) -> str:
    return "n/a" if p is None or not np.isfinite(p) else f"{p:.4g}"
