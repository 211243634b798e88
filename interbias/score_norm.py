"""Score normalisation over a speaker-disjoint cohort: S-norm and adaptive S-norm (AS-norm).

For a trial (e, t) with cosine score s and unit-norm embeddings, each side is scored against
the cohort's unit-norm embeddings; μ_x and σ_x are the mean and (population, ddof 0) standard
deviation of the ``top_k`` highest of those cohort scores (AS-norm), or of all of them (S-norm):

    s' = ½·[(s − μ_e) / σ_e + (s − μ_t) / σ_t]

— the formula of WeSpeaker's ``wespeaker/bin/score_norm.py`` (without its optional mean-vector
subtraction). The cohort: ``scoring.cohort.speakers`` speakers of the experiment's population
that appear in no trial (dev or eval), drawn by a derived seed, ``utterances_per_speaker``
utterances each (also drawn by a derived seed).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from interbias.errors import MetricError, TrialError
from interbias.seeding import derive_rng

if TYPE_CHECKING:
    import pandas as pd

    from interbias.decision_spec import ScoringSpec
    from interbias.experiments import Experiment
    from interbias.manifest import Manifest


def cohort_stats(emb: np.ndarray, cohort: np.ndarray, top_k: int | None) -> tuple[np.ndarray, np.ndarray]:
    """(μ, σ) per row of ``emb``: mean and population standard deviation of its ``top_k``
    highest cosine scores against ``cohort`` (``None``: all of them). Rows are L2-normalised
    here; a σ of 0 (all cohort scores equal) is an error."""
    e = np.asarray(emb, dtype=np.float64)
    c = np.asarray(cohort, dtype=np.float64)
    if len(c) < 2:
        raise MetricError(f"score normalisation needs at least 2 cohort embeddings, got {len(c)}")
    k = len(c) if top_k is None else top_k
    if not 2 <= k <= len(c):
        raise MetricError(f"scoring.top_k {k} exceeds the {len(c)} cohort embeddings")
    e = e / np.linalg.norm(e, axis=1, keepdims=True)
    c = c / np.linalg.norm(c, axis=1, keepdims=True)
    sims = e @ c.T
    top = -np.sort(-sims, axis=1)[:, :k] if k < len(c) else sims
    mu, sd = top.mean(axis=1), top.std(axis=1)
    if (sd == 0).any():
        raise MetricError(f"{int((sd == 0).sum())} embedding(s) score identically against the whole cohort top-k")
    return mu, sd


def normalise(scores: np.ndarray, mu_e: np.ndarray, sd_e: np.ndarray, mu_t: np.ndarray, sd_t: np.ndarray) -> np.ndarray:
    """s' = ½·[(s − μ_e)/σ_e + (s − μ_t)/σ_t], element-wise per trial."""
    return 0.5 * ((scores - mu_e) / sd_e + (scores - mu_t) / sd_t)


def norm_top_k(spec: ScoringSpec) -> int | None:
    """The top-k of ``spec``: ``None`` (whole cohort) for s-norm."""
    return None if spec.norm == "s-norm" else spec.top_k


def norm_label(model: str, spec: ScoringSpec) -> str:
    """The results ``model`` of normalised scores: ``CAM++ +as-norm``."""
    return f"{model} +{spec.norm}"


@dataclass(frozen=True)
class Cohort:
    """The drawn cohort: utterance ids (sorted), their speakers, and how it was drawn."""

    ids: tuple[str, ...]
    speakers: tuple[str, ...]
    info: dict[str, Any] = field(default_factory=dict)


def draw_cohort(exp: Experiment, manifest: Manifest, trials: pd.DataFrame) -> Cohort:
    """``exp.scoring.cohort`` speakers of the population that appear in no trial, and
    ``utterances_per_speaker`` utterances of each; :class:`TrialError` when too few exist."""
    from interbias.trials import eligible_utterances

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
