"""What a fairness report says about its crossed groupings (``gender×age_band`` from
``fairness.groups`` in the YAML, ``--group gender×age_band`` or ``--cross``), in lines that
``analyze`` prints and the report writes: each crossed cell with its speakers, and the crossed
comparisons as tested (Holm over the report's family), refused for too few speakers, or
significant."""

from __future__ import annotations

import numpy as np
import pandas as pd

from interbias.analysis.groups.fairness_cluster import MIN_SPEAKERS
from interbias.analysis.groups.fairness_cross import CROSS

#: Crossed cells named on one line before "… and N more".
SHOWN_CELLS = 8


def _true(values: pd.Series) -> pd.Series:
    return values.astype(str).str.lower() == "true"


def crossed_lines(groups: pd.DataFrame | None, comparisons: pd.DataFrame | None) -> list[str]:
    """One line per crossed grouping of a fairness report (fairness_groups.csv and fairness.csv
    as read): its cells with their speakers (the fewest over models and conditions), then its
    comparisons; ``[]`` when the report has no crossing."""
    if groups is None or "group_by" not in groups.columns:
        return []
    out = []
    for name in dict.fromkeys(groups["group_by"].astype(str)):
        if CROSS not in name:
            continue
        cells = groups[(groups["group_by"].astype(str) == name) & (groups["kind"].astype(str) == "group")]
        spk = pd.to_numeric(cells.get("speakers", pd.Series(np.nan, index=cells.index)), errors="coerce")
        fewest = spk.groupby(cells["group"].astype(str), sort=True).min()
        shown = [f"{cell} {int(n)}" if n == n else f"{cell} ?" for cell, n in fewest.items()]
        more = f", … and {len(shown) - SHOWN_CELLS} more" if len(shown) > SHOWN_CELLS else ""
        small = set(fewest.index[fewest < MIN_SPEAKERS])
        text = (
            f"fairness {name}: {len(fewest)} crossed cells, speakers {', '.join(shown[:SHOWN_CELLS])}{more}; "
            f"{len(small)} under {MIN_SPEAKERS} speakers"
        )
        out.append(text + (f"; {_comparisons(comparisons, name, small)}" if comparisons is not None else ""))
    return out


def _comparisons(comparisons: pd.DataFrame, name: str, small: set[str]) -> str:
    """The crossed comparisons: tested (Holm over the report's family, significant), not tested
    because a cell holds fewer than the minimum of speakers, not tested for another reason."""
    c = comparisons[comparisons["group_by"].astype(str) == name]
    tested = pd.to_numeric(c["p_value"], errors="coerce").notna()
    few = (c["group_a"].astype(str).isin(small) | c["group_b"].astype(str).isin(small)) & ~tested
    rest = int((~tested & ~few).sum())
    family = pd.to_numeric(comparisons.get("n_tests", pd.Series(dtype=float)), errors="coerce").max()
    holm = f"Holm over the report's {int(family)}" if family == family else "Holm over the report"
    sig = int(_true(c["significant"]).sum()) if "significant" in c else 0
    return (
        f"{len(c)} comparisons: {int(tested.sum())} tested"
        + (f" ({holm}; {sig} significant)" if tested.any() else "")
        + f", {int(few.sum())} not tested: a cell under {MIN_SPEAKERS} speakers"
        + (f", {rest} not tested for another reason (fairness.csv note)" if rest else "")
    )
