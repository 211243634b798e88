"""Equivalence within a margin stated in advance: two one-sided tests (TOST) per effect of the
findings, adjusted over each experiment's family, so a run can claim additivity (or no gap)
within ±MARGIN instead of only failing to resolve an effect.

Per effect with estimate θ̂, standard error SE (the findings' ``se``: the corrected design's)
and degrees of freedom ν (the findings' ``df``; the normal where the findings use the
bias-corrected interval or give no df): p_lower = P(T ≥ (θ̂ + M)/SE), p_upper =
P(T ≥ (M − θ̂)/SE), T ~ t_ν; p_equivalence = max(p_lower, p_upper) (Schuirmann's TOST: both
one-sided tests at α, the same as the (1 − 2α) interval lying inside ±M). The p-values are
adjusted over the confirmatory family of each experiment (``--adjust``, Holm by default);
``within_margin`` = adjusted p < α. An effect without an SE is never shown within the margin.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from interbias.analysis.planner import findings_df
from interbias.analysis.stats import multiplicity
from interbias.utils.errors import AnalysisError

#: Columns :func:`tost` adds to a findings table.
COLUMNS = ["margin", "p_equivalence", "p_equivalence_adjusted", "within_margin"]


def tost_p(estimate: np.ndarray, se: np.ndarray, df: np.ndarray, margin: float) -> np.ndarray:
    """max of the two one-sided p-values of |θ| < ``margin`` (NaN where SE is missing)."""
    est, s, d = (np.asarray(x, dtype=np.float64) for x in (estimate, se, df))
    ok = np.isfinite(est) & np.isfinite(s) & (s > 0)
    s1 = np.where(ok, s, 1.0)
    lower, upper = (est + margin) / s1, (margin - est) / s1
    finite = np.isfinite(d) & (d > 0)
    dd = np.where(finite, d, 1.0)
    t_part = np.maximum(stats.t.sf(lower, dd), stats.t.sf(upper, dd))
    normal = np.maximum(stats.norm.sf(lower), stats.norm.sf(upper))
    return np.where(ok, np.where(finite, t_part, normal), np.nan)


def tost(frame: pd.DataFrame, margin: float, alpha: float, method: str = "holm") -> pd.DataFrame:
    """``frame`` (findings) with :data:`COLUMNS`: TOST per effect against ±``margin``, adjusted
    by ``method`` over each experiment's confirmatory family (other rows: not tested)."""
    if not margin > 0:
        raise AnalysisError(f"--equivalence must be a margin > 0 in metric units, got {margin}")
    multiplicity.check_method(method)
    out = frame.copy()
    out["margin"] = margin
    out["p_equivalence"] = tost_p(out["estimate"], out["se"], findings_df(out), margin)
    out["p_equivalence_adjusted"] = np.nan
    family = out["test_family"].astype(str) == "confirmatory" if "test_family" in out else True
    for _, idx in out[family].groupby("experiment", sort=False).groups.items():
        out.loc[idx, "p_equivalence_adjusted"] = multiplicity.adjust(out.loc[idx, "p_equivalence"].to_numpy(), method)
    out["within_margin"] = (out["p_equivalence_adjusted"] < alpha).astype(bool)
    return out


def lines(frame: pd.DataFrame, margin: float, method: str) -> list[str]:
    """Per model and kind: how many effects are shown within ±``margin`` after ``method``."""
    from interbias.analysis.reporting.answer import WORDS
    from interbias.analysis.reporting.headline import kinds_of, num

    out = []
    for model, grp in frame.groupby("model", sort=False):
        parts = []
        for kind in kinds_of(grp):
            part = grp[grp["kind"] == kind]
            parts.append(f"{int(part['within_margin'].sum())} of {len(part)} {WORDS.get(kind, kind)}")
        out.append(f"{model}: shown within ±{num(margin)} (TOST, {method} over the family): {', '.join(parts)}.")
    return out
