"""The frame of every run, whatever its kind (:mod:`interbias.run.tasks`): open the run
directory and lock it (:func:`opened`), hand the finished run to the after-run hook, write
results.csv and run.json (:func:`finish`) and say what was done (:class:`RunOutcome`).

Between :func:`opened` and :func:`finish` a task does its own work. The after-run hook
(``RunOptions.after_run``, :data:`AfterRun`) has one signature for every kind: it takes a
:class:`RunEnd` and returns :class:`Analyses` (what run.json lists under ``analyses``, and the
results rows when the hook computed them: a countermeasure run's come from its analyses).
results.csv is written here only (:meth:`interbias.run.rundir.RunDir.write_results`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pandas as pd

from interbias.run.lock import RunLock
from interbias.run.results import revision
from interbias.run.rundir import RunDir
from interbias.utils import atomic

if TYPE_CHECKING:
    from interbias.corpora.manifest import Manifest
    from interbias.experiments.schema import Experiment
    from interbias.trials.sampler import TrialList
    from interbias.utils.progress import Reporter


#: Stages of a run whose failure run.json lists in ``errored_cells`` beside the cells' own
#: (their entry starts ``STAGE: ``; a cell's starts ``cell ``): counted apart, never as a cell.
STAGES = ("analysis", "attacks", "countermeasures")


def errored_split(errored: list[str]) -> tuple[list[str], list[str]]:
    """(the errored cells, the errored stages) of a run.json ``errored_cells`` list."""
    stage = [e for e in errored if str(e).split(": ", 1)[0] in STAGES]
    return [e for e in errored if e not in stage], stage


def stage_words(stages: list[str]) -> str:
    """``1 analysis``, ``2 analyses``, ``the attack stage``: the errored stages in words."""
    names = [str(e).split(": ", 1)[0] for e in stages]
    parts = []
    if n := names.count("analysis"):
        parts.append(f"{n} {'analyses' if n > 1 else 'analysis'}")
    parts += [f"the {name.rstrip('s')} stage" for name in dict.fromkeys(names) if name != "analysis"]
    return ", ".join(parts)


def errored_words(errored: list[str]) -> str:
    """``2 errored cell(s)``, with ``; errored: 1 analysis`` when a stage failed."""
    cells, stages = errored_split(errored)
    return f"{len(cells)} errored cell(s)" + (f" (errored besides: {stage_words(stages)})" if stages else "")


class Asked(Protocol):
    """What the frame reads of a run's options (:class:`interbias.run.inputs.RunOptions`)."""

    experiment: str
    corpus: str | None
    corpus_root: Path | None
    cache_dir: Path | None


@dataclass
class RunOutcome:
    run_dir: Path
    results: pd.DataFrame
    n_embedded: int
    n_cached: int
    cells_done_before: int
    errored_cells: list[str]
    #: A report the run wrote itself (a tracks run's tracks_report.md); None: ``interbias report`` makes one.
    report: Path | None = None


@dataclass
class RunEnd:
    """What a finished run hands its after-run hook."""

    #: The experiment kind (``Experiment.kind``): which analyses apply.
    kind: str
    run: RunDir
    #: Errors of the run so far; the hook adds its own (an analysis that failed).
    errored: list[str]
    #: The results rows as written (verification, tracks); None when the hook computes them.
    results: pd.DataFrame | None = None
    #: A verification run's trial list, what it embedded, whether it has spoof trials.
    trials: TrialList | None = None
    scored: Manifest | None = None
    spoofing: bool = False
    #: A countermeasure run's scores (every CM, cell and utterance) and what its analyses need
    #: (``exp``, ``spec``, ``models``, ``run_id``, ``failed``, ``manifest``).
    scores: pd.DataFrame | None = None
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass
class Analyses:
    """What an after-run hook wrote: run.json's ``analyses`` entry, and the results rows when
    the hook computed them (written by :func:`finish`)."""

    files: dict[str, Any] = field(default_factory=dict)
    results: pd.DataFrame | None = None


#: The after-run hook: ``interbias run`` passes :func:`interbias.analysis.after_run.after_run`.
AfterRun = Callable[[RunEnd], Analyses]


@contextmanager
def opened(folder: Path, reporter: Reporter) -> Iterator[RunDir]:
    """The run directory ``folder``, locked while the run works (:class:`RunLock`; a lock
    left by a dead process is taken over, with a notice), its stale temporary files removed."""
    run = RunDir(folder)
    with RunLock(run.path) as lock:
        if lock.previous_pid:
            reporter.notice(
                f"note: took over the lock of an earlier run (pid {lock.previous_pid}) that is no longer running"
            )
        atomic.remove_stale_temps(run.path)
        yield run


def finish(
    run: RunDir, end: RunEnd, hook: AfterRun | None, record: Callable[[Analyses], dict[str, Any]]
) -> pd.DataFrame | None:
    """Write results.csv (the rows the task made, before its analyses read them), run the
    after-run hook, write the rows it computed, then run.json (``record`` of the analyses);
    returns the rows written (None: none)."""
    if end.results is not None:
        run.write_results(end.results)
    analyses = hook(end) if hook is not None else Analyses()
    if analyses.results is not None:
        run.write_results(analyses.results)
    rec = record(analyses)
    if run.unsealed:  # completion records that failed their checksum: their cells were scored again
        rec["records_redone"] = dict(sorted(run.unsealed.items()))
    run.write_run_json(rec)
    return end.results if analyses.results is None else analyses.results


def header(run_id: str, command: list[str], *, rev: str | None = None, **more: Any) -> dict[str, Any]:
    """run.json's first keys (:func:`interbias.run.results.base_record`): the run id, the
    code's revision (``rev``, else :func:`interbias.run.results.revision`), the command, and ``more``."""
    return {"run_id": run_id, "revision": rev if rev is not None else revision(), "command": command, **more}


def seconds_since(t0: float) -> float:
    """Seconds since ``t0`` (``time.perf_counter``), as run.json records them."""
    return round(time.perf_counter() - t0, 2)


def cache_of(options: Asked) -> Path:
    """The cache folder of a run: ``--cache-dir``, else :func:`interbias.utils.paths.cache_dir`."""
    from interbias.utils.paths import cache_dir

    return Path(options.cache_dir or cache_dir())


def loaded(options: Asked, exp: Experiment | None) -> Experiment:
    """``exp``; None (a task called directly, not through :func:`interbias.run.tasks.experiment_for_run`):
    the experiment ``options`` names, loaded and its data checked to be here."""
    if exp is not None:
        return exp
    from interbias.corpora import check_runnable
    from interbias.experiments.schema import find_experiment, load_experiment
    from interbias.utils.paths import conditions_dir

    exp = load_experiment(find_experiment(options.experiment, conditions_dir()), corpus=options.corpus)
    check_runnable(exp, root=options.corpus_root)
    return exp
