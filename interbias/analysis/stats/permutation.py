"""Speaker-level permutation test for a subgroup gap (two cells of one model and condition).

Null hypothesis: the two groups' speakers are exchangeable. The unit is the enrolment speaker:
every trial of the two cells goes with its enrol speaker (a target trial with its speaker, a
non-target trial with the enrolled side), so each trial belongs to exactly one unit and the
observed labelling reproduces the two cells exactly. Each permutation reassigns the group
labels of the units at random, keeping the number of units per group, and recomputes
gap* = M(pseudo-group) − M(pseudo-reference). Two-sided p = (1 + #{|gap*| ≥ |gap|}) /
(1 + P_valid), P_valid counting permutations where both pseudo-groups have target and
non-target trials. Permutation ``p`` draws from ``derive_rng("permutation", seed, p)`` over the
sorted unit list, so every model and condition comparing the same speakers uses the same
permutations. Groups that share enrol speakers (a within-speaker factor) are not exchangeable
units: the test reports not applicable. The test is approximate: a group's non-target trials
share test speakers, so units within a group are not independent and relabelling breaks that
tie; in simulation (tests/test_analysis_coverage.py, 200 null data sets, 20 speakers per group)
the rejection rate at p ≤ 0.05 was 0.08. Read small p-values with the bootstrap intervals.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from interbias.analysis.scored_run import ScoredRun
from interbias.metrics.weighted import metric_batch, sort_cell
from interbias.metrics.weighted_llr import CALIBRATED_METRICS, SharedCalibration
from interbias.utils.budget import check_memory
from interbias.utils.errors import AnalysisError
from interbias.utils.seeding import derive_rng

UNIT = "enrol speaker"
#: Tolerance for "as extreme as observed" (float noise in equal gaps).
_EPS = 1e-12


@dataclass(frozen=True)
class PermutationResult:
    gap: float
    p_value: float
    n_valid: int
    note: str = ""


def permutation_gap_test(
    metric: str,
    ref: tuple[np.ndarray, np.ndarray, np.ndarray],
    group: tuple[np.ndarray, np.ndarray, np.ndarray],
    *,
    n_perm: int,
    seed: int = 0,
    calibration: SharedCalibration | None = None,
) -> PermutationResult:
    """Test the gap M(group) − M(ref); each side is (scores, labels, unit id per trial). A
    calibration metric needs ``calibration`` (kept fixed under every relabelling)."""
    if n_perm < 1:
        raise AnalysisError(f"--permutations must be positive, got {n_perm}")
    s0, l0, u0 = (np.asarray(x) for x in ref)
    s1, l1, u1 = (np.asarray(x) for x in group)
    if set(u0.tolist()) & set(u1.tolist()):
        return PermutationResult(np.nan, np.nan, 0, "not applicable: the groups share speakers")
    scores = np.concatenate([s0, s1]).astype(np.float64)
    labels = np.concatenate([l0, l1]).astype(bool)
    units = np.concatenate([u0, u1]).astype(str)
    names, unit_idx = np.unique(units, return_inverse=True)
    in_group = np.isin(names, np.unique(u1.astype(str)))
    cell = sort_cell(scores, labels)

    def batch(w: np.ndarray) -> np.ndarray:
        if metric not in CALIBRATED_METRICS:
            return metric_batch(metric, cell, w)
        if calibration is None:
            raise AnalysisError(f"the permutation test of {metric} needs the shared calibration")
        return calibration.batch(metric, scores, labels, w, cell)

    each = f"a group weight per trial, {len(scores):,} × 8 bytes"
    check_memory("--permutations", n_perm, 8 * len(scores), each, error=AnalysisError)
    observed = in_group[unit_idx][None, :].astype(float)
    obs = batch(observed)[0] - batch(1.0 - observed)[0]
    assign = np.empty((n_perm, len(names)), dtype=bool)
    for p in range(n_perm):
        assign[p] = in_group[derive_rng("permutation", seed, p).permutation(len(names))]
    member = assign[:, unit_idx].astype(float)
    gaps = batch(member) - batch(1.0 - member)
    valid = np.isfinite(gaps)
    extreme = int((np.abs(gaps[valid]) >= abs(obs) - _EPS).sum())
    n_valid = int(valid.sum())
    return PermutationResult(float(obs), (1 + extreme) / (1 + n_valid), n_valid)


@dataclass
class RunPermutations:
    """Permutation tests on the cells of one run directory (units: enrol speakers)."""

    run: ScoredRun
    metric: str
    n_perm: int
    seed: int = 0

    def test(self, model: str, ref_cell: str, group_cell: str) -> PermutationResult:
        design = self.run.design()
        sides = []
        for cell in (ref_cell, group_cell):
            cs = self.run.cell(model, cell)
            units = np.array(design.speakers, dtype=object)[design.enrol[cs.rows]]
            sides.append((cs.scores, cs.labels, units))
        cal = self.run.calibration(model) if self.metric in CALIBRATED_METRICS else None
        return permutation_gap_test(
            self.metric, sides[0], sides[1], n_perm=self.n_perm, seed=self.seed, calibration=cal
        )
