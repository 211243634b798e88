"""The score-normalisation cohort: ``scoring.cohort.speakers`` speakers of the experiment's
population that appear in no trial (dev or eval), drawn by a derived seed,
``utterances_per_speaker`` utterances each (also drawn by a derived seed)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from interbias.utils.errors import TrialError
from interbias.utils.seeding import derive_rng

if TYPE_CHECKING:
    import pandas as pd

    from interbias.corpora.manifest import Manifest
    from interbias.experiments.schema import Experiment


@dataclass(frozen=True)
class Cohort:
    """The drawn cohort: utterance ids (sorted), their speakers, and how it was drawn."""

    ids: tuple[str, ...]
    speakers: tuple[str, ...]
    info: dict[str, Any] = field(default_factory=dict)


def draw_cohort(exp: Experiment, manifest: Manifest, trials: pd.DataFrame) -> Cohort:
    """``exp.scoring.cohort`` speakers of the population that appear in no trial, and
    ``utterances_per_speaker`` utterances of each; :class:`TrialError` when too few exist."""
    from interbias.trials.sampler import eligible_utterances

    spec = exp.scoring.cohort
    used = set(trials["enrol_speaker"]) | set(trials["test_speaker"])
    utts, _ = eligible_utterances(exp, manifest)
    by_speaker: dict[str, list[str]] = {}
    for u in utts:
        if u.speaker not in used:
            by_speaker.setdefault(u.speaker, []).append(u.id)
    able = sorted(s for s, ids in by_speaker.items() if len(ids) >= spec.utterances_per_speaker)
    if len(able) < spec.speakers:
        raise TrialError(
            f"{exp.name}: scoring.cohort needs {spec.speakers} speakers with {spec.utterances_per_speaker} "
            f"utterance(s) each that appear in no trial; the corpus has {len(able)} (of {len(used)} trial speakers "
            "and the population's others): lower scoring.cohort.speakers or trials.speakers_per_stratum"
        )
    parts = ("cohort", exp.name, exp.seed, spec.speakers, spec.utterances_per_speaker)
    chosen = sorted(able[i] for i in derive_rng(*parts).permutation(len(able))[: spec.speakers])
    ids: list[str] = []
    for spk in chosen:
        pool = sorted(by_speaker[spk])
        pick = derive_rng(*parts, spk).permutation(len(pool))[: spec.utterances_per_speaker]
        ids += [pool[i] for i in pick]
    info = {"n_speakers": len(chosen), "n_utterances": len(ids), "n_candidate_speakers": len(able), "speakers": chosen}
    return Cohort(tuple(sorted(ids)), tuple(chosen), info)
