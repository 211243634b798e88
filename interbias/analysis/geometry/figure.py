"""The geometry audit's figure (geometry.png): F per axis, leakage per axis pair, spreads per
attribute, over every audit in a geometry.csv table."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from interbias.analysis.geometry.linalg import AXES, PAIRS
from interbias.analysis.geometry.schema import AUDIT_KEY
from interbias.analysis.reporting.plots import new_figure


def geometry_figure(frame: pd.DataFrame) -> Figure:
    """Three panels over every audit in ``frame``: F per axis; Λ (bars) and ℓ (triangles) per axis
    pair, a grey dash at each audit's chance Λ = m/d; Γ per attribute × axis, * where the permutation
    p < 0.05. Error bars are the 95 % half-widths. Drawn on an Agg canvas without pyplot
    (:func:`interbias.analysis.reporting.plots.new_figure`)."""

    audits = [k for k, _ in frame.groupby(list(AUDIT_KEY), sort=True)]
    width = 0.8 / max(1, len(audits))
    fig = new_figure(15, 4.4)
    axes = fig.subplots(1, 3)

    def rows(key: tuple, metric: str, cat: dict[str, str]) -> pd.DataFrame:
        match = {**dict(zip(AUDIT_KEY, key, strict=True)), "metric": metric, **cat}
        return frame[np.all([frame[c].astype(str) == str(v) for c, v in match.items()], axis=0)]

    def column(key: tuple, metric: str, cats: list[dict[str, str]], col: str) -> np.ndarray:
        out = []
        for cat in cats:
            sel = rows(key, metric, cat)
            out.append(float(sel[col].iloc[0]) if len(sel) and str(sel[col].iloc[0]) != "" else math.nan)
        return np.asarray(out)

    def panel(ax: Any, metric: str, cats: list[dict[str, str]], labels: list[str]) -> None:
        for i, key in enumerate(audits):
            xs = np.arange(len(cats)) + (i - (len(audits) - 1) / 2) * width
            vals = column(key, metric, cats, "value")
            errs = np.nan_to_num(column(key, metric, cats, "ci_half_width"))
            name = " ".join(x for x in (key[0], f"layer {key[1]}" if key[1] else "", key[3]) if x)
            ax.bar(xs, vals, width, yerr=errs, capsize=2, label=name, color=f"C{i}")
            if metric == "Lambda":
                ax.plot(xs, column(key, "ell", cats, "value"), "^", color=f"C{i}", mec="k")
                ax.plot(xs, column(key, metric, cats, "chance"), "_", color="grey", ms=14, mew=2)
            if metric == "Gamma":
                for xx, vv, p in zip(xs, vals, column(key, metric, cats, "p_value"), strict=True):
                    if p < 0.05:
                        ax.text(xx, vv, "*", ha="center", va="bottom")
        ax.set_xticks(np.arange(len(cats)), labels, rotation=30, ha="right")

    panel(axes[0], "F", [{"axis": a} for a in AXES], list(AXES))
    axes[0].set(title="axis fidelity F", ylim=(0, 1))
    axes[0].legend(fontsize=7)
    panel(axes[1], "Lambda", [{"axis": a, "axis_b": b} for a, b in PAIRS], [f"{a}–{b}" for a, b in PAIRS])
    axes[1].set(title="leakage: Λ bars, ℓ triangles (grey dash: chance Λ = m/d)", ylim=(0, 1.05))
    attrs = sorted(set(frame.loc[frame["metric"] == "Gamma", "attribute"]))
    cats = [{"attribute": at, "axis": a} for at in attrs for a in AXES]
    panel(axes[2], "Gamma", cats, [f"{c['attribute']}: {c['axis']}" for c in cats])
    axes[2].set(title="fidelity spread Γ (* permutation p < 0.05)")
    return fig
