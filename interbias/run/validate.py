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
from interbias.utils.errors import InterbiasError, ShortfallError

if TYPE_CHECKING:
    from interbias.experiments.schema import Experiment

DEFAULT_ENCODERS = ("CAM++", "GE2E", "mfcc-stats")


@dataclass
class FileReport:
    path: Path
    estimates: list[Estimate] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class UserData:
    """A user's corpus to judge the experiment on (``--manifest``, ``--data-root``) and the
    recorded noise given for it (``--noise-dir``), as ``run`` takes them."""

    manifest: Path | None = None
    data_root: Path | None = None
    noise_dir: Path | None = None

    def applied(self, exp: Experiment) -> Experiment:
        """``exp`` as ``run`` would run it with these (:func:`interbias.run.preflight.loaded_for_run`,
        :func:`interbias.run.preflight.verification_for_run`)."""
        from interbias.experiments.requirements import manifest_form, with_noise_dir
        from interbias.experiments.schema import with_data

        if self.manifest is None:
            return exp if self.noise_dir is None else with_noise_dir(exp, self.noise_dir)
        if not task_of(exp).embeds:  # a countermeasure or tracks experiment scores its own corpus
            return exp
        exp = manifest_form(exp, noise_dir=self.noise_dir)
        return with_data(exp, manifest=self.manifest, data_root=self.data_root)


def validate_file(
    path: Path,
    *,
    encoders: Sequence[str] | None = None,
    corpus: str | None = None,
    cache: Path | None = None,
    data: UserData | None = None,
) -> FileReport:
    """Every check of ``interbias validate`` on one experiment file (see the module docstring);
    problems are collected as one line each, never raised. ``encoders`` None: the run's default
    list, less the encoders the experiment cannot run (each named in a note); ``data``: judge it
    on a user's corpus, as ``run --manifest`` would run it (then the file's variants are not
    checked unless ``corpus`` names one)."""
    from interbias.experiments.schema import load_experiment
    from interbias.utils.paths import cache_dir

    report = FileReport(Path(path))
    cache = cache or cache_dir()
    errors = report.errors
    data = data or UserData()
    labels = list(encoders) if encoders is not None else list(DEFAULT_ENCODERS)
    try:
        default = load_experiment(path, corpus=corpus)
    except InterbiasError as exc:
        errors += encoder_problems(labels)
        errors.append(str(exc))
        return report
    if task_of(default).embeds:  # a CM experiment's --encoders name CMs (checked by its estimate)
        errors += encoder_problems(labels)
    own = [] if corpus or data.manifest else sorted((default.raw.get("variants") or {}).keys())
    for variant in [None, *own]:
        try:
            exp = data.applied(default if variant is None else load_experiment(path, corpus=variant))
            report.estimates.append(estimate(exp, labels, cache, named=encoders is not None))
        except ShortfallError as exc:  # one line per missing thing
            errors += list(exc.lines)
        except InterbiasError as exc:
            errors.append(f"{Path(path).name}: variant {variant}: {exc}" if variant else str(exc))
    return report


def runnable_defaults(exp: Experiment, labels: Sequence[str]) -> tuple[list[str], list[str]]:
    """The default encoder labels ``exp`` can run and one note per label it refuses (a
    white-box attack on an encoder without a differentiable path), naming the list that runs."""
    from interbias.experiments.attack_spec import check_attack_labels

    kept, notes = [], []
    for label in labels:
        try:
            check_attack_labels(exp, [label])
        except InterbiasError as exc:
            notes.append(f"{label} left out of the default encoders: {exc}")
        else:
            kept.append(label)
    if notes and kept:
        notes.append(f"run it with --encoders {','.join(kept)}")
    return kept, notes


def encoder_problems(labels: Sequence[str]) -> list[str]:
    """Labels that are not registered encoders (one line each, listing the valid labels)."""
    from interbias.encoders import ENCODERS

    known = ENCODERS.names()
    return [f"unknown encoder {label!r}; valid: {', '.join(known)}" for label in labels if label not in known]


def estimate(exp: Experiment, encoders: Sequence[str], cache: Path, *, named: bool = True) -> Estimate:
    """What ``validate`` says of ``exp``: its kind's estimate (module docstring). ``named`` False:
    ``encoders`` is the default list, and those ``exp`` cannot run are left out with a note
    (:func:`runnable_defaults`) instead of refused."""
    task = task_of(exp)
    dropped: list[str] = []
    if not named and task.embeds:
        encoders, dropped = runnable_defaults(exp, encoders)
    est = task.estimate(exp, encoders, cache)
    est.notes[:0] = dropped
    return est
