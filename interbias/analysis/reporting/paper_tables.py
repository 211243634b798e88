"""The seed paper's tables, from one analysed run (docs/paper-outputs.md maps each to its file):

* :func:`grid_table`: per experiment × model the metric as a grid, rows the levels of the
  first factor, columns the settings of the others, each cell ``value [lo, hi]`` (the cell's
  bootstrap interval, :func:`interbias.analysis.summaries.cell_intervals`);
* :func:`setting_table` (InterBias-SV Table 12): per contrast setting the observed metric and
  the additive prediction, each the mean over encoders, the family-mean IE, the ceiling bound
  ``ie_ceiling`` = U − prediction (U the metric's true maximum, :data:`UPPER`: 1 for EER, which
  reaches 1 on inverted scores, so IE ≤ U − prediction) and, labelled apart, the chance line
  ``ie_chance`` = chance − prediction (0.5 for EER: a reference, not a bound — seed 001);
* :func:`condition_table` (Tables 14–30): per experiment and cell the metric's mean ± SD
  (ddof 1) over encoders.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from interbias.analysis.contrasts import CHANCE, normalised
from interbias.analysis.reporting.numbers import format_value
from interbias.analysis.reporting.registry import report_section
from interbias.metrics.registry import upper_bounds

#: The true maximum U of each bounded metric: the ceiling IE ≤ U − prediction.
UPPER = upper_bounds()

if TYPE_CHECKING:
    from interbias.analysis.reporting.document import Report
    from interbias.analysis.suite import Analysis


def _factors(frame: pd.DataFrame) -> list[tuple[str, str]]:
    """(factor column, level column) of the slots in use."""
    return [
        (f"factor_{s}", f"level_{s}") for s in "abc" if f"factor_{s}" in frame and frame[f"factor_{s}"].ne("").any()
    ]


def _cell_text(value: float, lo: float | None, hi: float | None) -> str:
    text = format_value(float(value), "value")
    if lo is None or hi is None or not (np.isfinite(lo) and np.isfinite(hi)) or hi <= lo:
        return text
    return f"{text} [{format_value(float(lo), 'lo')}, {format_value(float(hi), 'hi')}]"


def grid_table(
    results: pd.DataFrame, metric: str, cells: pd.DataFrame | None, experiment: str, model: str
) -> pd.DataFrame:
    """One experiment × model as a grid: one row per level of the first factor (column named
    after it), one column per setting of the others (``B=b`` or ``B=b, C=c``), cells
    ``value [lo, hi]`` (value alone without intervals; ``missing`` where the run has no cell)."""
    frame = normalised(results)
    part = frame[(frame["experiment"] == experiment) & (frame["model"] == model)]
    slots = _factors(part)
    if not slots:
        return pd.DataFrame()
    ci = cells.set_index(["experiment", "model", "cell"]) if cells is not None else None
    first = str(part[slots[0][0]].iloc[0])
    rows: dict[str, dict[str, str]] = {}
    columns: list[str] = []
    for r in part.itertuples(index=False):
        d = r._asdict()
        col = ", ".join(f"{d[f]}={d[lv]}" for f, lv in slots[1:]) or metric
        if col not in columns:
            columns.append(col)
        lo = hi = None
        if ci is not None and (experiment, model, d["cell"]) in ci.index:
            c = ci.loc[(experiment, model, d["cell"])]
            lo, hi = float(c["lo"]), float(c["hi"])
        rows.setdefault(str(d[slots[0][1]]), {})[col] = _cell_text(d[metric], lo, hi)
    out = [{first: level, **{c: vals.get(c, "missing") for c in columns}} for level, vals in rows.items()]
    return pd.DataFrame(out, columns=[first, *columns])


def grids(results: pd.DataFrame, metric: str, cells: pd.DataFrame | None) -> list[tuple[str, str, pd.DataFrame]]:
    """(experiment, model, grid) for every experiment × model of the results."""
    frame = normalised(results)
    pairs = dict.fromkeys(zip(frame["experiment"].astype(str), frame["model"].astype(str), strict=True))
    out = [(e, m, grid_table(frame, metric, cells, e, m)) for e, m in pairs]
    return [(e, m, g) for e, m, g in out if len(g)]


def setting_table(contrasts: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Per experiment × contrast × setting: observed and additive prediction (means over
    encoders), n_models, the mean IE per model family (``ie_<family>``) and over all,
    ``ie_ceiling`` = U − mean prediction (U the metric's true maximum; NaN without one) and
    ``ie_chance`` = chance − mean prediction (a reference line; NaN without a chance level)."""
    if contrasts.empty:
        return pd.DataFrame()
    keys = ["experiment", "contrast", "level_a", "level_b", "level_c"]
    observed = f"{metric}_ab"
    rows = []
    for key, grp in contrasts.groupby(keys, sort=False):
        row = dict(zip(keys, key, strict=True))
        row.update(
            n_models=len(grp),
            observed=float(grp[observed].astype(float).mean()),
            predicted=float(grp["predicted"].astype(float).mean()),
            mean_ie=float(grp["ie"].astype(float).mean()),
        )
        for fam, f in grp.groupby("family", sort=True):
            row[f"ie_{fam}"] = float(f["ie"].astype(float).mean())
        upper, chance = UPPER.get(metric), CHANCE.get(metric)
        row["ie_ceiling"] = upper - row["predicted"] if upper is not None else np.nan
        row["ie_chance"] = chance - row["predicted"] if chance is not None else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


