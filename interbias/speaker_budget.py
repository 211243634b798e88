"""``trials: {speakers_per_stratum: N}``: draw exactly N speakers per stratum (e.g. what
``interbias plan`` asked for), or refuse in one line saying how many the corpus has.

``interbias run --plan plan.csv`` sets N from a plan: the largest speakers-per-stratum need of
its effects for the experiment being run (:func:`read_plan`, :func:`with_speakers`). Only the
speakers change; trial counts stay the experiment's.

The N speakers are drawn without replacement from the stratum's speakers that have both enrol
and test utterances, with a generator derived from the stratum's own sampling seed parts; only
their utterances enter the stratum's pools.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd

from interbias.errors import ConfigError, TrialError
from interbias.experiments import Experiment
from interbias.seeding import derive_rng

V = TypeVar("V")


def keep_speakers(
    pools: tuple[Mapping[str, V], Mapping[str, V]], n: int, parts: tuple[Any, ...], where: str
) -> tuple[dict[str, V], dict[str, V]]:
    """(enrol, test) pools restricted to ``n`` speakers drawn from those in both."""
    enrol, test = pools
    paired = sorted(set(enrol) & set(test))
    if len(paired) < n:
        raise TrialError(
            f"{where} has {len(paired)} speaker(s) with usable enrol and test utterances; "
            f"trials.speakers_per_stratum asks for {n}"
        )
    rng = derive_rng(*parts, "speakers_per_stratum", n)
    chosen = sorted(paired[i] for i in rng.choice(len(paired), size=n, replace=False).tolist())
    return {s: enrol[s] for s in chosen}, {s: test[s] for s in chosen}


@dataclass(frozen=True)
class PlanRequest:
    """What a plan (``interbias plan``'s plan.csv) asks of a follow-up run of one experiment."""

    speakers_per_stratum: int
    n_effects: int
    n_unplannable: int
    target_trials: int | None
    nontarget_trials: int | None

    def describe(self, path: Path, exp: Experiment) -> str:
        trials = (
            f"; the plan assumed about {self.target_trials} target / {self.nontarget_trials} non-target trials per "
            f"stratum, the experiment draws up to {exp.trials.targets} / {exp.trials.n_nontargets}"
            if self.target_trials is not None and self.nontarget_trials is not None
            else ""
        )
        skipped = f" ({self.n_unplannable} could not be planned)" if self.n_unplannable else ""
        return (
            f"plan {path}: {self.speakers_per_stratum} speakers per stratum, the most any of its "
            f"{self.n_effects} effect(s) of {exp.name} needs{skipped}{trials}"
        )


#: plan.csv columns a follow-up run reads.
PLAN_COLUMNS = ("experiment", "speakers_per_stratum_needed")


def read_plan(path: Path, experiment: str) -> PlanRequest:
    """The speakers per stratum ``path`` (plan.csv) asks for ``experiment``: the largest need over
    its effects (every model, interaction and gap), so that each planned effect can be resolved.
    A plan of another experiment, or one with no plannable effect, is refused in one line."""
    try:
        frame = pd.read_csv(path)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"--plan {path}: cannot be read as a plan.csv ({type(exc).__name__}: {exc})") from exc
    missing = [c for c in PLAN_COLUMNS if c not in frame.columns]
    if missing:
        raise ConfigError(f"--plan {path}: not a plan.csv of `interbias plan` (no column {missing[0]!r})")
    names = sorted({str(v) for v in frame["experiment"].dropna()})
    rows = frame[frame["experiment"].astype(str) == experiment]
    if rows.empty:
        raise ConfigError(
            f"--plan {path} is a plan for {', '.join(names) or 'no experiment'}, not {experiment}: "
            f"plan a pilot run of {experiment} first (interbias plan RUN_DIR)"
        )
    need = pd.to_numeric(rows["speakers_per_stratum_needed"], errors="coerce")
    planned = need[need.notna() & (need >= 1)]
    if planned.empty:
        raise ConfigError(
            f"--plan {path}: none of its {len(rows)} effect(s) of {experiment} could be planned "
            "(no bootstrap spread in the pilot)"
        )
    top = rows.loc[planned.idxmax()]
    return PlanRequest(
        speakers_per_stratum=int(math.ceil(float(planned.max()))),
        n_effects=len(rows),
        n_unplannable=len(rows) - len(planned),
        target_trials=_count(top, "target_trials_per_stratum_needed"),
        nontarget_trials=_count(top, "nontarget_trials_per_stratum_needed"),
    )


def _count(row: pd.Series, column: str) -> int | None:
    if column not in row.index:
        return None
    value = pd.to_numeric(row[column], errors="coerce")
    return None if pd.isna(value) else int(value)


def with_speakers(exp: Experiment, n: int) -> Experiment:
    """``exp`` drawing exactly ``n`` speakers per stratum (``trials: {speakers_per_stratum: n}``);
    the resolved definition (run.json, experiment.yaml, the run id) says so. Sampled trials only."""
    if exp.trials.list_file is not None:
        raise ConfigError(
            f"{exp.name} scores an external trial list; --plan sets how many speakers sampled trials draw"
        )
    if n < 2:
        raise ConfigError(f"speakers_per_stratum must be at least 2, got {n}")
    raw = copy.deepcopy(exp.raw)
    trials = raw.get("trials")
    raw["trials"] = {**(trials if isinstance(trials, dict) else {}), "speakers_per_stratum": n}
    return replace(exp, trials=replace(exp.trials, speakers_per_stratum=n), raw=raw)
