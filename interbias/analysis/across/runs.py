"""Several run directories analysed together (leaderboard, the ``interbias runs card`` page).

Every run is analysed with the same bootstrap settings, so runs that hold the same trial list
(same ``trials_sha256``, hence the same speakers and strata) get the same speaker resample in
every replicate: their replicates are paired, and differences between encoders of those runs
are paired differences. Runs with different trial lists are independent samples.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from interbias.analysis.suite import Analysis, Options, analyse
from interbias.run.rundir import EXPERIMENT, RESULTS, RunDir
from interbias.utils.errors import AnalysisError


@dataclass(frozen=True)
class RunAnalysis:
    path: Path
    trials_sha256: str
    analysis: Analysis


def expand(paths: list[Path]) -> list[Path]:
    """Run directories named by ``paths``: a folder holding results.csv is a run; any other
    folder stands for every run below it (sorted), symbolic links to folders included."""
    out: list[Path] = []
    for p in paths:
        p = Path(p)
        if (p / RESULTS).is_file():
            out.append(p)
        elif p.is_dir():
            found = runs_below(p)
            if not found:
                raise AnalysisError(f"{p}: no run directory (results.csv) in it")
            out += found
        else:
            raise AnalysisError(f"run directory {p} does not exist")
    return list(dict.fromkeys(out))


def runs_below(folder: Path) -> list[Path]:
    """Every folder below ``folder`` that holds results.csv, sorted. Symbolic links to folders
    are followed (a folder of links to runs is a folder of runs); each real folder is visited
    once, so a link back up ends the walk."""
    found: list[Path] = []
    seen: set[str] = set()
    for root, dirs, files in os.walk(folder, followlinks=True):
        real = os.path.realpath(root)
        if real in seen:
            dirs.clear()
            continue
        seen.add(real)
        if RESULTS in files:
            found.append(Path(root))
    return sorted(found)


def run_kind(path: Path) -> str:
    """The experiment kind of a run (``verification``, ``countermeasure``, ``tracks``) from its
    experiment.resolved.json; ``verification`` for a run without one (results.csv alone)."""
    from interbias.experiments.kinds import kind_sections
    from interbias.utils.errors import ConfigError

    resolved = RunDir(path).read_json(EXPERIMENT, AnalysisError) or {}
    try:
        return str(kind_sections(resolved, str(path))["kind"])
    except ConfigError as exc:
        raise AnalysisError(f"{path}: {exc}") from exc


def verification_runs(paths: list[Path], what: str) -> tuple[list[Path], list[str]]:
    """(the speaker-verification runs of ``paths``, one note counting the others, left out of
    ``what``); an error when none is left."""
    runs, other = [], []
    for path in expand(paths):
        (runs if run_kind(path) == "verification" else other).append(path)
    notes = []
    if other:
        named = ", ".join(f"{p.name} ({run_kind(p)})" for p in other)
        notes.append(f"left out {len(other)} run(s) that are not speaker-verification runs: {named}: {what}")
    if not runs:
        raise AnalysisError(f"no speaker-verification run among {', '.join(str(p) for p in paths)}: {what}")
    return runs, notes


def load(paths: list[Path], options: Options, notes: list[str] | None = None) -> list[RunAnalysis]:
    """Analyse every speaker-verification run with ``options`` (which must ask for bootstrap
    replicates); the other runs are left out, counted in ``notes`` when given."""
    if options.n_boot < 1:
        raise AnalysisError("comparing runs needs bootstrap replicates (--bootstrap > 0)")
    found, skipped = verification_runs(paths, "they have no per-trial speaker-verification scores to compare")
    if notes is not None:
        notes += skipped
    out = []
    for path in found:
        a = analyse(path, options)
        sha = a.run.trials_sha256 or "unknown"
        out.append(RunAnalysis(path, sha, a))
    return out


def experiment_replicates(a: Analysis) -> dict[tuple[str, str], tuple[float, np.ndarray]]:
    """(model, experiment) -> (mean of the experiment's cells, its replicates)."""
    if a.replicates is None:
        raise AnalysisError("experiment replicates need a bootstrapped analysis")
    frame = a.results
    out = {}
    for (model, exp), grp in frame.groupby(["model", "experiment"], sort=False):
        reps = np.stack([a.replicates.values[(exp, model, c)] for c in grp["cell"]]).mean(axis=0)
        out[(str(model), str(exp))] = (float(pd.to_numeric(grp[a.options.metric]).mean()), reps)
    return out
