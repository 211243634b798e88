"""``trials: {speakers_per_stratum: N}``: draw exactly N speakers per stratum (e.g. what
``interbias plan`` asked for), or refuse in one line saying how many the corpus has.

``interbias run --plan plan.csv`` follows a plan (:func:`apply_plan`): N is the largest
speakers-per-stratum need of its effects for the experiment being run, and the target and
non-target trials per stratum are the plan's counts for that effect (N × the pilot's trials per
speaker), so trials per speaker stay at the pilot's level. Every stratum gets N speakers and
the same trial counts (the plan states equal strata). A stratum that cannot supply the planned
trials is refused after the draw (:func:`check_drawn`), never run short silently.

With a dev split (``trials.dev_share`` s) N counts the eval split's speakers per stratum; the
dev split draws :func:`dev_speakers` per stratum, N·s/(1−s) rounded (the experiment's dev share
kept), at least ``min_speakers`` — so a plan of N needs N + that many speakers per stratum.

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

from interbias.experiments.schema import Experiment
from interbias.utils.errors import ConfigError, TrialError
from interbias.utils.seeding import derive_rng

V = TypeVar("V")


def dev_speakers(n: int, dev_share: float | None, min_speakers: int = 2) -> int:
    """Speakers per stratum the dev split draws when eval draws ``n``: round(n·s/(1−s)) for dev
    share s, at least ``min_speakers`` (0 without a dev split)."""
    if not dev_share:
        return 0
    return max(min_speakers, 2, int(math.floor(n * dev_share / (1 - dev_share) + 0.5)))


def split_speakers_per_stratum(exp: Experiment, split: str | None) -> int | None:
    """``trials.speakers_per_stratum`` as the ``split`` block draws it (dev: :func:`dev_speakers`)."""
    n = exp.trials.speakers_per_stratum
    if n is None or split != "dev":
        return n
    return dev_speakers(n, exp.trials.dev_share, exp.trials.min_speakers)


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
    target_trials: int
    nontarget_trials: int

    def describe(self, path: Path, exp: Experiment) -> str:
        skipped = f" ({self.n_unplannable} could not be planned)" if self.n_unplannable else ""
        n_dev = dev_speakers(self.speakers_per_stratum, exp.trials.dev_share, exp.trials.min_speakers)
        dev = f", plus {n_dev} dev speakers per stratum (dev_share {exp.trials.dev_share:g})" if n_dev else ""
        return (
            f"plan {path}: {self.speakers_per_stratum} speakers, {self.target_trials} target and "
            f"{self.nontarget_trials} non-target trials in every stratum (the pilot's trials per speaker){dev}, "
            f"the most any of its {self.n_effects} effect(s) of {exp.name} needs{skipped}"
        )


#: plan.csv columns a follow-up run reads.
PLAN_COLUMNS = (
    "experiment",
    "speakers_per_stratum_needed",
    "target_trials_per_stratum_needed",
    "nontarget_trials_per_stratum_needed",
)


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
        notes = [str(n) for n in rows.get("note", pd.Series(dtype=str)) if "no plan (" in str(n)]
        why = notes[0].split("no plan (", 1)[1].removesuffix(")") if notes else "no bootstrap spread in the pilot"
        raise ConfigError(f"--plan {path}: none of its {len(rows)} effect(s) of {experiment} could be planned ({why})")
    top = rows.loc[planned.idxmax()]
    counts = [pd.to_numeric(top[c], errors="coerce") for c in PLAN_COLUMNS[2:]]
    if any(pd.isna(v) or v < 1 for v in counts):
        raise ConfigError(f"--plan {path}: the planned effect has no trial counts; plan the pilot again")
    return PlanRequest(
        speakers_per_stratum=int(math.ceil(float(planned.max()))),
        n_effects=len(rows),
        n_unplannable=len(rows) - len(planned),
        target_trials=int(counts[0]),
        nontarget_trials=int(counts[1]),
    )


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


def with_plan(exp: Experiment, request: PlanRequest) -> Experiment:
    """``exp`` drawing the plan's speakers and trial counts in every stratum
    (``trials: {speakers_per_stratum: N, targets: T, nontargets: U}``)."""
    exp = with_speakers(exp, request.speakers_per_stratum)
    raw = copy.deepcopy(exp.raw)
    raw["trials"] = {**raw["trials"], "targets": request.target_trials, "nontargets": request.nontarget_trials}
    spec = replace(exp.trials, targets=request.target_trials, nontargets=request.nontarget_trials)
    return replace(exp, trials=spec, raw=raw)


def apply_plan(exp: Experiment, path: Path) -> tuple[Experiment, PlanRequest]:
    """What ``run --plan path`` runs: :func:`read_plan` for ``exp`` and :func:`with_plan`."""
    request = read_plan(path, exp.name)
    return with_plan(exp, request), request


def check_drawn(request: PlanRequest, strata: Mapping[str, Any]) -> None:
    """Refuse a trial list that drew fewer trials in some stratum than the plan asked for
    (``strata``: stratum name -> stats with ``n_target`` and ``n_nontarget``)."""
    for name, st in strata.items():
        if st.n_target < request.target_trials or st.n_nontarget < request.nontarget_trials:
            raise TrialError(
                f"stratum {name}: the plan asks for {request.target_trials} target / {request.nontarget_trials} "
                f"non-target trials, its {request.speakers_per_stratum} speakers give {st.n_target} / "
                f"{st.n_nontarget}; the planned power needs the pilot's trials per speaker"
            )
