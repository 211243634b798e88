"""``interbias validate``: what ``interbias run`` would do with an experiment file, without
running it or touching a run directory.

For a file and each of its ``variants:`` (or the one ``corpus`` names): parse and resolve it
(defaults, operators, trial spec), check the encoder labels (when its run embeds with speaker
encoders), and estimate it through its kind's task (:meth:`interbias.run.tasks.base.Task.estimate`):
its size, whether it runs here and its cost. A verification experiment's estimate counts the
embeddings and time (:mod:`interbias.run.tasks.verification_estimate`); a countermeasure or
tracks experiment embeds nothing and has no trials: its estimate counts the CM or track
scorings its run makes (:mod:`interbias.run.tasks.countermeasure`, :mod:`interbias.run.tasks.tracks`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from interbias.run.estimate import Estimate
from interbias.run.tasks import task_of
from interbias.utils.errors import InterbiasError

if TYPE_CHECKING:
    from interbias.experiments.schema import Experiment

DEFAULT_ENCODERS = ("CAM++", "GE2E", "mfcc-stats")


@dataclass
class FileReport:
    path: Path
    estimates: list[Estimate] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def validate_file(
    path: Path, *, encoders: Sequence[str] = DEFAULT_ENCODERS, corpus: str | None = None, cache: Path | None = None
) -> FileReport:
    """Every check of ``interbias validate`` on one experiment file (see the module docstring);
    problems are collected as one line each, never raised."""
    from interbias.experiments.schema import load_experiment
    from interbias.utils.paths import cache_dir

    report = FileReport(Path(path))
    cache = cache or cache_dir()
    errors = report.errors
    try:
        default = load_experiment(path, corpus=corpus)
    except InterbiasError as exc:
        errors += encoder_problems(encoders)
        errors.append(str(exc))
        return report
    if task_of(default).embeds:  # a CM experiment's --encoders name CMs (checked by its estimate)
        errors += encoder_problems(encoders)
    variants = [None] if corpus else [None, *sorted((default.raw.get("variants") or {}).keys())]
    for variant in variants:
        try:
            exp = default if variant is None else load_experiment(path, corpus=variant)
            report.estimates.append(estimate(exp, encoders, cache))
        except InterbiasError as exc:
            errors.append(f"{Path(path).name}: variant {variant}: {exc}" if variant else str(exc))
    return report


def encoder_problems(labels: Sequence[str]) -> list[str]:
    """Labels that are not registered encoders (one line each, listing the valid labels)."""
    from interbias.encoders import ENCODERS

    known = ENCODERS.names()
    return [f"unknown encoder {label!r}; valid: {', '.join(known)}" for label in labels if label not in known]


def estimate(exp: Experiment, encoders: Sequence[str], cache: Path) -> Estimate:
    """What ``validate`` says of ``exp``: its kind's estimate (module docstring)."""
    return task_of(exp).estimate(exp, encoders, cache)
