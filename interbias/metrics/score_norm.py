"""Score normalisation over a speaker-disjoint cohort: S-norm and adaptive S-norm (AS-norm).

For a trial (e, t) with cosine score s and unit-norm embeddings, each side is scored against
the cohort's unit-norm embeddings; μ_x and σ_x are the mean and (population, ddof 0) standard
deviation of the ``top_k`` highest of those cohort scores (AS-norm), or of all of them (S-norm):

    s' = ½·[(s − μ_e) / σ_e + (s − μ_t) / σ_t]

— the formula of WeSpeaker's ``wespeaker/bin/score_norm.py`` (without its optional mean-vector
subtraction). The cohort is drawn by :mod:`interbias.trials.cohort`; the stage that applies this is
:mod:`interbias.run.normalise`.
"""

from __future__ import annotations

import numpy as np

from interbias.utils.errors import MetricError


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
