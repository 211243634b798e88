"""The one wording of a finding's decision, written beside its interval in the answer, the
headline, the report's tables and findings.csv's ``verdict`` column.

A finding is resolved on its p-value adjusted over the family (Holm by default), while the
interval printed beside it is the per-effect (unadjusted) one. The two can disagree: an
unadjusted 95 % interval may exclude 0 while the adjusted p is above α. :func:`verdict_text`
says so in words instead of leaving an interval that excludes 0 beside a bare "not resolved":

- ``resolved after Holm over 60 (adjusted p 0.004)``;
- ``not resolved after Holm over 60 (adjusted p 0.395; the interval, per effect and
  unadjusted, excludes 0)``;
- ``not resolved after Holm over 60 (adjusted p 0.9)``;
- ``no interval`` (no SE: never a decision), ``not tested (left out of the family)``.
"""

from __future__ import annotations

from typing import Any

from interbias.analysis.reporting.numbers import p_text

#: ``adjustment`` values as written in words.
METHODS = {"holm": "Holm", "bh": "Benjamini-Hochberg", "bonferroni": "Bonferroni"}


def _is_true(v: Any) -> bool:
    return v is True or str(v) == "True" or (not isinstance(v, str) and bool(v == 1) and v == v)


def _float(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def verdict_text(r: Any) -> str:
    """The decision of one findings row (attributes ``resolved``, ``p_adjusted``,
    ``adjustment``, ``family_size``, ``lo``, ``hi``, ``test_family``) in words (module doc)."""
    get = r.__getattribute__ if not isinstance(r, dict) else r.get
    if str(_attr(get, "test_family")) == "left out":
        return "not tested (left out of the family)"
    lo, hi, p_adj = _float(_attr(get, "lo")), _float(_attr(get, "hi")), _float(_attr(get, "p_adjusted"))
    if not (lo == lo and hi == hi) or p_adj != p_adj:
        return "no interval"
    method = METHODS.get(str(_attr(get, "adjustment")))
    size = int(_float(_attr(get, "family_size")) or 0)
    how = f" after {method} over {size}" if method and size > 1 else ""
    p_word = "adjusted p" if how else "p"
    if _is_true(_attr(get, "resolved")):
        return f"resolved{how} ({p_word} {p_text(p_adj)})"
    excludes = lo > 0 or hi < 0
    note = "; the interval, per effect and unadjusted, excludes 0" if excludes and how else ""
    return f"not resolved{how} ({p_word} {p_text(p_adj)}{note})"


def _attr(get: Any, name: str) -> Any:
    try:
        return get(name)
    except AttributeError:
        return None
