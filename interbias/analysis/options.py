"""What one analysis of a results table is asked for (``interbias analyze`` and ``report``):
the :class:`Options` record, whose field defaults are the commands' defaults
(:mod:`interbias.cli.analysis_options` reads them). It imports no statistics, so the command
line reads the defaults without loading the analysis."""

from __future__ import annotations

from dataclasses import dataclass

from interbias.analysis.additivity import DEFAULT_TOLERANCE
from interbias.analysis.gaps import DEFAULT_FLOOR
from interbias.utils.budget import TIME_LIMIT_S


@dataclass(frozen=True)
class Options:
    """One analysis' settings; each default is the default of the option that sets it."""

    metric: str = "eer"
    n_boot: int = 0
    seed: int = 0
    unit: str = "speaker"
    level: float = 0.95
    n_perm: int = 0
    tolerance: float = DEFAULT_TOLERANCE
    gap_floor: float = DEFAULT_FLOOR
    group_factor: str | None = None
    #: Multiplicity adjustment of the findings' p-values over each experiment's effects.
    adjust: str = "holm"
    #: ``corrected`` (speaker bootstrap with the pair-variance correction) or ``speaker`` (plain).
    design: str = "corrected"
    #: Add the simple effects (outside the confirmatory family) to the findings.
    simple: bool = False
    #: Longest bootstrap (estimated from B and the cells' trials) run without being told
    #: (``--no-time-limit``: None).
    time_limit_s: float | None = TIME_LIMIT_S
