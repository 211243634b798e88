"""The time a bootstrap count implies before it starts, for every command with ``--bootstrap``:
replicates × the trial weights each replicate computes × a measured rate, refused above the
hour unless ``--no-time-limit`` (:func:`interbias.utils.budget.estimate_time`)."""

from __future__ import annotations

from interbias.utils.budget import TIME_LIMIT_S, estimate_time
from interbias.utils.errors import AnalysisError
from interbias.utils.progress import Reporter

#: Seconds one bootstrap pass spends per replicate and trial row of a cell (measured on the demo
#: run: 34 ns marginal on a loaded 2-core machine, rounded up); the corrected design makes two passes.
SECONDS_PER_TRIAL_REPLICATE = 4e-8


def check_boot_time(
    n_boot: int, weights: int, each: str, *, limit_s: float | None = TIME_LIMIT_S, reporter: Reporter | None = None
) -> None:
    """Refuse ``--bootstrap n_boot`` when ``n_boot × weights`` trial weights (``each`` says what
    one replicate computes) are estimated to run past ``limit_s`` (None: no limit); print the
    estimate of a long one on stderr (unless ``reporter`` is quiet)."""
    line = estimate_time(
        "--bootstrap",
        n_boot,
        weights * SECONDS_PER_TRIAL_REPLICATE,
        each,
        allow="--no-time-limit",
        limit_s=limit_s,
        error=AnalysisError,
    )
    if line:
        (reporter or Reporter()).info(line, wrap=True)
