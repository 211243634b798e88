"""Calibration metrics against independent references: Cllr by its direct per-trial formula,
minCllr through scikit-learn's IsotonicRegression (PAV), actDCF by a direct count at the
Bayes threshold, the linear calibration against scipy's minimiser of the stated objective,
a-DCF against a restatement of the ASVspoof 5 package's per-score walk."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.isotonic import IsotonicRegression

from interbias.metrics import verification as M
from interbias.metrics.calibration import fit_linear, objective
from interbias.metrics.llr import CostPoint, act_dcf, bayes_error_curve, cllr, min_cllr, pav_llrs
from interbias.metrics.sasv import ADCFCost, a_dcf
from interbias.utils.errors import MetricError
from interbias.utils.seeding import derive_rng


def ref_cllr(llr: np.ndarray, lab: np.ndarray) -> float:
    tar = [math.log2(1 + math.exp(-x)) if x > -700 else math.inf for x in llr[lab == 1]]
    non = [math.log2(1 + math.exp(x)) if x < 700 else math.inf for x in llr[lab == 0]]
    return 0.5 * (sum(tar) / len(tar) + sum(non) / len(non))


def ref_min_cllr(s: np.ndarray, lab: np.ndarray) -> float:
    """Cllr of the PAV posterior of scikit-learn's isotonic regression (ties share one value)."""
    p = IsotonicRegression(increasing=True).fit(s, lab).predict(s)
    n_t, n_n = lab.sum(), (1 - lab).sum()
    odds_ratio = n_n / n_t  # posterior odds -> likelihood ratio
    tar, non = p[lab == 1], p[lab == 0]
    with np.errstate(divide="ignore"):
        tar_loss = np.log2(1 + (1 - tar) / tar / odds_ratio)
        non_loss = np.log2(1 + non / (1 - non) * odds_ratio)
    return float(0.5 * (np.mean(tar_loss) + np.mean(non_loss)))


def ref_act_dcf(llr: np.ndarray, lab: np.ndarray, p: float, c_miss: float, c_fa: float) -> float:
    eta = math.log(c_fa * (1 - p) / (c_miss * p))
    miss = sum(1 for x, y in zip(llr, lab, strict=True) if y == 1 and x < eta) / lab.sum()
    fa = sum(1 for x, y in zip(llr, lab, strict=True) if y == 0 and x >= eta) / (1 - lab).sum()
    return (c_miss * p * miss + c_fa * (1 - p) * fa) / min(c_miss * p, c_fa * (1 - p))


def cases(n: int = 120):
    for i in range(n):
        rng = derive_rng("llr-metric-test", i)
        nt = int(rng.integers(1, 40))
        nn = int(rng.integers(1, 80))
        decimals = int(rng.integers(0, 3))  # coarse rounding makes many ties
        s = np.round(np.r_[rng.normal(1.5, 1.5, nt), rng.normal(0.0, 1.0, nn)] * 3, decimals)
        lab = np.r_[np.ones(nt), np.zeros(nn)].astype(int)
        yield s, lab


@pytest.mark.parametrize("s,lab", list(cases()))
def test_cllr_min_cllr_act_dcf_match_references(s: np.ndarray, lab: np.ndarray) -> None:
    assert cllr(s, lab) == pytest.approx(ref_cllr(s, lab), rel=1e-10, abs=1e-12)
    assert min_cllr(s, lab) == pytest.approx(ref_min_cllr(s, lab.astype(float)), rel=1e-9, abs=1e-12)
    assert min_cllr(s, lab) <= cllr(s, lab) + 1e-12 and min_cllr(s, lab) <= 1.0 + 1e-12
    for p, cm, cf in ((0.01, 1, 1), (0.5, 1, 1), (0.05, 1, 10), (0.9, 3, 1)):
        point = CostPoint(p, cm, cf)
        act = act_dcf(s, lab, point)
        assert act == pytest.approx(ref_act_dcf(s, lab, p, cm, cf), abs=1e-12)
        assert act >= M.min_dcf(s, lab, p_target=p, c_miss=cm, c_fa=cf) - 1e-12


