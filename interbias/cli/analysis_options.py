"""The options of an analysis, declared once for ``analyze`` and ``report`` (one decorator adds
them to each command, the sqlite-utils habit). Each default is the default of the field it sets
in the analysis' own record, :class:`interbias.analysis.options.Options`, so a default is
changed in one place; ``--bootstrap`` alone has the command line's default (:func:`default_boot`).

Besides the bundle: the option aliases other commands with an analysis take one by one
(``--metric``, ``--seed``, ``--bootstrap-design``, ``--group-factor``, ``--no-time-limit``)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from interbias.analysis.options import Options
from interbias.cli.numeric import check_numbers
from interbias.metrics.registry import analysable

F = TypeVar("F", bound=Callable[..., Any])

MetricOpt = Annotated[
    str,
    typer.Option(
        help=f"{', '.join(analysable(calibrated=False))}, or at the run's shared calibration: "
        f"{', '.join(analysable(calibrated=True))}."
    ),
]
SeedOpt = Annotated[int, typer.Option(help="Master seed of bootstrap replicates and permutations.")]
UnitOpt = Annotated[str, typer.Option(help="Bootstrap resampling unit: speaker (clustered) or trial.")]
LevelOpt = Annotated[float, typer.Option(help="Confidence level of the percentile intervals.")]
PermOpt = Annotated[int, typer.Option(help="Speaker-level permutations per subgroup gap (0: no test); needs scores.")]
TolOpt = Annotated[float, typer.Option(help="Additivity tolerance on |observed − predicted| (metric units).")]
FloorOpt = Annotated[
    float, typer.Option(help="Ratio amplification is flagged when |reference-condition gap| is below this.")
]
AdjustOpt = Annotated[
    str,
    typer.Option(
        help="Multiplicity adjustment of the findings' p-values over each experiment's effects: holm "
        "(family-wise error), bh (false discovery rate) or none."
    ),
]
DesignOpt = Annotated[
    str,
    typer.Option(
        "--bootstrap-design",
        help="corrected: speaker bootstrap with its pair-variance correction (SE matches the sampling SD); "
        "speaker: the plain speaker bootstrap (conservative, for comparison).",
    ),
]
SimpleOpt = Annotated[
    bool,
    typer.Option(
        "--simple", help="Also report simple effects (one factor within one setting of the others), outside the family."
    ),
]
TimeOpt = Annotated[
    bool,
    typer.Option(
        "--no-time-limit",
        help="Run a bootstrap estimated to take over an hour (refused otherwise, with the estimate).",
    ),
]
GroupOpt = Annotated[
    str | None, typer.Option(help="Factor whose levels are compared as groups (default: a population factor).")
]

#: Replicates when --bootstrap is not given and the run has per-trial scores (analyze and report).
DEFAULT_BOOT = 1000
BootOpt = Annotated[
    int | None,
    typer.Option(
        help=f"Bootstrap replicates for percentile CIs (default {DEFAULT_BOOT} when the run has per-trial "
        "scores; 0: none)."
    ),
]

_DEFAULTS = {f.name: f.default for f in fields(Options)}

#: The bundle, in --help order: (parameter, the Options field it sets, its option, its default).
#: ``bootstrap`` and ``no_time_limit`` set no field directly (:meth:`AnalysisChoice.options`).
BUNDLE: tuple[tuple[str, str | None, Any, Any], ...] = (
    ("metric", "metric", MetricOpt, _DEFAULTS["metric"]),
    ("bootstrap", None, BootOpt, None),
    ("seed", "seed", SeedOpt, _DEFAULTS["seed"]),
    ("unit", "unit", UnitOpt, _DEFAULTS["unit"]),
    ("ci_level", "level", LevelOpt, _DEFAULTS["level"]),
    ("permutations", "n_perm", PermOpt, _DEFAULTS["n_perm"]),
    ("tolerance", "tolerance", TolOpt, _DEFAULTS["tolerance"]),
    ("gap_floor", "gap_floor", FloorOpt, _DEFAULTS["gap_floor"]),
    ("group_factor", "group_factor", GroupOpt, _DEFAULTS["group_factor"]),
    ("adjust", "adjust", AdjustOpt, _DEFAULTS["adjust"]),
    ("bootstrap_design", "design", DesignOpt, _DEFAULTS["design"]),
    ("simple", "simple", SimpleOpt, _DEFAULTS["simple"]),
    ("no_time_limit", None, TimeOpt, False),
)


@dataclass(frozen=True)
class AnalysisChoice:
    """What the command line chose of the bundle: ``--bootstrap`` (None: the default for the
    run), the :class:`Options` fields by name, and whether ``--no-time-limit`` was given."""

    bootstrap: int | None = None
    chosen: dict[str, Any] = field(default_factory=dict)
    no_time_limit: bool = False

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> AnalysisChoice:
        chosen = {name: params[p] for p, name, _, _ in BUNDLE if name is not None}
        return cls(params["bootstrap"], chosen, bool(params["no_time_limit"]))

    def check(self, command: str) -> None:
        """Refuse, in one line, the first number outside its option's range."""
        c = self.chosen
        check_numbers(
            command, bootstrap=self.bootstrap, ci_level=c["level"], permutations=c["n_perm"],
            tolerance=c["tolerance"], gap_floor=c["gap_floor"],
        )  # fmt: skip

    def options(self, path: Path) -> Options:
        """The analysis options for the run at ``path`` (:func:`analysis_options`)."""
        return analysis_options(path, self.bootstrap, no_time_limit=self.no_time_limit, **self.chosen)


