"""The record ``interbias validate`` prints per experiment (a file, or one of its variants):
its grid, whether it runs here, and what its run would embed or score (:mod:`interbias.run.validate`
and the estimate of each kind's task, :meth:`interbias.run.tasks.base.Task.estimate`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Estimate:
    """Size and cost of one resolved experiment (a file, or one of its variants)."""

    label: str
    corpus: str
    #: The experiment's kind (``verification``, ``countermeasure`` or ``tracks``).
    kind: str = "verification"
    n_strata: int = 0
    #: Chain settings per stratum, and the back-end factor's levels that score each (0: none).
    n_chains: int = 0
    n_backends: int = 0
    n_cells: int = 0
    #: Results rows (cells × encoders or CMs); None when only the data can tell (tracks).
    n_rows: int | None = 0
    #: Trials per stratum the run draws (eval; the sampler's count where the corpus is here,
    #: else the ask); ``trials_asked`` the spec's ask when the sampler drew fewer or did not draw.
    trials_per_stratum: int | None = 0
    trials_asked: int | None = None
    #: Dev trials per stratum drawn beside them (``trials.dev_share``), 0 without a dev split.
    dev_trials_per_stratum: int = 0
    #: Whether ``trials_per_stratum`` was drawn from the corpus (else it is the ask: "up to").
    trials_drawn: bool = False
    #: How the trials are counted when not sampled by the trial spec (an external list).
    trials_note: str = ""
    runs_here: str = ""
    n_utterances: int | None = None
    n_items: int | None = None
    n_embeddings: int | None = None
    #: CM or track scorings (utterance × cell × model) of a countermeasure or tracks run.
    n_scorings: int | None = None
    #: Seconds with every one of ``cores`` free for the run.
    seconds: float | None = None
    #: The machine when estimated: its cores, the 1-minute load average (None where the
    #: platform has none) and the seconds at that load (the load assumed to stay).
    cores: int = 0
    #: Embedding processes the run would start (1 for a small run, else ``cores``).
    jobs: int = 0
    load: float | None = None
    seconds_now: float | None = None
    utterances_from: str = ""
    #: The first line of a countermeasure or tracks estimate, and the lines of what it scores.
    headline: str = ""
    work: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        if self.headline:  # a countermeasure or tracks estimate says its own first line
            return [self.headline, *self.work, *(f"  note: {n}" for n in self.notes)]
        strata = "stratum" if self.n_strata == 1 else "strata"
        out = [
            f"{self.label}: corpus {self.corpus}, {self.n_strata} {strata} × {self.grid_text()} = "
            f"{self.n_cells} cells → {self.n_rows} results rows; "
            f"{self.trials_note or self.trials_text()}; "
            f"{self.runs_here}"
        ]
        if self.n_embeddings is None:
            out.append(f"  cost: unknown ({self.utterances_from})")
        else:
            out.append(
                f"  cost: {self.n_utterances} utterances → {self.n_items} (utterance, chain) items × encoders = "
                f"{self.n_embeddings} embeddings, about {duration_text(self.seconds or 0.0)} with {self.cores_text()} "
                f"free{self.load_text()} ({self.utterances_from})"
            )
        out += [f"  note: {n}" for n in self.notes]
        return out

    def grid_text(self) -> str:
        """``3 chain setting(s)``, or with a back-end factor ``3 chain setting(s) × 3 back-ends``
        (every back-end level re-scores the same embeddings)."""
        chains = f"{self.n_chains} chain setting(s)"
        return f"{chains} × {self.n_backends} back-ends" if self.n_backends else chains

    def trials_text(self) -> str:
        """``555 trials per stratum (of 600 asked) + 405 dev`` where the sampler drew them,
        ``up to 600 trials per stratum (as many as the corpus holds)`` where it could not."""
        if not self.trials_drawn:
            return f"up to {self.trials_per_stratum} trials per stratum (as many as the corpus holds)"
        asked = f" (of {self.trials_asked} asked)" if self.trials_asked is not None else ""
        dev = f" + {self.dev_trials_per_stratum} dev" if self.dev_trials_per_stratum else ""
        return f"{self.trials_per_stratum} trials per stratum{asked}{dev}"

    def cores_text(self) -> str:
        if self.jobs == 1 or self.cores == 1:
            return "1 core" if self.cores != 1 else "the 1 core"
        return "both cores" if self.cores == 2 else f"all {self.cores} cores"

    def load_text(self) -> str:
        """``; at the load now (1-min load 3.1 on 2 cores) about 2.9 min``, or "" (no load average)."""
        if self.load is None or self.seconds_now is None:
            return ""
        return f"; at the load now (1-min load {self.load:.1f}) about {duration_text(self.seconds_now)}"

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items()}


def duration_text(seconds: float) -> str:
    """``42 s``, ``3.5 min`` or ``2.1 h``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def machine_load() -> tuple[int, float | None]:
    """This machine's cores and its 1-minute load average (None where the platform has none)."""
    import os

    cores = os.cpu_count() or 1
    try:
        return cores, float(os.getloadavg()[0])
    except (AttributeError, OSError):
        return cores, None


def shared_jobs(jobs: int, cores: int, load: float | None) -> float:
    """The cores ``jobs`` CPU-bound workers get on ``cores`` cores already running ``load``
    others, each runnable process sharing alike: ``jobs`` while they fit beside the load, else
    ``cores × jobs / (jobs + load)``."""
    if load is None or jobs + load <= cores:
        return float(jobs)
    return max(cores * jobs / (jobs + load), 1e-3)


def busy_note(cores: int, load: float | None) -> str | None:
    """A warning when the machine is busy (its 1-minute load at least half its cores), else None."""
    if load is None or cores < 1 or load < 0.5 * cores:
        return None
    return (
        f"note: the machine is busy (1-min load {load:.1f} on {cores} core{'' if cores == 1 else 's'}): a run "
        "shares the cores and takes longer than with them free; the estimates at the load now assume it stays"
    )