def test_cllr_degenerate_values() -> None:
    lab = np.array([1, 1, 0, 0])
    assert cllr(np.zeros(4), lab) == pytest.approx(1.0)  # llr 0 everywhere: one bit
    assert cllr(np.array([np.inf, np.inf, -np.inf, -np.inf]), lab) == 0.0
    assert cllr(np.array([-np.inf, 1.0, -1.0, -1.0]), lab) == math.inf
    assert min_cllr(np.array([1.0, 2.0, -1.0, 0.0]), lab) == 0.0  # perfectly separated
    assert min_cllr(np.array([-1.0, 0.0, 1.0, 2.0]), lab) == pytest.approx(1.0)  # reversed: PAV pools all
    assert min_cllr(np.full(4, 0.3), lab) == pytest.approx(1.0)  # all tied
    assert min_cllr(np.array([0.5, 0.1]), np.array([1, 0])) == 0.0  # smallest n
    with pytest.raises(MetricError, match="NaN"):
        cllr(np.array([np.nan, 0, 0, 0]), lab)
    with pytest.raises(MetricError, match="no non-target trials"):
        min_cllr(np.zeros(3), np.ones(3))


def test_pav_gives_tied_scores_one_llr_and_is_monotone() -> None:
    s = np.array([0.0, 0.0, 0.0, 1.0, 1.0, 2.0, 3.0])
    lab = np.array([1, 0, 0, 0, 1, 0, 1])
    llr = pav_llrs(s, lab)
    assert llr[0] == llr[1] == llr[2] and llr[3] == llr[4]
    assert np.all(np.diff(llr) >= 0)


def test_act_dcf_accepts_at_exactly_the_bayes_threshold() -> None:
    point = CostPoint(0.5)  # threshold 0
    lab = np.array([1, 0])
    assert act_dcf(np.array([0.0, 0.0]), lab, point) == pytest.approx(1.0)  # non-target at 0 accepted
    assert act_dcf(np.array([0.0, -1e-12]), lab, point) == 0.0
    with pytest.raises(MetricError, match="p_target"):
        CostPoint(1.0)


def test_bayes_error_curve_at_even_prior_is_act_and_min_dcf() -> None:
    rng = derive_rng("bayes-curve")
    s = np.r_[rng.normal(2, 1.5, 50), rng.normal(-1, 1.5, 70)]
    lab = np.r_[np.ones(50), np.zeros(70)].astype(int)
    act, mins = bayes_error_curve(s, s - 0.5, lab, np.array([-2.0, 0.0, 2.0]))
    assert act[1] == pytest.approx(act_dcf(s - 0.5, lab, CostPoint(0.5)))
    assert mins[1] == pytest.approx(M.min_dcf(s, lab, p_target=0.5))
    assert np.all(act >= mins - 1e-12)


@pytest.mark.parametrize("case", range(20))
def test_linear_calibration_minimises_the_stated_objective(case: int) -> None:
    rng = derive_rng("calibration-fit", case)
    nt, nn = int(rng.integers(3, 60)), int(rng.integers(3, 200))
    s = np.round(np.r_[rng.normal(0.6, 0.15, nt), rng.normal(0.1, 0.2, nn)], int(rng.integers(1, 4)))
    lab = np.r_[np.ones(nt), np.zeros(nn)].astype(int)
    cal = fit_linear(s, lab)
    ref = minimize(lambda v: objective(v[0], v[1], s, lab), x0=[1.0, 0.0], method="Nelder-Mead",
                   options={"xatol": 1e-10, "fatol": 1e-14, "maxiter": 20000})  # fmt: skip
    assert objective(cal.slope, cal.offset, s, lab) <= ref.fun + 1e-9
    assert cal.slope == pytest.approx(ref.x[0], rel=1e-3)


def test_calibration_of_true_llrs_is_near_identity() -> None:
    rng = derive_rng("calibration-identity")
    # N(μ, 2μ) targets vs N(−μ, 2μ) non-targets: the score is the LLR itself
    mu = 2.0
    s = np.r_[rng.normal(mu, math.sqrt(2 * mu), 20000), rng.normal(-mu, math.sqrt(2 * mu), 20000)]
    lab = np.r_[np.ones(20000), np.zeros(20000)].astype(int)
    cal = fit_linear(s, lab)
    assert cal.slope == pytest.approx(1.0, abs=0.03) and cal.offset == pytest.approx(0.0, abs=0.03)
    assert cal.score_at(cal.llr(np.array([0.7]))[0]) == pytest.approx(0.7)


def test_calibration_refuses_degenerate_trials() -> None:
    lab = np.array([1, 1, 0, 0])
    sep = fit_linear(np.array([0.9, 0.8, 0.1, 0.2]), lab)  # separated: finite thanks to smoothing
    assert math.isfinite(sep.slope) and sep.slope > 0
    with pytest.raises(MetricError, match="same score"):
        fit_linear(np.full(4, 0.5), lab)
    with pytest.raises(MetricError, match="slope"):
        fit_linear(np.array([0.1, 0.2, 0.9, 0.8]), lab)


