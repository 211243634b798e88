"""One rule for every numeric option or setting: a finite number in its range, or one line.

:func:`require` names the option, the value and the range it must lie in; the caller passes
the typed error of its stage (``ConfigError``, ``MetricError``, ``AnalysisError`` …), which the
command line prints as one line.
"""

from __future__ import annotations

import math

from interbias.utils.errors import InterbiasError


def require(
    name: str,
    value: float,
    *,
    low: float = -math.inf,
    high: float = math.inf,
    low_open: bool = False,
    high_open: bool = False,
    error: type[InterbiasError] = InterbiasError,
) -> float:
    """``value`` as a float when it is finite and within [low, high] (``low_open`` /
    ``high_open``: that bound excluded); else ``error`` naming ``name``, the value and the range."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise error(f"{name} must be a number, got {value!r}") from None
    above = x > low if low_open else x >= low
    below = x < high if high_open else x <= high
    if math.isfinite(x) and above and below:
        return x
    return _refuse(name, value, low, high, low_open, high_open, error)


def _refuse(
    name: str, value: float, low: float, high: float, low_open: bool, high_open: bool, error: type[InterbiasError]
) -> float:
    if math.isinf(low) and math.isinf(high):
        what = "a finite number"
    elif math.isinf(high):
        what = f"a finite number {'>' if low_open else '>='} {low:g}"
    elif math.isinf(low):
        what = f"a finite number {'<' if high_open else '<='} {high:g}"
    else:
        what = f"a finite number in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
    raise error(f"{name} must be {what}, got {value!r}")
