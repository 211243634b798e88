"""How every number is written in reports, findings tables and the terminal: metric values and
differences with :data:`DIGITS` decimals (one unit: fractions of the metric's own scale),
p-values as ``< 0.001`` or three decimals (four where three would round onto 0.05 or 0.01), counts (columns named ``n``, ``n_*``,
``*speakers*``, ``*trials*``, ``family_size``) as integers, booleans as yes/no, NaN as empty,
never a negative zero.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

#: Decimals of every metric value and difference.
DIGITS = 3


def is_count(column: str) -> bool:
    """Columns that hold counts (written as integers)."""
    c = str(column)
    return c.startswith("n_") or c in ("n", "family_size") or "speakers" in c or "trials" in c


def format_value(v: Any, column: str = "", digits: int = DIGITS) -> str:
    """One table cell as text (see the module docstring)."""
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (float, np.floating, int, np.integer)):
        if isinstance(v, (float, np.floating)) and math.isnan(v):
            return ""
        if is_count(column) and math.isfinite(float(v)) and float(v) == int(v):
            return str(int(v))
        if isinstance(v, (int, np.integer)):
            return str(v)
        if str(column).startswith("p_") or str(column) == "p_value":
            return p_text(float(v))
        text = f"{v:.{digits}f}"
        return text.lstrip("-") if float(text) == 0 else text
    return str(v)


def signed(v: float, digits: int = DIGITS) -> str:
    """``v`` with its sign and ``digits`` decimals, ``+0.000`` for any value that rounds to zero
    (never ``-0.000``)."""
    text = f"{float(v):+.{digits}f}"
    return "+" + text[1:] if float(text) == 0 else text


#: Levels a p-value is read against: one that rounds onto one of them from either side keeps a
#: fourth decimal, so 0.0496 (resolved at 0.05) never reads as "0.050".
P_LEVELS = (0.05, 0.01)


def p_text(v: float) -> str:
    """A p-value: ``< 0.001``, else three decimals, more (up to six) where three would round
    it onto a level of :data:`P_LEVELS` it is not equal to."""
    if v != v:
        return ""
    if v < 1e-3:
        return "< 0.001"
    for digits in (3, 4, 5, 6):
        text = f"{v:.{digits}f}"
        if not any(float(text) == lv != v for lv in P_LEVELS):
            return text
    return text