def ref_a_dcf_walk(tar: np.ndarray, non: np.ndarray, spf: np.ndarray, c: ADCFCost) -> float:
    """ASVspoof 5 ``compute_a_det_curve`` + ``_calculate_a_dcf`` restated: walk the sorted
    scores, rejecting one more trial at each step (valid without ties)."""
    items = sorted([(x, 1) for x in tar] + [(x, 0) for x in non] + [(x, 2) for x in spf])
    fp_n, fp_s, fn = len(non), len(spf), 0
    best = c.c_fa_asv * c.p_non + c.c_fa_cm * c.p_spf  # all accepted
    for _, lab in items:
        fp_n -= lab == 0
        fp_s -= lab == 2
        fn += lab == 1
        cost = c.c_miss * c.p_tar * fn / len(tar) + c.c_fa_asv * c.p_non * fp_n / len(non)
        best = min(best, cost + c.c_fa_cm * c.p_spf * fp_s / len(spf))
    norm = min(c.c_fa_asv * c.p_non + c.c_fa_cm * c.p_spf, c.c_miss * c.p_tar)
    return best / norm


def ref_a_dcf_brute(tar: np.ndarray, non: np.ndarray, spf: np.ndarray, c: ADCFCost) -> float:
    costs = []
    for t in list(np.unique(np.r_[tar, non, spf])) + [math.inf]:
        costs.append(c.c_miss * c.p_tar * np.mean(tar < t) + c.c_fa_asv * c.p_non * np.mean(non >= t)
                     + c.c_fa_cm * c.p_spf * np.mean(spf >= t))  # fmt: skip
    return min(costs) / c.norm


@pytest.mark.parametrize("case", range(40))
def test_a_dcf_matches_the_asvspoof5_definition(case: int) -> None:
    rng = derive_rng("a-dcf", case)
    nt, nn, ns = (int(rng.integers(1, 50)) for _ in range(3))
    tar, non, spf = rng.normal(2, 1, nt), rng.normal(0, 1, nn), rng.normal(1.2, 1, ns)
    cost = ADCFCost() if case % 2 else ADCFCost(p_spf=0.2, p_non=0.3, p_tar=0.5, c_fa_cm=5)
    assert a_dcf(tar, non, spf, cost)[0] == pytest.approx(ref_a_dcf_walk(tar, non, spf, cost), abs=1e-12)
    tied = [np.round(x, 0) for x in (tar, non, spf)]  # ties: only whole thresholds exist
    assert a_dcf(*tied, cost)[0] == pytest.approx(ref_a_dcf_brute(*tied, cost), abs=1e-12)


def test_a_dcf_degenerate_inputs() -> None:
    value, thr = a_dcf([1.0], [0.0], [0.5])
    assert value == 0.0 and thr == 1.0  # one of each, separable: accept only the target
    assert a_dcf([0.0], [0.0], [0.0])[0] == pytest.approx(1.0)  # all tied: accept-all or reject-all
    with pytest.raises(MetricError, match="spoof"):
        a_dcf([1.0], [0.0], [])
    with pytest.raises(MetricError, match="sum to 1"):
        ADCFCost(p_tar=0.5)


def test_cm_eval_adcf_reads_asvspoof5_files(tmp_path) -> None:
    import json as _json

    from typer.testing import CliRunner

    from interbias.cli import app

    rng = derive_rng("adcf-cli")
    tar, non, spf = rng.normal(2, 1, 30), rng.normal(0, 1, 40), rng.normal(1, 1, 20)
    lines = [f"e{i} t{i} {float(s)!r} {k}" for i, (s, k) in enumerate(
        [(x, "target") for x in tar] + [(x, "nontarget") for x in non] + [(x, "spoof") for x in spf])]  # fmt: skip
    path = tmp_path / "sasv.txt"
    path.write_text("\n".join(lines) + "\n")
    res = CliRunner().invoke(app, ["scores", "cm-eval", "adcf", str(path), "--json"])
    assert res.exit_code == 0, res.output
    out = _json.loads(res.stdout)["files"][0]
    assert out["a_dcf"] == pytest.approx(ref_a_dcf_walk(tar, non, spf, ADCFCost()), abs=1e-12)
    assert (out["n_target"], out["n_nontarget"], out["n_spoof"]) == (30, 40, 20)
    bad = tmp_path / "bad.txt"
    bad.write_text("e t 0.5 bonafide\n")
    res = CliRunner().invoke(app, ["scores", "cm-eval", "adcf", str(bad)])
    assert res.exit_code == 1
    assert res.stderr.strip() == f"error: {bad}: row 1: key 'bonafide' is not one of target, nontarget, spoof"