def condition_table(results: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Per experiment and cell: the metric's mean and SD (ddof 1; NaN with one encoder) over
    encoders, and how many encoders."""
    frame = normalised(results)
    rows = []
    for (exp, cell), grp in frame.groupby(["experiment", "cell"], sort=False):
        v = grp[metric].astype(float)
        rows.append({"experiment": exp, "cell": cell, "n_models": len(v), "mean": float(v.mean()),
                     "sd": float(v.std(ddof=1)) if len(v) > 1 else np.nan})  # fmt: skip
    return pd.DataFrame(rows, columns=["experiment", "cell", "n_models", "mean", "sd"])


@report_section("paper", 60)
def paper_section(a: Analysis, rep: Report) -> None:
    """The report's "Paper tables" section: the grid per model, the settings table (Table 12),
    the conditions table (Tables 14–30), Fig. 3 and the interaction figure."""
    from interbias.analysis.reporting import paper_figures
    from interbias.utils.paths import slug

    metric = a.options.metric
    rep.heading("Paper tables")
    ci = f" Brackets: the cell's {a.replicates.pct} percentile bootstrap interval." if a.replicates is not None else ""
    for exp, model, grid in grids(a.results, metric, a.cells):
        rep.para(f"{metric} of {model} in {exp}: rows the levels of {grid.columns[0]}, columns the other factors.{ci}")
        rep.table(grid)
    settings = setting_table(a.contrasts.contrasts, metric)
    if len(settings):
        rep.para(
            "Per setting (Table 12): observed and additive prediction, each the mean over encoders; mean IE over "
            "all encoders and per model family (ie_<family>); ie_ceiling = U − prediction, the largest IE the "
            "metric's maximum U leaves room for (U = 1 for EER); ie_chance = chance − prediction, a reference "
            "line only (0.5 for EER: scores can do worse than chance)."
        )
        rep.table(settings)
    rep.para(f"Per condition (Tables 14–30): {metric} mean and SD (ddof 1) over encoders.")
    rep.table(condition_table(a.results, metric))
    c = a.contrasts.contrasts
    if len(c):
        rep.draw(
            "prediction_vs_ie",
            "Additive prediction against IE",
            "One point per setting and model, one colour per family; dashed: the ceiling IE = U − prediction "
            "(U the metric's maximum, 1 for EER); dotted: the chance line IE = chance − prediction (a reference, "
            "not a bound).",
            lambda: paper_figures.scatter_figure(c, metric, UPPER.get(metric), CHANCE.get(metric)),
        )
    damage = paper_figures.damage_table(normalised(a.results), metric)
    if len(damage):
        factor_b = str(normalised(a.results)["factor_b"].iloc[0])
        rep.draw(
            f"interaction_{slug(factor_b)}",
            "The interaction: damage by level",
            f"Per model, {metric} at each level of {factor_b} minus {metric} at its reference, one line per level of "
            "the first factor (the other factors at their reference); lines that are not parallel are the interaction.",
            lambda: paper_figures.damage_figure(damage, metric, factor_b),
        )
