"""The speaker-clustered test of a fairness comparison (the default of ``interbias scores fairness``).

Trials of one speaker are correlated (one speaker's voice sits in all of its trials), so a
two-proportion z-test on trial counts, which assumes independent trials, understates the
spread of a group difference. The clustered test keeps the z-test's statistic — the
difference of the two tested proportions, d = x_a/n_a − x_b/n_b, at the common threshold —
and takes its standard error from a **speaker bootstrap**: each replicate redraws the speakers
with replacement within blocks of speakers that occur in the same set of compared groups (so
each group keeps its speaker count), and a trial counts c_s times for a target trial of speaker
s and c_e · c_t times for a non-target trial between e and t (the two-way "pigeonhole"
bootstrap, McCullagh 2000; Owen 2007, which errs on the side of a larger variance for crossed
non-target pairs). Then z = d / SE and p = 2 Φ(−|z|). A comparison whose replicates have no
spread (SE 0), or fewer than half of whose replicates are defined, is not tested and says so.

Replicate draws come from ``derive_rng("fairness-speaker-bootstrap", seed, attribute)``: one
resample per unit × group attribute, shared by its metrics; the same speakers in the same
blocks get the same draws in every unit (and in a score file holding one unit's trials).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import sparse
from scipy.stats import norm

from interbias.utils.budget import check_memory
from interbias.utils.errors import AnalysisError
from interbias.utils.seeding import derive_rng

TESTS = ("speaker", "trial-z")
TEST_LABELS = {
    "speaker": "speaker bootstrap z-test (two-way speaker resampling; trials of one speaker are correlated)",
    "trial-z": "two-proportion z-test on trial counts (assumes independent trials)",
}
DEFAULT_BOOT = 1000


def check_test(test: str) -> str:
    if test not in TESTS:
        raise AnalysisError(f"fairness test {test!r}: valid: {', '.join(TESTS)}")
    return test


def tested_indicators(pred: np.ndarray, actual: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Per trial, (counts toward x, counts toward n) of the proportion a metric's test compares
    (the same counts as :func:`interbias.analysis.groups.fairness_stats.metric_counts`)."""
    if name == "statistical_parity":
        return pred, np.ones(len(pred), bool)
    if name == "equal_opportunity":
        return pred & actual, actual
    if name == "equality_of_odds":
        return pred & ~actual, ~actual
    if name == "predictive_parity":
        return pred & actual, pred
    if name == "treatment_equality":
        return pred & ~actual, (pred & ~actual) | (~pred & actual)
    raise AnalysisError(f"unknown fairness metric {name!r}")


