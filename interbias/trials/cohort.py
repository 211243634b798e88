"""The score-normalisation cohort: ``scoring.cohort.speakers`` speakers of the experiment's
population that appear in no trial (dev or eval), drawn by a derived seed,
``utterances_per_speaker`` utterances each (also drawn by a derived seed). With ``pool:
speaker`` (the default) each speaker is one cohort entry, the mean of its utterances'
embeddings (:func:`speaker_means`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from interbias.utils.errors import TrialError
from interbias.utils.seeding import derive_rng

if TYPE_CHECKING:
    import pandas as pd

    from interbias.corpora.manifest import Manifest
    from interbias.experiments.schema import Experiment


@dataclass(frozen=True)
class Cohort:
    """The drawn cohort: utterance ids (sorted), the chosen speakers (sorted), and how it was
    drawn; ``speaker_of`` maps each utterance id to its speaker."""

    ids: tuple[str, ...]
    speakers: tuple[str, ...]
    info: dict[str, Any] = field(default_factory=dict)
    speaker_of: dict[str, str] = field(default_factory=dict, compare=False)


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
    speaker_of = {u: spk for spk in chosen for u in by_speaker[spk] if u in set(ids)}
    return Cohort(tuple(sorted(ids)), tuple(chosen), info, speaker_of)


def speaker_means(ids: list[str], vectors: np.ndarray, speaker_of: dict[str, str]) -> tuple[list[str], np.ndarray]:
    """(speakers, their mean embeddings): the rows of ``vectors`` (one per id in ``ids``)
    averaged per speaker, speakers in sorted order (WeSpeaker ``tools/vector_mean.py``)."""
    speakers = sorted({speaker_of[u] for u in ids})
    index = {s: i for i, s in enumerate(speakers)}
    rows = np.array([index[speaker_of[u]] for u in ids])
    sums = np.zeros((len(speakers), vectors.shape[1]), dtype=np.float64)
    np.add.at(sums, rows, np.asarray(vectors, dtype=np.float64))
    return speakers, sums / np.bincount(rows, minlength=len(speakers))[:, None]
