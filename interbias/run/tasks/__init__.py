"""The task of each experiment kind (:data:`interbias.experiments.kinds.KINDS`), in one registry.

:data:`TASKS` holds one :class:`~interbias.run.tasks.base.Task` per kind:

- ``verification``: :mod:`interbias.run.tasks.verification` (the conductor, :mod:`interbias.run.conductor`);
- ``countermeasure``: :mod:`interbias.run.tasks.countermeasure`;
- ``tracks``: :mod:`interbias.run.tasks.tracks`.

What a kind means (whether it embeds with speaker encoders, what ``run`` checks, what
``validate`` estimates, how it runs) is asked of its task (:func:`task_of`), never re-derived
from the kind's name. :func:`experiment_for_run` is the one load and check of an experiment
before ``interbias run`` works; :func:`run_experiment` runs it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from interbias.run.preflight import check_can_run, loaded_for_run, user_data
from interbias.run.tasks.base import Task
from interbias.run.tasks.countermeasure import COUNTERMEASURE
from interbias.run.tasks.tracks import TRACKS_TASK
from interbias.run.tasks.verification import VERIFICATION
from interbias.utils.errors import ConfigError
from interbias.utils.registry import Registry

if TYPE_CHECKING:
    from interbias.experiments.schema import Experiment
    from interbias.run.frame import RunOutcome
    from interbias.run.inputs import RunOptions
    from interbias.utils.progress import Reporter

#: The task of each experiment kind.
TASKS: Registry[Task] = Registry("experiment kind", ConfigError)
for _task in (VERIFICATION, COUNTERMEASURE, TRACKS_TASK):
    TASKS.register(_task.kind)(_task)


def task_of(exp: Experiment) -> Task:
    """The task of ``exp``'s kind."""
    return TASKS.get(exp.kind)


def experiment_for_run(options: RunOptions) -> Experiment:
    """The experiment ``interbias run`` runs, read once (``--trim-silence`` applied) and checked
    before any work: whether it runs here (its data, its operators' resources, its CMs unless the command line names them),
    then its task's checks (:meth:`~interbias.run.tasks.base.Task.check`)."""
    path, exp = loaded_for_run(options)
    task = task_of(exp)
    if not user_data(options):  # the experiment's own data: say what runs here
        chosen = options.countermeasures is not None or task.names_models(options)  # CMs named on the command line
        check_can_run(exp, options.experiment, path, options.corpus_root, models=not chosen)
    return task.check(exp, options)


def run_experiment(
    options: RunOptions, reporter: Reporter | None = None, *, exp: Experiment | None = None
) -> RunOutcome:
    """Run an experiment of any kind (``exp``: as :func:`experiment_for_run` loaded and checked
    it; None: that check runs here)."""
    if exp is None:
        exp = experiment_for_run(options)
    return task_of(exp).run(options, reporter, exp)
