"""Whether a run has enough non-target trials for a DCF operating point.

At prior p_target = p (C_miss = C_fa = 1, p < 0.5) the normalised DCF is
P_miss + (1 − p)/p · P_fa, so one false alarm among n non-target trials costs (1 − p)/(p·n):
0.34 at p = 0.01 and n = 288. A run supports p when it expects at least ``MIN_EXPECTED``
(10) non-targets in the prior's share, n·p ≥ 10, which caps one false alarm's cost near 0.1;
below that the sample minDCF is biased low and its bootstrap interval does not cover the
population value (the check behind issue 24 simulated a mean of 0.77 against a population 0.94 at n = 288,
and a coverage of ≈ 7 % for one cell). The smallest
supported prior is 10 / n.
"""

from __future__ import annotations

#: The target prior of minDCF and of every detection-cost default (unit costs): the one place it is set.
P_TARGET = 0.01
#: Expected non-target trials in the prior's share a run needs for a DCF at that prior.
MIN_EXPECTED = 10


def false_alarm_cost(n_nontarget: int, p_target: float = P_TARGET) -> float:
    """Normalised DCF of one false alarm: (1 − p) / (p · n)."""
    return (1 - p_target) / (p_target * n_nontarget)


def supported(n_nontarget: int, p_target: float = P_TARGET) -> bool:
    return n_nontarget * p_target >= MIN_EXPECTED


def smallest_prior(n_nontarget: int) -> float:
    """The smallest p_target the run supports: MIN_EXPECTED / n."""
    return MIN_EXPECTED / n_nontarget


def too_small_line(n_nontarget: int, p_target: float = P_TARGET, where: str = "this run") -> str | None:
    """One line when ``n_nontarget`` (the smallest cell's) is too few for ``p_target``, else None."""
    if n_nontarget <= 0 or supported(n_nontarget, p_target):
        return None
    return (
        f"minDCF at p_target {p_target:g}: {where} is too small for this operating point ({n_nontarget} non-target "
        f"trials in its smallest cell, n·p = {n_nontarget * p_target:.2g} < {MIN_EXPECTED}; one false alarm costs "
        f"{false_alarm_cost(n_nontarget, p_target):.2f} of normalised DCF); it supports p_target ≥ "
        f"{smallest_prior(n_nontarget):.3g}."
    )
