"""The run of each experiment kind (:data:`interbias.experiments.kinds.KINDS`), behind one registry.

:data:`TASKS` maps a kind to the module that runs it; each module has
``run(options, reporter=None, *, exp=None) -> RunOutcome``:

- ``verification``: :mod:`interbias.run.tasks.verification` (the conductor, :mod:`interbias.run.conductor`);
- ``countermeasure``: :mod:`interbias.run.tasks.countermeasure`;
- ``tracks``: :mod:`interbias.run.tasks.tracks`.

:func:`run_experiment` is what ``interbias run`` calls. The modules are imported when a run of
their kind starts (each pulls in its models).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from interbias.utils.errors import ConfigError

if TYPE_CHECKING:
    from interbias.run.conductor import RunOutcome
    from interbias.run.inputs import RunOptions
    from interbias.utils.progress import Reporter

TASKS: dict[str, str] = {
    "verification": "interbias.run.tasks.verification",
    "countermeasure": "interbias.run.tasks.countermeasure",
    "tracks": "interbias.run.tasks.tracks",
}


def task_for(kind: str) -> Any:
    """The run function of experiments of ``kind``."""
    if kind not in TASKS:
        raise ConfigError(f"experiment kind {kind!r} has no run task; known: {', '.join(TASKS)}")
    return importlib.import_module(TASKS[kind]).run


def run_experiment(options: RunOptions, reporter: Reporter | None = None, *, exp: Any = None) -> RunOutcome:
    """Run an experiment of any kind (``exp``: as :func:`interbias.run.preflight.experiment_for_run`
    loaded and checked it; None: that preflight runs here)."""
    from interbias.run.preflight import experiment_for_run

    if exp is None:
        exp = experiment_for_run(options)
    return task_for(exp.kind)(options, reporter, exp=exp)