#: The choice of a command called with every default (the placeholder default of ``analysis``).
DEFAULT_CHOICE = AnalysisChoice(chosen={name: _DEFAULTS[name] for _, name, _, _ in BUNDLE if name is not None})


def with_analysis_options(fn: F) -> F:
    """Give the command ``fn`` the bundle's options in place of its parameter ``analysis``
    (an :class:`AnalysisChoice`): typer sees one option per entry of :data:`BUNDLE` there."""
    sig = inspect.signature(fn, eval_str=True)
    bundle = [
        inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=opt, default=default)
        for p, _, opt, default in BUNDLE
    ]
    params: list[inspect.Parameter] = []
    for p in sig.parameters.values():
        params += bundle if p.name == "analysis" else [p]
    if len(params) == len(sig.parameters):
        raise TypeError(f"{fn.__name__} has no parameter 'analysis' for the analysis options")
    names = [p for p, _, _, _ in BUNDLE]

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        kwargs["analysis"] = AnalysisChoice.from_params({p: kwargs.pop(p) for p in names})
        return fn(*args, **kwargs)

    wrapper.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in params}
    return wrapper  # type: ignore[return-value]


def default_boot(path: Path, bootstrap: int | None) -> int:
    """``bootstrap``, else :data:`DEFAULT_BOOT` when the run has per-trial scores, else 0."""
    from interbias.analysis.scored_run import ScoredRun

    if bootstrap is not None:
        return bootstrap
    return DEFAULT_BOOT if ScoredRun.open(path).has_scores else 0


def analysis_options(path: Path, bootstrap: int | None, *, no_time_limit: bool = False, **chosen: Any) -> Options:
    """The analysis options of ``analyze``, ``report`` and ``fuse`` (``chosen``: the other
    :class:`Options` fields by name): B from :func:`default_boot`, refused below the minimum of
    the bootstrap design the options name; ``no_time_limit`` lifts the bootstrap's time limit."""
    from interbias.analysis.stats.bootstrap import check_replicates

    unit, design = chosen.get("unit", _DEFAULTS["unit"]), chosen.get("design", _DEFAULTS["design"])
    n_boot = check_replicates(default_boot(path, bootstrap), design if unit == "speaker" else unit)
    if no_time_limit:
        chosen["time_limit_s"] = None
    return Options(n_boot=n_boot, **chosen)
