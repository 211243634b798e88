"""Robustness profile: a metric against severity, one panel per degradation family, one line per
model (a severity-ladder experiment such as E21).

A factor is a ladder when its non-reference levels are named ``<family>_s<k>`` (``lowpass_s1``
… ``lowpass_s4``: severity k of family ``lowpass``; k = 1 is the mildest); its reference level
(``clean``) is drawn at severity 0 in every panel. Other levels of the factor (``narrowband``,
a preset with no grades) are listed in the table, not drawn. Intervals are the cells' bootstrap
intervals when the analysis has them.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from interbias.analysis.contrasts import SLOTS, normalised
from interbias.analysis.reporting import plots

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: ``<family>_s<k>``: severity k (1, 2, …) of a family.
LADDER_LEVEL = re.compile(r"^(?P<family>.+)_s(?P<severity>[0-9]+)$")


def ladder_slot(frame: pd.DataFrame) -> str | None:
    """The results slot (``a``, ``b``, ``c``) whose levels form a ladder, when exactly one does."""
    found = []
    for s in SLOTS:
        levels = set(frame[f"level_{s}"]) - set(frame[f"ref_{s}"]) - {""}
        if levels and sum(bool(LADDER_LEVEL.match(lv)) for lv in levels) >= 2:
            found.append(s)
    return found[0] if len(found) == 1 else None


def profile_table(results: pd.DataFrame, metric: str, intervals: pd.DataFrame | None = None) -> pd.DataFrame:
    """Rows: series (model, plus the other factors' levels), family, severity (0 = the
    reference), level, value, and lo/hi when ``intervals`` (cell intervals: experiment, model,
    cell, lo, hi) are given. Empty when the results hold no ladder factor."""
    frame = normalised(results)
    slot = ladder_slot(frame)
    cols = ["series", "family", "severity", "level", "value", "lo", "hi"]
    if slot is None:
        return pd.DataFrame(columns=cols)
    ci = intervals.set_index(["experiment", "model", "cell"]) if intervals is not None else None
    rows = []
    for r in frame.itertuples(index=False):
        others = [
            f"{getattr(r, f'factor_{s}')}={getattr(r, f'level_{s}')}"
            for s in SLOTS
            if s != slot and getattr(r, f"factor_{s}")
        ]
        series = " ".join([r.model, *others])
        level, ref = getattr(r, f"level_{slot}"), getattr(r, f"ref_{slot}")
        lo = hi = np.nan
        if ci is not None and (r.experiment, r.model, r.cell) in ci.index:
            c = ci.loc[(r.experiment, r.model, r.cell)]
            lo, hi = float(c["lo"]), float(c["hi"])
        value = float(getattr(r, metric))
        m = LADDER_LEVEL.match(level)
        if level == ref:
            rows.append(
                {"series": series, "family": "", "severity": 0, "level": level, "value": value, "lo": lo, "hi": hi}
            )
        elif m:
            rows.append(
                {
                    "series": series,
                    "family": m["family"],
                    "severity": int(m["severity"]),
                    "level": level,
                    "value": value,
                    "lo": lo,
                    "hi": hi,
                }
            )
        else:
            rows.append(
                {
                    "series": series,
                    "family": "(other)",
                    "severity": -1,
                    "level": level,
                    "value": value,
                    "lo": lo,
                    "hi": hi,
                }
            )
    out = pd.DataFrame(rows, columns=cols)
    # the reference belongs to every family's panel
    refs = out[out["family"] == ""]
    families = [f for f in dict.fromkeys(out["family"]) if f not in ("", "(other)")]
    expanded = [refs.assign(family=f) for f in families]
    rest = out[out["family"] != ""]
    return (
        pd.concat([*expanded, rest], ignore_index=True)
        .sort_values(["family", "series", "severity"], kind="stable")
        .reset_index(drop=True)
    )


def profile_figure(table: pd.DataFrame, metric: str) -> Figure:
    """One panel per family: ``metric`` against severity (0 = reference), one line per series,
    error bars where the table has intervals."""
    drawn = table[table["severity"] >= 0]
    families = list(dict.fromkeys(drawn["family"]))
    cols = min(4, len(families))
    rows = (len(families) + cols - 1) // cols
    fig = plots.new_figure(3.4 * cols, 2.9 * rows)
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False, sharey=True)).ravel()
    for ax, family in zip(axes, families, strict=False):
        part = drawn[drawn["family"] == family]
        for series, s in part.groupby("series", sort=False):
            x = s["severity"].to_numpy(int)
            y = s["value"].to_numpy(float)
            if s["lo"].notna().all():
                err = np.vstack([y - s["lo"].to_numpy(float), s["hi"].to_numpy(float) - y])
                ax.errorbar(x, y, yerr=err, marker="o", capsize=2, lw=1.2, label=series)
            else:
                ax.plot(x, y, marker="o", lw=1.2, label=series)
        ax.set_title(family, fontsize=9)
        ax.set_xticks(sorted(set(part["severity"])))
        ax.grid(alpha=0.3)
        ax.set_xlabel("severity (0 = reference)", fontsize=8)
        ax.set_ylabel(metric, fontsize=8)
    for ax in axes[len(families) :]:
        ax.set_visible(False)
    if families:
        axes[0].legend(fontsize=7)
    return fig
