"""Speaker-cluster (and, for comparison, trial-level) bootstrap weights for a trial list.

Speaker unit (the default). Speakers are resampled with replacement once per replicate, and the
same resample is applied to every cell and every model, so the four terms of a contrast and the
two groups of a gap move together (they share speakers and trials). Resampling is stratified:
speakers are grouped into blocks by the set of strata whose trials they occur in (in E16: one
block per gender), and each block of ``n`` speakers is redrawn as ``n`` draws with replacement,
so every replicate keeps each stratum's speaker count. A speaker drawn ``c`` times has count
``c`` (0 when not drawn). A trial's multiplicity is the product of the counts of its distinct
speakers: a target trial of speaker ``s`` appears ``c_s`` times, a non-target trial between
``e`` and ``t`` appears ``c_e · c_t`` times (every copy of ``e`` meets every copy of ``t``).

Trial unit. Within each stratum × label, trials are redrawn with replacement (same number), and
every cell of that stratum uses the same redraw. It treats trials as independent, which they
are not when speakers repeat: it is there to show how much that understates uncertainty.

Non-target unit (internal: the variance correction of :mod:`interbias.analysis.effects`). Target
trials keep weight 1; the distinct unordered speaker pairs {e, t} of the non-target trials are
redrawn with replacement (within groups of pairs whose speakers come from the same two blocks,
each group keeping its size), and every non-target trial of a pair takes its pair's count, the
same in every cell and stratum. Its variance measures the pair-level (non-target residual) part
of an effect's variance, which the speaker unit counts about three times (Owen 2007).

Replicate ``b`` draws from ``derive_rng("bootstrap", unit, seed, b)`` (for the trial units also
the stratum and label), so each replicate is reproducible on its own and independent of order.
An interval needs at least ``MIN_BOOT`` replicates (:func:`check_replicates`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from interbias.utils.budget import check_memory
from interbias.utils.errors import AnalysisError
from interbias.utils.seeding import derive_rng, derive_seed

Unit = Literal["speaker", "trial", "nontarget"]
#: Units a user chooses (``--unit``); ``nontarget`` is the correction's own.
UNITS: tuple[str, ...] = ("speaker", "trial")
#: Fewest replicates from which an interval, SE or p-value is computed (``--bootstrap``).
MIN_BOOT = 50
#: The same for the corrected design (:mod:`interbias.analysis.effects`): with fewer, the noise of
#: its difference of variances makes p-values at Holm's levels too small.
MIN_BOOT_CORRECTED = 200
SPEAKER_RULE = (
    "speakers resampled with replacement within blocks of speakers sharing the same strata; "
    "trial multiplicity = product of its distinct speakers' counts (target: c_s; non-target: c_e*c_t)"
)
NONTARGET_RULE = (
    "distinct speaker pairs of the non-target trials resampled with replacement within block pairs; target trials fixed"
)
TRIAL_RULE = "trials resampled with replacement within stratum x label (ignores speaker clustering)"


@dataclass(frozen=True)
class TrialDesign:
    """A trial list as arrays: per trial its id, stratum, label and speaker indices."""

    trial_id: np.ndarray
    stratum: np.ndarray
    label: np.ndarray
    enrol: np.ndarray
    test: np.ndarray
    speakers: tuple[str, ...]

    @classmethod
    def from_frame(cls, trials: pd.DataFrame) -> TrialDesign:
        need = ["trial_id", "stratum", "label", "enrol_speaker", "test_speaker"]
        missing = [c for c in need if c not in trials.columns]
        if missing:
            raise AnalysisError(f"trial list lacks column(s) {', '.join(missing)}")
        spk = pd.concat([trials["enrol_speaker"], trials["test_speaker"]]).astype(str).to_numpy(object)
        names, index = np.unique(spk, return_inverse=True)  # sorted as Python sorts str
        ids = trials["trial_id"].to_numpy(np.int64)
        if len(np.unique(ids)) != len(ids):
            raise AnalysisError("trial list has repeated trial_id values")
        return cls(
            trial_id=ids,
            stratum=trials["stratum"].astype(str).to_numpy(),
            label=trials["label"].to_numpy().astype(bool),
            enrol=index[: len(ids)].astype(np.int64),
            test=index[len(ids) :].astype(np.int64),
            speakers=tuple(str(x) for x in names),
        )

    def rows(self, trial_ids: np.ndarray) -> np.ndarray:
        """Positions of ``trial_ids`` in this design (an unknown id is an error)."""
        ids = np.asarray(trial_ids, dtype=np.int64)
        order = np.argsort(self.trial_id, kind="stable")
        pos = np.searchsorted(self.trial_id, ids, sorter=order)
        found = order[np.minimum(pos, max(0, len(order) - 1))] if len(order) else pos
        bad = np.flatnonzero((pos >= len(order)) | (self.trial_id[found] != ids) if len(order) else pos == 0)
        if len(bad):
            raise AnalysisError(f"scores name trial_id {int(ids[bad[0]])}, which is not in the trial list")
        return found.astype(np.int64)

    def blocks(self) -> list[np.ndarray]:
        """Speaker indices grouped by the set of strata they occur in (sorted, deterministic)."""
        names, code = np.unique(self.stratum, return_inverse=True)
        both = np.unique(np.r_[self.enrol, self.test] * len(names) + np.r_[code, code])
        member: dict[int, set[str]] = {}
        for s, st in zip((both // max(1, len(names))).tolist(), (both % max(1, len(names))).tolist(), strict=True):
            member.setdefault(s, set()).add(str(names[st]))
        groups: dict[tuple[str, ...], list[int]] = {}
        for s in sorted(member):
            groups.setdefault(tuple(sorted(member[s])), []).append(s)
        return [np.array(groups[k], dtype=np.int64) for k in sorted(groups)]


class Resampler:
    """Bootstrap trial weights for a :class:`TrialDesign`, computed lazily per set of trials."""

    def __init__(self, design: TrialDesign, *, n_boot: int, seed: int = 0, unit: str = "speaker") -> None:
        if unit not in (*UNITS, "nontarget"):
            raise AnalysisError(f"bootstrap unit {unit!r}: valid: {', '.join(UNITS)}")
        if n_boot < 1:
            raise AnalysisError(f"--bootstrap must be a positive number of replicates, got {n_boot}")
        n_speakers, n_trials = len(design.speakers), len(design.label)
        each = f"a count per speaker and a weight per trial, ({n_speakers:,} + {n_trials:,}) × 8 bytes"
        check_memory("--bootstrap", n_boot, 8 * (n_speakers + n_trials), each, error=AnalysisError)
        self.design, self.n_boot, self.seed, self.unit = design, n_boot, seed, unit
        self._speaker_counts: np.ndarray | None = None
        self._trial_counts: dict[tuple[str, bool], np.ndarray] = {}
        self._pairs: tuple[np.ndarray, np.ndarray] | None = None
        self._speaker_major: np.ndarray | None = None

    @property
    def rule(self) -> str:
        return {"speaker": SPEAKER_RULE, "trial": TRIAL_RULE}.get(self.unit, NONTARGET_RULE)

    def replicate_seeds(self) -> list[int]:
        """The seed of each replicate (speaker unit), derived from the master seed."""
        return [derive_seed("bootstrap", self.unit, self.seed, b) for b in range(self.n_boot)]

    def speaker_counts(self) -> np.ndarray:
        """``B × n_speakers`` resample counts (each block keeps its size)."""
        if self._speaker_counts is None:
            blocks = self.design.blocks()
            counts = np.zeros((self.n_boot, len(self.design.speakers)), dtype=np.int64)
            for b in range(self.n_boot):
                rng = derive_rng("bootstrap", self.unit, self.seed, b)
                for blk in blocks:
                    drawn = blk[rng.integers(0, len(blk), size=len(blk))]
                    counts[b] += np.bincount(drawn, minlength=counts.shape[1])
            self._speaker_counts = counts
        return self._speaker_counts

    def pair_counts(self) -> tuple[np.ndarray, np.ndarray]:
        """(pair index of every design trial (−1 for targets), ``B × n_pairs`` resample counts, held
        in the narrowest integer type; a view of :meth:`_pairs_by_trial`'s matrix)."""
        pair, counts = self._pairs_by_trial()
        return pair, counts.T

    def _pairs_by_trial(self) -> tuple[np.ndarray, np.ndarray]:
        """(pair index of every design trial, ``n_pairs × B`` counts: each pair's counts one row)."""
        if self._pairs is None:
            d = self.design
            block = np.zeros(len(d.speakers), dtype=np.int64)
            for i, blk in enumerate(d.blocks()):
                block[blk] = i
            lo, hi = np.minimum(d.enrol, d.test), np.maximum(d.enrol, d.test)
            non = ~d.label
            keys, inv = np.unique(lo[non] * len(d.speakers) + hi[non], return_inverse=True)
            pair = np.full(len(d.label), -1, dtype=np.int64)
            pair[non] = inv
            a, b = block[keys // len(d.speakers)], block[keys % len(d.speakers)]
            group = np.minimum(a, b) * len(d.speakers) + np.maximum(a, b)
            counts = np.zeros((len(keys), self.n_boot), dtype=np.int32)  # a count <= its group's size
            for g in np.unique(group):
                idx = np.flatnonzero(group == g)
                for r in range(self.n_boot):
                    rng = derive_rng("bootstrap", self.unit, self.seed, r, int(g))
                    counts[idx, r] = np.bincount(rng.integers(0, len(idx), size=len(idx)), minlength=len(idx))
            self._pairs = (pair, _narrow(counts))
        return self._pairs

    def _speakers_by_trial(self) -> np.ndarray:
        """``n_speakers × B`` resample counts (speaker major, narrowed so that a product of two fits)."""
        if self._speaker_major is None:
            self._speaker_major = _narrow(self.speaker_counts().T, square=True)
        return self._speaker_major

    def _trial_counts_for(self, stratum: str, label: bool) -> np.ndarray:
        key = (stratum, label)
        if key not in self._trial_counts:
            idx = np.flatnonzero((self.design.stratum == stratum) & (self.design.label == label))
            counts = np.zeros((self.n_boot, len(idx)), dtype=np.int64)
            for b in range(self.n_boot):
                rng = derive_rng("bootstrap", self.unit, self.seed, b, stratum, int(label))
                counts[b] = np.bincount(rng.integers(0, len(idx), size=len(idx)), minlength=len(idx))
            self._trial_counts[key] = counts
        return self._trial_counts[key]

    def weights(self, rows: np.ndarray) -> np.ndarray:
        """``B × len(rows)`` multiplicities of the design's trials at positions ``rows``."""
        d = self.design
        if self.unit == "speaker":
            c = self.speaker_counts()
            e, t = d.enrol[rows], d.test[rows]
            return np.where(e == t, c[:, e], c[:, e] * c[:, t]).astype(np.float64)
        if self.unit == "nontarget":
            pair, counts = self.pair_counts()
            out = np.ones((self.n_boot, len(rows)))
            non = ~d.label[rows]
            out[:, non] = counts[:, pair[rows[non]]]
            return out
        return self._trial_unit(rows)

    def weights_by_trial(self, rows: np.ndarray, reps: slice) -> np.ndarray:
        """The multiplicities of :meth:`weights` for the replicates ``reps`` only, trial major
        (``len(rows) × replicates``, equal to ``weights(rows)[reps].T``) in the narrowest integer
        type that holds them: a block of replicates at a time, never the whole ``B × len(rows)``
        matrix, each trial's counts read as one contiguous row."""
        d = self.design
        if self.unit == "speaker":
            c = self._speakers_by_trial()
            e, t = d.enrol[rows], d.test[rows]
            out = c[e, reps]
            non = np.flatnonzero(e != t)
            if len(non):
                out[non] *= c[t[non], reps]
            return out
        if self.unit == "nontarget":
            pair, c = self._pairs_by_trial()
            out = np.ones((len(rows), len(range(self.n_boot)[reps])), dtype=c.dtype)
            non = ~d.label[rows]
            out[non] = c[pair[rows[non]], reps]
            return out
        return _narrow(self._trial_unit(rows, reps).T.astype(np.int64))

    def _trial_unit(self, rows: np.ndarray, reps: slice = slice(None)) -> np.ndarray:
        d = self.design
        out = np.zeros((len(range(self.n_boot)[reps]), len(rows)))
        for st in np.unique(d.stratum[rows]):
            for lab in (False, True):
                pool = np.flatnonzero((d.stratum == st) & (d.label == lab))
                sel = np.flatnonzero((d.stratum[rows] == st) & (d.label[rows] == lab))
                if len(sel) == 0:
                    continue
                pos = np.searchsorted(pool, rows[sel])
                out[:, sel] = self._trial_counts_for(st, lab)[reps][:, pos]
        return out


def _narrow(counts: np.ndarray, *, square: bool = False) -> np.ndarray:
    """``counts`` (non-negative integers) as a contiguous int16, int32 or int64 array, the
    narrowest in which every count (``square``: every product of two counts) fits."""
    top = int(counts.max(initial=0)) ** (2 if square else 1)
    kind = np.int16 if top < 2**15 else np.int32 if top < 2**31 else np.int64
    return np.ascontiguousarray(counts, dtype=kind)


def check_replicates(n_boot: int, design: str = "speaker") -> int:
    """``n_boot`` itself when it is 0 (no bootstrap) or at least ``MIN_BOOT`` (``MIN_BOOT_CORRECTED``
    for the corrected design, whose SE is a difference of two bootstrap variances); else an error."""
    need = MIN_BOOT_CORRECTED if design == "corrected" else MIN_BOOT
    if n_boot != 0 and not n_boot >= need:
        what = "the corrected design needs" if design == "corrected" else "an interval needs"
        raise AnalysisError(
            f"--bootstrap {n_boot}: {what} at least {need} replicates (1000 is usual); 0 skips the bootstrap"
        )
    return n_boot


def percentile_ci(replicates: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lower, upper, n_valid) percentile interval over the last axis, ignoring NaN replicates
    (NaN bounds when no replicate is valid)."""
    if not 0 < level < 1:
        raise AnalysisError(f"confidence level must be in (0, 1), got {level}")
    reps = np.asarray(replicates, dtype=np.float64)
    if reps.size == 0:  # no statistic at all (e.g. no contrast in a one-factor experiment)
        empty = np.zeros(reps.shape[:-1])
        return empty, empty.copy(), empty.astype(np.int64)
    alpha = (1 - level) / 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows give NaN bounds
        q = np.nanquantile(reps, [alpha, 1 - alpha], axis=-1)
    return q[0], q[1], np.isfinite(reps).sum(axis=-1)


def bootstrap_bias(estimate: np.ndarray | float, replicates: np.ndarray) -> np.ndarray:
    """Bootstrap estimate of bias: mean replicate − estimate (NaN replicates ignored)."""
    reps = np.asarray(replicates, dtype=np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(reps, axis=-1) - np.asarray(estimate, dtype=np.float64)


def reflected_ci(
    estimate: np.ndarray | float, replicates: np.ndarray, level: float = 0.95, bounds: tuple[float, float] = (0.0, 1.0)
) -> tuple[np.ndarray, np.ndarray]:
    """Reflected (basic) interval centred on the estimate: with c the median replicate and
    q_lo, q_hi the percentile bounds, [θ̂ − (q_hi − c), θ̂ + (c − q_lo)], clipped to ``bounds``.
    It always contains θ̂ (q_lo ≤ c ≤ q_hi), unlike the percentile interval when the replicates
    are biased (minDCF: a minimum over thresholds on few non-target trials)."""
    lo, hi, _ = percentile_ci(replicates, level)
    reps = np.asarray(replicates, dtype=np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        c = np.nanmedian(reps, axis=-1) if reps.size else np.zeros(reps.shape[:-1])
    est = np.asarray(estimate, dtype=np.float64)
    return np.clip(est - (hi - c), *bounds), np.clip(est + (c - lo), *bounds)
