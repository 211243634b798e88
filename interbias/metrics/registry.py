"""The metric registry: one frozen :class:`MetricSpec` per metric, registered beside its code.

Every list of metric names elsewhere (the results.csv columns, ``--metric`` choices, chance
levels, interval rules, units, the fields of :class:`interbias.metrics.verification.Summary`) is
a query of :data:`METRICS`. The verification metrics are registered in
:mod:`interbias.metrics.verification` beside their functions, the calibration metrics in
:mod:`interbias.metrics.weighted_llr`; importing :mod:`interbias.metrics` registers them all, in
the order of the results.csv columns.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from interbias.utils.errors import MetricError
from interbias.utils.registry import Registry

#: The units of an error-rate metric, as the report states them.
FRACTION = "fractions; 0.01 = one percentage point"
#: Cell-interval rules: the percentile interval, or the reflected one (for a minimum over
#: thresholds, whose replicates are biased low; see :func:`interbias.analysis.stats.bootstrap.reflected_ci`).
INTERVALS = ("percentile", "reflected")


@dataclass(frozen=True)
class MetricSpec:
    """What the harness needs to know about one metric.

    ``function``: the value from unit-weight trials: ``function(scores, labels)``, or for a
    ``calibrated`` metric ``function(calibration, scores, labels)`` with a
    :class:`interbias.metrics.weighted_llr.SharedCalibration`. ``weighted``: its twin under many
    trial weightings (``None``: no bootstrap, permutation or paired test of it): for a plain metric
    the row-wise kernel :func:`interbias.metrics.weighted.metric_batch` runs, for a calibrated one
    ``weighted(calibration, scores, labels, weights, cell)``.
    """

    name: str
    function: Callable[..., float]
    units: str
    weighted: Callable[..., Any] | None = None
    #: Read at each model's shared calibration (run.json ``calibration``), not from raw scores.
    calibrated: bool = False
    #: The value of scores that rank the classes at random (``None``: no such diagnostic).
    chance: float | None = None
    #: The metric's true maximum U (``None``: unbounded or not stated): the ceiling of an
    #: interaction IE ≤ U − prediction. Chance is not a bound (EER reaches 1 on inverted scores).
    upper: float | None = None
    #: ``"lower"`` or ``"higher"`` is better.
    better: str = "lower"
    #: How a cell's bootstrap interval is formed (one of :data:`INTERVALS`).
    interval: str = "percentile"
    #: Effects get the bias-corrected percentile interval (a cost: skewed, biased low).
    skewed: bool = False
    #: An error rate: named in capitals in the report (EER) and read in percentage points.
    rate: bool = False
    #: A results.csv metric column that every run writes for every cell (``SCHEMA``).
    column: bool = False
    #: Runs with random operators add ``<name>_draw_sd``, the SD between draws.
    draw_sd: bool = False
    #: Shown where runs are summarised (``runs inventory`` pools it, ``runs card`` lists it).
    summary: bool = False
    #: Why it has no weighted twin (no interval, test or ``analyze --metric``), in words the
    #: commands that refuse it print; ``None`` when it has one or is calibrated.
    no_interval: str | None = None
    #: The fixed target prior a detection-cost metric is read at (min_dcf: 0.01); ``None`` for a
    #: calibrated metric (read at its calibration's operating point) or one without a prior.
    p_target: float | None = None
    #: The value off a :class:`interbias.metrics.verification.ThresholdSweep` (``sweep(p)``, or
    #: ``sweep(p, p_target=…)`` for a metric with a prior): :func:`~interbias.metrics.verification.summarize`
    #: reads every metric that has one from one sort. ``None``: not a raw-score sweep metric.
    sweep: Callable[..., float] | None = None
    #: Its weighted twin reads every operating point (a minimum over thresholds), not the few a
    #: binary search visits: :func:`interbias.metrics.weighted.metric_by_class` then sums the whole block.
    every_point: bool = False

    def __post_init__(self) -> None:
        if self.interval not in INTERVALS:
            raise ValueError(f"metric {self.name!r}: interval {self.interval!r} not in {INTERVALS}")
        if self.better not in ("lower", "higher"):
            raise ValueError(f"metric {self.name!r}: better must be 'lower' or 'higher'")


METRICS: Registry[MetricSpec] = Registry("metric", MetricError)


def register(spec: MetricSpec) -> MetricSpec:
    """Add ``spec`` to :data:`METRICS` (a name registered twice is a programming error)."""
    return METRICS.register(spec.name)(spec)


def spec(name: str) -> MetricSpec:
    """The spec of ``name``; :class:`MetricError` listing every metric when unknown."""
    return METRICS.get(name)


def specs() -> list[MetricSpec]:
    """Every spec in registration order (the results.csv column order)."""
    return METRICS.registered()


def names(where: Callable[[MetricSpec], bool] = lambda s: True) -> tuple[str, ...]:
    """Names of the specs for which ``where`` holds, in registration order."""
    return tuple(s.name for s in specs() if where(s))


def results_columns() -> tuple[str, ...]:
    """The metric columns of results.csv, in order."""
    return names(lambda s: s.column)


def replicable(*, calibrated: bool | None = None) -> tuple[str, ...]:
    """Metrics with a weighted twin (bootstrap, permutation and paired tests); ``calibrated``
    selects the calibration metrics (True) or the raw-score ones (False)."""
    return names(lambda s: s.weighted is not None and calibrated in (None, s.calibrated))


def analysable(*, calibrated: bool | None = None) -> tuple[str, ...]:
    """Metrics ``interbias analyze`` takes: a weighted twin (intervals, permutation and paired
    tests) and lower is better (gaps and damage read that way); ``calibrated`` as in :func:`replicable`."""
    return tuple(m for m in replicable(calibrated=calibrated) if spec(m).better == "lower")


def summary_metrics() -> tuple[str, ...]:
    """The metrics shown where runs are summarised (``runs inventory``, ``runs card``)."""
    return names(lambda s: s.summary)


def not_analysable(name: str, *, option: str = "--metric") -> str:
    """Why ``name`` is not a metric ``analyze`` (and every command with intervals) takes, in one
    line ending with the valid choices: an unknown name, a metric with no weighted twin (its
    reason, and that results.csv holds it), or one where higher is better."""
    valid = f"valid: {', '.join(analysable())}"
    if name not in METRICS:
        return f"{option} {name!r}: not a metric; {valid}"
    s = spec(name)
    if s.weighted is None:
        why = s.no_interval or "it has no bootstrap form"
        where = "; its values are in results.csv (runs inventory pools them)" if s.column else ""
        return f"{option} {name!r}: no interval or test of it: {why}{where}; {valid}"
    return f"{option} {name!r}: higher is better, and gaps and damage are read as increases; {valid}"


def upper_bounds() -> dict[str, float]:
    """The true maximum of every metric that has one (:attr:`MetricSpec.upper`)."""
    return {s.name: s.upper for s in specs() if s.upper is not None}


def chance_levels() -> dict[str, float]:
    """Chance level of every metric that has one."""
    return {s.name: s.chance for s in specs() if s.chance is not None}
