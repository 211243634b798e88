"""One interval per effect: every table that shows an interaction or a subgroup gap shows the
findings' interval (:mod:`interbias.analysis.effects`: with the default ``corrected`` design the
corrected-SE Student-t interval, the bias-corrected one for DCF metrics), so contrasts.csv,
gaps.csv, the heatmaps, the report and the LaTeX give the same pair of numbers as findings.csv.

The plain percentile interval of the speaker-bootstrap replicates stays beside it as an
explicitly named alternative (``ie_lo_percentile``/``ie_hi_percentile``,
``gap_lo_percentile``/``gap_hi_percentile``); ``interval_method`` names the method of
``ie_lo``/``ie_hi`` (``gap_lo``/``gap_hi``) on every row; each gap also carries the findings'
Holm-adjusted p and verdict (``p_adjusted``, ``resolved``). Means over settings or models
(``mean_ie_lo``, ``mean_abs_gap_lo``) and |gap| bounds stay percentile intervals in the CSV
files: they are not findings' effects, and their column ``*_interval`` says so; the report's
gap tables show none of them.
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from interbias.analysis.contrasts import ContrastTables
from interbias.analysis.gaps import GapTables
from interbias.utils.errors import AnalysisError

#: Suffix of the plain percentile bounds kept beside the findings' interval.
PERCENTILE = "_percentile"

_DESIGN = {
    "corrected": "corrected-SE",
    "speaker": "speaker-bootstrap-SE",
}


def method_name(design: str, interval: str, pct: str, unit: str = "speaker") -> str:
    """The findings' interval method in words, e.g. ``95% corrected-SE t interval``
    (``interval``: the findings' ``wald`` or ``bc``; ``pct``: the level as ``95%``)."""
    se = _DESIGN.get(design, f"{design}-SE") if unit == "speaker" else f"{unit}-bootstrap-SE"
    if interval == "bc":
        return f"{pct} bias-corrected percentile interval scaled to the {se}"
    return f"{pct} {se} t interval"


def _swap(frame: pd.DataFrame, lo: str, hi: str, found: pd.DataFrame, method: str) -> pd.DataFrame:
    """``frame`` with ``lo``/``hi`` replaced by ``found``'s lo/hi (row by row), the old bounds
    renamed with :data:`PERCENTILE` and ``interval_method`` after them."""
    if lo not in frame.columns:
        return frame
    if len(found) != len(frame):
        raise AnalysisError(f"{len(found)} findings for {len(frame)} table rows: the tables are not the findings'")
    out = frame.copy()
    at = out.columns.get_loc(hi) + 1
    out.insert(at, lo + PERCENTILE, out[lo].astype(float))
    out.insert(at + 1, hi + PERCENTILE, out[hi].astype(float))
    out[lo] = found["lo"].astype(float).to_numpy()
    out[hi] = found["hi"].astype(float).to_numpy()
    out.insert(out.columns.get_loc(hi) + 1, "interval_method", method)
    return out


def unify(
    contrasts: ContrastTables, gaps: GapTables, found: pd.DataFrame, method: str
) -> tuple[ContrastTables, GapTables]:
    """Contrasts and gaps whose per-row intervals are the findings' (``found``: the decided
    findings in :func:`interbias.analysis.effects.collect` order, before any sorting: its
    interactions in contrasts order, its gaps in gaps order)."""
    ie = found[found["kind"].astype(str).eq("interaction")]
    gap = found[found["kind"].astype(str).eq("gap")]
    c = replace(contrasts, contrasts=_swap(contrasts.contrasts, "ie_lo", "ie_hi", ie, method))
    g = replace(gaps, gaps=_verdict(_swap(gaps.gaps, "gap_lo", "gap_hi", gap, method), gap))
    return c, g


def _verdict(frame: pd.DataFrame, found: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with the findings' Holm-adjusted p and verdict (``p_adjusted``, ``resolved``)
    after ``interval_method``, row by row, so a table of gaps says what findings.csv says."""
    if "interval_method" not in frame.columns or not {"p_adjusted", "resolved"} <= set(found.columns):
        return frame
    out = frame.copy()
    at = out.columns.get_loc("interval_method") + 1
    out.insert(at, "p_adjusted", found["p_adjusted"].astype(float).to_numpy())
    out.insert(at + 1, "resolved", found["resolved"].astype(bool).to_numpy())
    return out