@dataclass
class SpeakerBootstrap:
    """Speaker-resampled totals of per-trial indicators for one unit × group attribute."""

    pair: np.ndarray  #: per trial, the index of its (enrol, test) speaker pair
    pairs: np.ndarray  #: n_pairs × 2 speaker indices (enrol, test)
    counts: np.ndarray  #: B × n_speakers resample counts

    @classmethod
    def draw(
        cls, enrol: np.ndarray, test: np.ndarray, groups: np.ndarray, *, n_boot: int, rng: np.random.Generator
    ) -> SpeakerBootstrap:
        """Resample the speakers of ``enrol``/``test`` (one value per trial) ``n_boot`` times,
        stratified by the set of ``groups`` each speaker occurs in."""
        enrol, test = np.asarray(enrol).astype(str), np.asarray(test).astype(str)
        codes, speakers = pd.factorize(np.concatenate([enrol, test]), sort=True)
        e, t = codes[: len(enrol)], codes[len(enrol) :]
        each = f"a count per speaker and a draw per speaker, 2 × {len(speakers):,} × 8 bytes"
        check_memory("--bootstrap", n_boot, 16 * len(speakers), each, error=AnalysisError)
        keys, pair = np.unique(e.astype(np.int64) * len(speakers) + t, return_inverse=True)
        pairs = np.stack([keys // len(speakers), keys % len(speakers)], axis=1)
        names, g = np.unique(np.asarray(groups).astype(str), return_inverse=True)
        seen = np.unique(np.concatenate([e, t]).astype(np.int64) * len(names) + np.concatenate([g, g]))
        member: list[list[str]] = [[] for _ in speakers]
        for s_g in seen.tolist():  # speaker-major, groups in name order
            member[s_g // len(names)].append(str(names[s_g % len(names)]))
        blocks: dict[tuple[str, ...], list[int]] = {}
        for s, gs in enumerate(member):
            blocks.setdefault(tuple(gs), []).append(s)
        counts = np.zeros((n_boot, len(speakers)), dtype=np.float64)
        for key in sorted(blocks):
            block = np.asarray(blocks[key])
            n = len(block)
            draws = rng.integers(0, n, size=(n_boot, n)) + n * np.arange(n_boot)[:, None]
            counts[:, block] = np.bincount(draws.ravel(), minlength=n * n_boot).reshape(n_boot, n)
        return cls(pair=np.asarray(pair).ravel(), pairs=pairs, counts=counts)

    def n_speakers(self, trials: np.ndarray) -> int:
        """Distinct speakers (enrol or test) of the trials selected by the boolean mask ``trials``."""
        return len(np.unique(self.pairs[np.unique(self.pair[np.asarray(trials, bool)])].ravel()))

    @property
    def weights(self) -> np.ndarray:
        """``B × n_pairs`` multiplicities (:meth:`pair_weights` of every pair; made on each read)."""
        return self.pair_weights(np.arange(len(self.pairs)))

    def pair_weights(self, idx: np.ndarray) -> np.ndarray:
        """``B × len(idx)`` multiplicities of the pairs ``idx``: c_e·c_t for a pair of two
        speakers, c_s for a speaker with itself."""
        pe, pt = self.pairs[idx, 0], self.pairs[idx, 1]
        return np.where(pe == pt, self.counts[:, pe], self.counts[:, pe] * self.counts[:, pt])

    def totals(self, values: np.ndarray) -> np.ndarray:
        """Per replicate, the resampled total of a per-trial value, ``weights @ per-pair sums``,
        computed as the quadratic form Σ_e,t c_e·M_et·c_t (+ Σ_s c_s·D_s for same-speaker pairs)
        with M the sparse speaker × speaker matrix of per-pair sums: O(B · (pairs + speakers))
        time, no ``B × n_pairs`` matrix. Exact (order-free) for integer values such as indicators."""
        n_spk = self.counts.shape[1]
        per_pair = np.bincount(self.pair, weights=np.asarray(values, np.float64), minlength=len(self.pairs))
        pe, pt = self.pairs[:, 0], self.pairs[:, 1]
        same = pe == pt
        m = sparse.csr_matrix((per_pair[~same], (pe[~same], pt[~same])), shape=(n_spk, n_spk))
        diag = np.bincount(pe[same], weights=per_pair[same], minlength=n_spk)
        c = self.counts
        return np.einsum("be,eb->b", c, m @ c.T) + c @ diag


#: Fewest distinct speakers a group's trials must hold for the speaker test: with fewer, the
#: bootstrap's spread (at most (n − 1)/n of the sampling variance, and from a handful of
#: distinct resamples) is too small, and a z-test on it declares gaps that are noise.
MIN_SPEAKERS = 5


def clustered_z(
    boot: SpeakerBootstrap, a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]
) -> tuple[float, float, float, str]:
    """(z, p, SE, note) of x_a/n_a − x_b/n_b; ``a``/``b``: per-trial (x, n) indicators of each
    group; not tested when a group's trials hold fewer than :data:`MIN_SPEAKERS` speakers."""
    (xa, na), (xb, nb) = a, b
    if na.sum() == 0 or nb.sum() == 0:
        return math.nan, math.nan, math.nan, "not tested: a group has an empty denominator"
    fewest = min(boot.n_speakers(na > 0), boot.n_speakers(nb > 0))
    if fewest < MIN_SPEAKERS:
        return (
            math.nan,
            math.nan,
            math.nan,
            f"not tested: a group's trials hold {fewest} speaker(s), fewer than {MIN_SPEAKERS} (the speaker "
            "bootstrap cannot estimate the spread)",
        )
    d = xa.sum() / na.sum() - xb.sum() / nb.sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        reps = boot.totals(xa) / boot.totals(na) - boot.totals(xb) / boot.totals(nb)
    ok = np.isfinite(reps)
    if ok.sum() < max(2, len(reps) / 2):
        return math.nan, math.nan, math.nan, f"not tested: {int(ok.sum())} of {len(reps)} replicates defined"
    se = float(np.std(reps[ok], ddof=1))
    if not se > 0:
        return math.nan, math.nan, se, "not tested: the speaker bootstrap has no spread (SE 0)"
    z = float(d / se)
    return z, float(2 * norm.sf(abs(z))), se, ""


def group_speakers(speakers: tuple | None, glabels: np.ndarray, groups: list[str], bona: np.ndarray) -> dict[str, int]:
    """Distinct speakers (enrolment or test) in each group's bona fide trials; empty when the
    trials' speakers are not known."""
    if speakers is None:
        return {}
    enrol, test = (np.asarray(x).astype(str) for x in speakers)
    masks = {g: (glabels == g) & bona for g in groups}
    return {g: len(set(enrol[m]) | set(test[m])) for g, m in masks.items()}


def too_few_speakers(counts: dict[str, int], a: str, b: str) -> str:
    """The note of a comparison the trial z-test must not make: a group with fewer than
    :data:`MIN_SPEAKERS` speakers (its trials are a handful of voices, not independent draws);
    ``""`` when both groups have enough, or when speakers are not known."""
    if not counts:
        return ""
    fewest = min(counts.get(a, 0), counts.get(b, 0))
    if fewest >= MIN_SPEAKERS:
        return ""
    return (
        f"not tested: too few speakers ({a} {counts.get(a, 0)}, {b} {counts.get(b, 0)}; the speaker test's "
        f"minimum is {MIN_SPEAKERS}): trials of so few voices are not independent"
    )


def unit_rng(seed: int, attr: str) -> np.random.Generator:
    return derive_rng("fairness-speaker-bootstrap", seed, attr)
