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
    n_chains: int = 0
    n_cells: int = 0
    #: Results rows (cells × encoders or CMs); None when only the data can tell (tracks).
    n_rows: int | None = 0
    trials_per_stratum: int | None = 0
    #: How the trials are counted when not sampled by the trial spec (an external list).
    trials_note: str = ""
    runs_here: str = ""
    n_utterances: int | None = None
    n_items: int | None = None
    n_embeddings: int | None = None
    #: CM or track scorings (utterance × cell × model) of a countermeasure or tracks run.
    n_scorings: int | None = None
    seconds: float | None = None
    utterances_from: str = ""
    #: The first line of a countermeasure or tracks estimate, and the lines of what it scores.
    headline: str = ""
    work: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        if self.headline:  # a countermeasure or tracks estimate says its own first line
            return [self.headline, *self.work, *(f"  note: {n}" for n in self.notes)]
        out = [
            f"{self.label}: corpus {self.corpus}, {self.n_strata} strata × {self.n_chains} chain setting(s) = "
            f"{self.n_cells} cells → {self.n_rows} results rows; "
            f"{self.trials_note or f'{self.trials_per_stratum} trials per stratum'}; "
            f"{self.runs_here}"
        ]
        if self.n_embeddings is None:
            out.append(f"  cost: unknown ({self.utterances_from})")
        else:
            out.append(
                f"  cost: {self.n_utterances} utterances → {self.n_items} (utterance, chain) items × encoders = "
                f"{self.n_embeddings} embeddings, about {duration_text(self.seconds or 0.0)} on this machine "
                f"({self.utterances_from})"
            )
        out += [f"  note: {n}" for n in self.notes]
        return out

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items()}


def duration_text(seconds: float) -> str:
    """``42 s``, ``3.5 min`` or ``2.1 h``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"
