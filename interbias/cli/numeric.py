"""One rule for every numeric option of the command line: a finite number in the option's
range, or one line.

:data:`RANGES` holds the range of each numeric option, by flag (``--alpha``) or, where one flag
means different things in different commands, by command and flag (``scores cm-eval wdsr --alpha``).
Each command calls :func:`check_numbers` with its numeric options before it reads any file. A
value out of range raises :class:`~interbias.utils.errors.ConfigError` through
:func:`interbias.utils.numbers.require`, and ``guarded`` prints it as one line. Library
functions keep their own checks: they may be narrower, e.g. ``fairness`` needs at least 50
bootstrap replicates.

Seeds are not listed: any whole number is a valid seed, because seeds are hashed into the
seeds they derive (:func:`interbias.utils.seeding.derive_seed`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from interbias.utils.errors import ConfigError
from interbias.utils.numbers import require


@dataclass(frozen=True)
class Range:
    """[low, high]; ``low_open`` / ``high_open`` exclude that bound."""

    low: float = -math.inf
    high: float = math.inf
    low_open: bool = False
    high_open: bool = False


#: A count where 0 means none (replicates, permutations, variants).
COUNT = Range(0)
#: A count of at least one (epochs, workers, voices, sentences, steps).
AT_LEAST_ONE = Range(1)
#: A probability strictly between 0 and 1 (a significance level, a confidence level, a prior).
OPEN_UNIT = Range(0, 1, low_open=True, high_open=True)
#: A share, a prior or a probability threshold in [0, 1].
UNIT = Range(0, 1)
#: A size, weight, cost or duration that may be 0.
NON_NEGATIVE = Range(0)
#: A size or rate that must be above 0.
POSITIVE = Range(0, low_open=True)
#: Any finite number (a score threshold).
FINITE = Range()

RANGES: dict[str, Range] = {
    "--bootstrap": COUNT,
    "--permutations": COUNT,
    "--voice-variants": COUNT,
    "--alpha": OPEN_UNIT,
    "--ci-level": OPEN_UNIT,
    "--power": OPEN_UNIT,
    "--p-target": OPEN_UNIT,
    "--p-spoof": OPEN_UNIT,
    "--heldout-share": OPEN_UNIT,
    "--dev-share": OPEN_UNIT,
    "--p-spf": UNIT,
    "--p-non": UNIT,
    "--p-tar": UNIT,
    "--voice-share": UNIT,
    "--max-failure-share": Range(0, 1, high_open=True),
    "--tolerance": NON_NEGATIVE,
    "--gap-floor": NON_NEGATIVE,
    "--margin": NON_NEGATIVE,
    "--min-region-s": NON_NEGATIVE,
    "--c-miss": NON_NEGATIVE,
    "--c-fa": NON_NEGATIVE,
    "--c-fa-asv": NON_NEGATIVE,
    "--c-fa-cm": NON_NEGATIVE,
    "--gamma": NON_NEGATIVE,
    "--delta": NON_NEGATIVE,
    "--beta": NON_NEGATIVE,
    "--w-sem": NON_NEGATIVE,
    "--w-voice": NON_NEGATIVE,
    "--w-expr": NON_NEGATIVE,
    "--w-orth": NON_NEGATIVE,
    "--w-keep": NON_NEGATIVE,
    "--layer": NON_NEGATIVE,
    "--equivalence": POSITIVE,
    "--effect": POSITIVE,
    "--tau-rel": POSITIVE,
    "--lr": POSITIVE,
    "--temperature": POSITIVE,
    "--threshold": FINITE,
    "--max-trials": AT_LEAST_ONE,
    "--jobs": AT_LEAST_ONE,
    "--workers": AT_LEAST_ONE,
    "--speakers": AT_LEAST_ONE,
    "--sentences": AT_LEAST_ONE,
    "--nontargets": AT_LEAST_ONE,
    "--text-variants": AT_LEAST_ONE,
    "--stop-after": AT_LEAST_ONE,
    "--m": AT_LEAST_ONE,
    "--steps": AT_LEAST_ONE,
    "--batch": AT_LEAST_ONE,
    "--hidden": AT_LEAST_ONE,
    # one flag, another meaning in this command
    "cm score --threshold": UNIT,  # P(fake) of a frame
    "scores cm-eval wdsr --alpha": NON_NEGATIVE,  # a weight of the round-2 baseline DSR
}


def range_of(flag: str, command: str = "") -> Range:
    """The range of ``flag`` in ``command`` (the command's path, e.g. ``cm score``): the
    command's own entry first, then the flag's."""
    return RANGES.get(f"{command} {flag}", RANGES[flag])


def check_numbers(command: str, **values: float | None) -> None:
    """Refuse, in one line, the first value outside its option's range. Keywords are the
    options' parameter names (``gap_floor`` for ``--gap-floor``); None (not given) passes. A
    whole number below its range reads ``--jobs must be a whole number >= 1, got 0``."""
    for name, value in values.items():
        if value is None:
            continue
        flag = "--" + name.rstrip("_").replace("_", "-")
        r = range_of(flag, command)
        if isinstance(value, int) and not isinstance(value, bool) and r.high == math.inf and not r.low_open:
            if value < r.low:  # a whole number is finite: only its lower bound can fail
                raise ConfigError(f"{flag} must be a whole number >= {r.low:g}, got {value}")
            continue
        require(flag, value, low=r.low, high=r.high, low_open=r.low_open, high_open=r.high_open, error=ConfigError)
