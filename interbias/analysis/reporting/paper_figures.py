"""The seed paper's figures from one analysed run: Fig. 3, the additive prediction against the
interaction effect per model family (one point per setting and model), and the interaction
itself, the damage each level of the second factor does from the reference, one line per
level of the first factor, one panel per model."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.figure import Figure

from interbias.analysis.reporting.plots import legend_outside, new_figure


def scatter_figure(contrasts: pd.DataFrame, metric: str, ceiling: float | None, chance: float | None = None) -> Figure:
    """Additive prediction (x) against IE (y), one colour per model family; the dashed line is
    the ceiling IE = U − prediction (``ceiling`` = U, the metric's maximum), the dotted one the
    chance line IE = chance − prediction (a reference, not a bound)."""
    fig = new_figure(6.0, 4.5)
    ax = fig.subplots()
    families = list(dict.fromkeys(contrasts["family"].astype(str)))
    handles = []
    for i, fam in enumerate(families):
        part = contrasts[contrasts["family"].astype(str) == fam]
        handles.append(
            ax.scatter(
                part["predicted"].astype(float), part["ie"].astype(float), s=18, color=colormaps["tab10"](i % 10)
            )
        )
    x = contrasts["predicted"].astype(float)
    if ceiling is not None and len(x):
        xs = np.linspace(float(x.min()), float(x.max()), 2)
        ax.plot(xs, ceiling - xs, color="0.4", ls="--", lw=0.9, label="ceiling")
    if chance is not None and len(x):
        xs = np.linspace(float(x.min()), float(x.max()), 2)
        ax.plot(xs, chance - xs, color="0.6", ls=":", lw=0.9, label="chance line")
    ax.axhline(0.0, color="0.6", lw=0.8)
    ax.set_xlabel(f"additive prediction ({metric})")
    ax.set_ylabel("IE (observed − prediction)")
    ax.set_title("Additive prediction against interaction effect")
    ax.grid(alpha=0.3)
    legend_outside(fig, handles, families, title="family")
    return fig


def damage_table(results: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Per model and level of the first factor (``series``): the damage of each level of the
    second factor (``level``) from its reference, metric(level) − metric(reference), the other
    factors at their reference. Needs two factors or more."""
    rows = []
    for r in results.itertuples(index=False):
        d = r._asdict()
        if not d.get("factor_b") or any(d.get(f"factor_{s}") and d[f"level_{s}"] != d[f"ref_{s}"] for s in "c"):
            continue
        rows.append(d)
    frame = pd.DataFrame(rows)
    if frame.empty:
        return pd.DataFrame(columns=["model", "series", "level", "damage"])
    ref = frame[frame["level_b"] == frame["ref_b"]].set_index(["model", "level_a"])[metric].astype(float)
    out = []
    for d in frame.itertuples(index=False):
        if d.level_b == d.ref_b or (d.model, d.level_a) not in ref.index:
            continue
        damage = float(getattr(d, metric)) - float(ref.loc[(d.model, d.level_a)])
        out.append({"model": d.model, "series": f"{d.factor_a}={d.level_a}", "level": d.level_b, "damage": damage})
    return pd.DataFrame(out, columns=["model", "series", "level", "damage"])


def damage_figure(table: pd.DataFrame, metric: str, factor_b: str) -> Figure:
    """One panel per model: damage (y) per level of the second factor (x), one line per level
    of the first; lines apart are the interaction."""
    models = list(dict.fromkeys(table["model"]))
    fig = new_figure(4.2 * min(len(models), 3), 3.6 * ((len(models) + 2) // 3))
    grid = fig.subplots((len(models) + 2) // 3, min(len(models), 3), squeeze=False, sharey=True)
    axes = np.atleast_1d(grid).ravel()
    series = list(dict.fromkeys(table["series"]))
    levels = list(dict.fromkeys(table["level"]))
    handles = {}
    for ax, model in zip(axes, models, strict=False):
        part = table[table["model"] == model]
        for i, s in enumerate(series):
            line = part[part["series"] == s].set_index("level").reindex(levels)
            (h,) = ax.plot(range(len(levels)), line["damage"], marker="o", color=colormaps["tab10"](i % 10))
            handles[s] = h
        ax.axhline(0.0, color="0.6", lw=0.8)
        ax.set_xticks(range(len(levels)), levels, rotation=30, ha="right", fontsize=8)
        ax.set_xlabel(factor_b)
        ax.set_ylabel(f"{metric} − {metric} at the reference")
        ax.set_title(model, fontsize=10)
        ax.grid(alpha=0.3)
    for ax in axes[len(models) :]:
        ax.set_visible(False)
    legend_outside(fig, list(handles.values()), list(handles))
    return fig