def ref_min_t_dcf(bona, spoof, pfa_asv, pmiss_asv, pfa_spoof_asv, c) -> float:
    """ASVspoof 5 ``compute_tDCF`` restated (compute_det_curve over the sorted CM scores,
    rejecting one more trial per step; valid without ties), minimum of the normalised curve."""
    items = sorted([(x, 1) for x in bona] + [(x, 0) for x in spoof])
    fn, fa = 0, len(spoof)
    pmiss, pfa = [0.0], [1.0]
    for _, lab in items:
        fn += lab == 1
        fa -= lab == 0
        pmiss.append(fn / len(bona))
        pfa.append(fa / len(spoof))
    c0 = c.p_tar * c.c_miss * pmiss_asv + c.p_non * c.c_fa * pfa_asv
    c1 = c.p_tar * c.c_miss - (c.p_tar * c.c_miss * pmiss_asv + c.p_non * c.c_fa * pfa_asv)
    c2 = c.p_spoof * c.c_fa_spoof * pfa_spoof_asv
    return min((c0 + c1 * m + c2 * f) / (c0 + min(c1, c2)) for m, f in zip(pmiss, pfa, strict=True))


@pytest.mark.parametrize("case", range(20))
def test_min_t_dcf_matches_the_asvspoof5_definition(case: int) -> None:
    from interbias.metrics.sasv import TDCFCost, min_t_dcf

    rng = derive_rng("t-dcf", case)
    bona, spoof = rng.normal(1.5, 1, int(rng.integers(1, 60))), rng.normal(0, 1, int(rng.integers(1, 60)))
    rates = (float(rng.uniform(0, 0.2)), float(rng.uniform(0, 0.2)), float(rng.uniform(0.1, 0.9)))
    cost = TDCFCost()
    assert min_t_dcf(bona, spoof, *rates, cost)[0] == pytest.approx(ref_min_t_dcf(bona, spoof, *rates, cost), abs=1e-12)
    assert min_t_dcf(bona, spoof, *rates)[0] <= 1.0 + 1e-12  # accept-all or reject-all CM is at most 1


def test_min_t_dcf_degenerate_inputs() -> None:
    from interbias.metrics.sasv import TDCFCost, min_t_dcf

    assert min_t_dcf([1.0], [0.0], 0.0, 0.0, 0.5)[0] == 0.0  # perfect ASV and CM
    with pytest.raises(MetricError, match="pfa_asv must be a rate"):
        min_t_dcf([1.0], [0.0], 1.5, 0.0, 0.5)
    with pytest.raises(MetricError, match="undefined"):
        min_t_dcf([1.0], [0.0], 0.0, 0.0, 0.0)  # C0 = C2 = 0
    with pytest.raises(MetricError, match="sum to 1"):
        TDCFCost(p_tar=0.5)


def test_cm_eval_tdcf_from_asv_and_cm_files(tmp_path) -> None:
    import json as _json

    from typer.testing import CliRunner

    from interbias.cli import app
    from interbias.metrics.sasv import TDCFCost

    rng = derive_rng("tdcf-cli")
    tar, non, spf = rng.normal(2, 1, 40), rng.normal(0, 1, 50), rng.normal(1.5, 1, 30)
    asv = tmp_path / "asv.txt"
    asv.write_text("".join(f"e t {float(s)!r} {k}\n" for k, xs in (("target", tar), ("nontarget", non), ("spoof", spf))
                           for s in xs))  # fmt: skip
    bona_cm, spoof_cm = rng.normal(1, 1, 60), rng.normal(-1, 1, 30)
    cm = tmp_path / "cm.txt"
    cm.write_text("".join(f"u{i} {float(s)!r} {k}\n" for i, (s, k) in enumerate(
        [(x, "bonafide") for x in bona_cm] + [(x, "spoof") for x in spoof_cm])))  # fmt: skip
    res = CliRunner().invoke(app, ["scores", "cm-eval", "tdcf", str(asv), str(cm), "--json"])
    assert res.exit_code == 0, res.output
    out = _json.loads(res.stdout)
    thr = M.eer_from_sweep(M.threshold_sweep(np.r_[tar, non], np.r_[np.ones(40), np.zeros(50)]))[1]
    rates = (np.mean(non >= thr), np.mean(tar < thr), np.mean(spf >= thr))
    assert (out["pfa_asv"], out["pmiss_asv"], out["pfa_spoof_asv"]) == pytest.approx(rates)
    assert out["min_t_dcf"] == pytest.approx(ref_min_t_dcf(bona_cm, spoof_cm, *rates, TDCFCost()), abs=1e-12)
