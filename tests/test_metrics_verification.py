"""Metrics against independent references: scikit-learn ROC + brentq (interpolated EER),
sklearn ROC argmin (legacy EER), brute-force threshold sweep (minDCF), roc_auc_score."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.interpolate import interp1d
from scipy.optimize import brentq
from sklearn.metrics import roc_auc_score, roc_curve

from interbias.metrics import verification as M
from interbias.utils.errors import MetricError
from interbias.utils.seeding import derive_rng


def ref_eer(s: np.ndarray, lab: np.ndarray) -> float:
    fpr, tpr, _ = roc_curve(lab, s, drop_intermediate=False)
    return float(brentq(lambda x: 1.0 - x - interp1d(fpr, tpr)(x), 0.0, 1.0))


def ref_eer_legacy(s: np.ndarray, lab: np.ndarray) -> float:
    fpr, tpr, _ = roc_curve(lab, s, drop_intermediate=False)
    fnr = 1 - tpr
    i = np.nanargmin(np.abs(fnr - fpr))
    return float((fpr[i] + fnr[i]) / 2)


def ref_min_dcf(s: np.ndarray, lab: np.ndarray, p: float = 0.01) -> float:
    costs = []
    for t in np.r_[np.unique(s), np.inf]:
        p_miss = np.mean(s[lab == 1] < t)
        p_fa = np.mean(s[lab == 0] >= t)
        costs.append(p * p_miss + (1 - p) * p_fa)
    return min(costs) / min(p, 1 - p)


def cases(n: int = 200):
    for i in range(n):
        rng = derive_rng("metric-test", i)
        nt = int(rng.integers(5, 60))
        nn = int(rng.integers(5, 120))
        decimals = int(rng.integers(0, 3))  # coarse rounding makes many ties
        s = np.round(np.r_[rng.normal(1.0, 1.0, nt), rng.normal(0.0, 1.0, nn)], decimals)
        lab = np.r_[np.ones(nt), np.zeros(nn)].astype(int)
        yield s, lab


@pytest.mark.parametrize("s,lab", list(cases()))
def test_all_metrics_match_references(s: np.ndarray, lab: np.ndarray) -> None:
    summ = M.summarize(s, lab)
    assert summ["eer"] == pytest.approx(ref_eer(s, lab), abs=1e-9)
    assert summ["eer_legacy"] == pytest.approx(ref_eer_legacy(s, lab), abs=1e-12)
    assert summ["min_dcf"] == pytest.approx(ref_min_dcf(s, lab), abs=1e-12)
    assert summ["auc"] == pytest.approx(roc_auc_score(lab, s), abs=1e-12)
    assert summ.n_target == int(lab.sum()) and summ.n_nontarget == int((1 - lab).sum())


def test_five_targets_hand_computed() -> None:
    s = np.array([0.9, 0.8, 0.4, 0.35, 0.1, 0.7, 0.3, 0.2, 0.15, 0.05])
    lab = np.array([1, 1, 1, 1, 1, 0, 0, 0, 0, 0])
    # thresholds ascending; at t=0.35: FNR=1/5 (0.1), FPR=1/5 (0.7) -> exact crossing 0.2
    assert M.eer(s, lab) == pytest.approx(0.2)
    assert M.eer_legacy(s, lab) == pytest.approx(0.2)
    assert M.auc(s, lab) == pytest.approx(19 / 25)  # 5+5+4+4+1 winning pairs


def test_all_scores_tied_is_chance() -> None:
    s = np.zeros(10)
    lab = np.array([1] * 5 + [0] * 5)
    assert M.eer(s, lab) == pytest.approx(0.5)
    assert M.auc(s, lab) == pytest.approx(0.5)
    assert M.min_dcf(s, lab) == pytest.approx(1.0)


def test_perfect_and_reversed_separation() -> None:
    lab = np.array([1, 1, 1, 0, 0, 0])
    assert M.eer(np.array([3, 4, 5, 0, 1, 2.0]), lab) == 0.0
    assert M.min_dcf(np.array([3, 4, 5, 0, 1, 2.0]), lab) == 0.0
    # reversed orientation is not flipped: EER 1, AUC 0
    assert M.eer(np.array([0, 1, 2, 3, 4, 5.0]), lab) == pytest.approx(1.0)
    assert M.auc(np.array([0, 1, 2, 3, 4, 5.0]), lab) == 0.0


def test_invariance_to_monotone_transform() -> None:
    rng = derive_rng("monotone")
    s = rng.normal(size=300)
    lab = (rng.random(300) < 0.4).astype(int)
    a, b = M.summarize(s, lab), M.summarize(np.exp(3 * s + 1), lab)
    assert a.values == pytest.approx(b.values)


def test_eer_threshold_reproduces_rates() -> None:
    s = np.arange(10, dtype=float)
    lab = np.array([0, 0, 0, 0, 1, 0, 1, 1, 1, 1])
    summ = M.summarize(s, lab)
    fpr, fnr = M.rates_at(s, lab, summ.eer_threshold)
    assert summ["eer"] == pytest.approx(0.2)
    assert fpr == pytest.approx(0.2) and fnr == pytest.approx(0.2)


@pytest.mark.parametrize(
    "scores,labels,message",
    [
        ([0.1, 0.2], [1, 1], "no non-target trials: the metric is undefined"),
        ([0.1, 0.2], [0, 0], "no target trials: the metric is undefined"),
        ([0.1, float("nan")], [1, 0], "1 score(s) are NaN or infinite"),
        ([0.1, 0.2, 0.3], [1, 0], "scores (3) and labels (2) differ in length"),
        ([0.1, 0.2], [1, 2], "labels must be 1 (target) or 0 (non-target)"),
    ],
)
def test_invalid_inputs_are_named(scores, labels, message) -> None:
    with pytest.raises(MetricError) as exc:
        M.summarize(scores, labels)
    assert str(exc.value) == message


def test_min_dcf_parameters_validated() -> None:
    with pytest.raises(MetricError, match=r"p_target must be in \(0, 1\)"):
        M.min_dcf([0.1, 0.2], [1, 0], p_target=1.0)


def _full_array_reference(p: M.ThresholdSweep) -> tuple[float, float, float]:
    """EER, its threshold and the legacy EER from whole rate arrays (the earlier implementation)."""
    d = p.fnr - p.fpr
    k = int(np.argmax(d >= 0))
    if d[k] == 0 or k == 0:
        e, thr = float(p.fnr[k]), float(p.thresholds[k])
    else:
        a = -d[k - 1] / (d[k] - d[k - 1])
        e = float(p.fnr[k - 1] + a * (p.fnr[k] - p.fnr[k - 1]))
        lo, hi = p.thresholds[k - 1], p.thresholds[k]
        thr = float(hi if not np.isfinite(hi) else lo + a * (hi - lo))
    gap = np.abs(p.fpr - p.fnr)
    j = len(gap) - 1 - int(np.argmin(gap[::-1]))
    return e, thr, float((p.fpr[j] + p.fnr[j]) / 2)


@pytest.mark.parametrize("s,lab", list(cases(120)))
def test_binary_search_and_lazy_rates_equal_whole_arrays_bit_for_bit(s: np.ndarray, lab: np.ndarray) -> None:
    p = M.threshold_sweep(s, lab)
    assert np.all(np.diff(p.fnr - p.fpr) > 0)  # strictly increasing: what the search relies on
    assert [p.fnr_at(k) for k in range(len(p.t_lo))] == p.fnr.tolist()
    assert [p.fpr_at(k) for k in range(len(p.t_lo))] == p.fpr.tolist()
    e, thr, legacy = _full_array_reference(p)
    assert M.eer_from_sweep(p) == (e, thr)
    assert M.eer_legacy_from_sweep(p) == legacy
    assert p.tgt_at.sum() == p.n_target and p.non_at.sum() == p.n_nontarget


def test_min_dcf_chunks_and_auc_float_path_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = derive_rng("metric-chunks")
    s = np.round(np.r_[rng.normal(2, 1, 3000), rng.normal(0, 1, 5000)], 2)
    lab = np.r_[np.ones(3000), np.zeros(5000)].astype(int)
    p = M.threshold_sweep(s, lab)
    whole = float((p.fnr * 0.01 + p.fpr * 0.99).min() / 0.01)
    exact_auc = M.auc_from_sweep(p)
    monkeypatch.setattr(M, "_CHUNK", 7)
    monkeypatch.setattr(M, "_EXACT_PAIRS", 0)  # the float64 sum used for huge inputs
    assert M.min_dcf_from_sweep(p) == pytest.approx(whole, abs=1e-15)
    assert M.auc_from_sweep(p) == exact_auc == pytest.approx(roc_auc_score(lab, s), abs=1e-12)
