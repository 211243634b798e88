"""The blocked bootstrap (replicate blocks, per-class trial-major weights, chunked running sums)
gives exactly the numbers of the dense ``metric_batch(weights(rows))`` path."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from interbias.analysis.scored_run import CellScores
from interbias.analysis.stats import replicates
from interbias.analysis.stats.bootstrap import Resampler, TrialDesign
from interbias.metrics.llr import CostPoint
from interbias.metrics.weighted import batch_metrics, metric_batch, metric_by_class, sort_cell
from interbias.metrics.weighted_llr import CALIBRATED_METRICS, SharedCalibration
from interbias.utils.errors import AnalysisError
from interbias.utils.seeding import derive_rng


def _design(n: int, n_spk: int, name: str) -> tuple[TrialDesign, np.ndarray]:
    rng = derive_rng("test", "blocked", name)
    label = rng.random(n) < 0.4
    enrol = rng.integers(0, n_spk, n)
    test = np.where(label, enrol, (enrol + 1 + rng.integers(0, n_spk - 1, n)) % n_spk)
    frame = pd.DataFrame(
        {
            "trial_id": np.arange(n) * 5 + 3,
            "stratum": np.where(enrol % 3 == 0, "a", "b"),
            "label": label.astype(int),
            "enrol_speaker": [f"spk{i:03d}" for i in enrol],
            "test_speaker": [f"spk{i:03d}" for i in test],
        }
    )
    scores = np.round(rng.normal(1.5 * label, 1.0), 2)  # rounded: many tied scores
    return TrialDesign.from_frame(frame), scores


@pytest.mark.parametrize("unit", ["speaker", "nontarget", "trial"])
@pytest.mark.parametrize("n", [512, 1777])  # a whole number of 256-trial chunks, and not
def test_blocked_equals_dense(unit: str, n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    design, scores = _design(n, 9 if n == 512 else 60, f"{unit}{n}")
    rows = np.sort(derive_rng("test", "rows", n).choice(n, size=n * 3 // 4, replace=False))
    cell = sort_cell(scores[rows], design.label[rows])
    res = Resampler(design, n_boot=150, seed=4, unit=unit)
    dense = res.weights(rows)
    monkeypatch.setattr(replicates, "BLOCK_WEIGHTS", 7 * len(rows))  # 22 blocks, the last one short
    for metric in batch_metrics():
        want = metric_batch(metric, cell, dense)
        got = replicates.blocked_replicates(metric, cell, rows, res)
        assert np.array_equal(got, want, equal_nan=True), (unit, metric)
    assert np.array_equal(res.weights_by_trial(rows, slice(10, 30)), dense[10:30].T)


def test_empty_class_replicates_are_nan() -> None:
    design, scores = _design(300, 4, "nan")
    rows = np.arange(300)
    cell = sort_cell(scores, design.label)
    w = np.ones((3, 300), dtype=np.int64)
    w[1, design.label] = 0  # replicate 1 has no target weight
    for metric in batch_metrics():
        got = metric_by_class(metric, cell, w[:, rows[cell.target_order]].T, w[:, rows[cell.nontarget_order]].T)
        want = metric_batch(metric, cell, w.astype(float))
        assert np.isnan(got[1]) and np.array_equal(got, want, equal_nan=True)


def test_rows_rejects_unknown_trial_id() -> None:
    design, _ = _design(50, 5, "rows")
    assert design.rows(np.array([8, 3])).tolist() == [1, 0]
    with pytest.raises(AnalysisError, match="trial_id 4"):
        design.rows(np.array([3, 4]))


def test_full_chunks_equal_dense() -> None:
    """Classes large enough for 256-trial chunks (the VoxCeleb-size path)."""
    design, scores = _design(40_000, 300, "large")
    rows = np.arange(40_000)
    cell = sort_cell(scores, design.label)
    res = Resampler(design, n_boot=60, seed=2)
    want = metric_batch("eer", cell, res.weights(rows))
    assert np.array_equal(replicates.blocked_replicates("eer", cell, rows, res), want, equal_nan=True)


@pytest.mark.parametrize("unit", ["speaker", "nontarget", "trial"])
def test_calibrated_blocked_equals_dense(unit: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """cllr, act_dcf and calibration_loss a block of replicates at a time equal the dense
    ``SharedCalibration.batch(weights(rows))``, for blocks of 1, 3, 7 and 64 replicates and one
    block holding all of them."""
    design, scores = _design(3001, 40, f"cal{unit}")
    rows = np.sort(derive_rng("test", "calrows", unit).choice(3001, size=2500, replace=False))
    labels = design.label[rows]
    cs = CellScores(rows, scores[rows], labels, sort_cell(scores[rows], labels), 0)
    cal = SharedCalibration("m", 1.7, -2.1, CostPoint(0.05, 1.0, 1.0))
    res = Resampler(design, n_boot=130, seed=5, unit=unit)
    dense = res.weights(rows)
    for per_block in (1, 3, 7, 64, 130):
        monkeypatch.setattr(replicates, "CALIBRATED_BLOCK_WEIGHTS", per_block * len(rows))
        for metric in CALIBRATED_METRICS:
            want = cal.batch(metric, cs.scores, labels, dense, cs.sorted)
            got = replicates.calibrated_replicates(metric, cs, cal, res)
            assert np.isfinite(want).all() and np.array_equal(got, want), (unit, per_block, metric)


def test_replicate_blocks_cover_every_replicate_once() -> None:
    blocks = list(replicates.replicate_blocks(1000, 23, 5000))
    assert [(b.start, b.stop) for b in blocks] == [(0, 5), (5, 10), (10, 15), (15, 20), (20, 23)]
    assert [(b.start, b.stop) for b in replicates.replicate_blocks(10**7, 3, 5000)] == [(0, 1), (1, 2), (2, 3)]
    assert list(replicates.replicate_blocks(10, 0, 100)) == []
