"""The concurrent t-EER against two independent restatements: a brute force over every pair of
thresholds on the tie-exact grid (ties, small n), and the ASVspoof 5 package's estimator as
it is written there (sorted cumulative curves, a loop over ASV thresholds) on tie-free scores."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from interbias.cli import app
from interbias.metrics.sasv import a_dcf, t_eer
from interbias.utils.errors import MetricError
from interbias.utils.seeding import derive_rng


def brute_t_eer(tar, non, spf, bona, cm_spf) -> tuple[float, float, float]:
    """(t-EER, ASV threshold, CM threshold) by evaluating every (τ_asv, τ_cm) pair, accept >= τ."""
    asv_grid = sorted(set(tar) | set(non) | set(spf)) + [np.inf]
    cm_grid = sorted(set(bona) | set(cm_spf)) + [np.inf]
    best = (np.inf, None, None, None)
    for ta in asv_grid:
        a = sum(x < ta for x in tar) / len(tar)
        b = sum(x >= ta for x in non) / len(non)
        c = sum(x >= ta for x in spf) / len(spf)
        if not (a < 0.5 * b + 0.5 * c and c > 0):
            continue
        hs = []
        for tc in cm_grid:
            pm = sum(x < tc for x in bona) / len(bona)
            pf = sum(x >= tc for x in cm_spf) / len(cm_spf)
            hs.append((abs((pm + (1 - pm) * a) - (0.5 * (1 - pm) * b + 0.5 * pf * c)), pm, pf, tc))
        _, pm, pf, tc = min(hs, key=lambda t: t[0])  # min() keeps the first of equal keys
        crit = abs(b / c - pf / (1 - pm)) if pm < 1 else np.inf
        if crit < best[0]:
            best = (crit, pf * c, ta, tc)
    return best[1], best[2], best[3]


def package_t_eer(tar, non, spf, bona, cm_spf) -> float:
    """The ASVspoof 5 package's compute_teer, restated: curves from a stable sort with a leading
    accept-all point (threshold = a score, accept > threshold), ρ = ½, allowed region, the
    concurrency criterion; value P_fa,cm · P_fa,spoof,asv (as a fraction)."""
    scores = np.concatenate([tar, non, spf])
    lab = np.concatenate([np.ones(len(tar)), np.zeros(len(non)), -np.ones(len(spf))])[
        np.argsort(scores, kind="mergesort")
    ]
    pm_asv = np.r_[0, np.cumsum(lab == 1) / len(tar)]
    pfn_asv = np.r_[1, 1 - np.cumsum(lab == 0) / len(non)]
    pfs_asv = np.r_[1, 1 - np.cumsum(lab == -1) / len(spf)]
    cms = np.concatenate([bona, cm_spf])
    cml = np.r_[np.ones(len(bona)), np.zeros(len(cm_spf))][np.argsort(cms, kind="mergesort")]
    pm_cm = np.r_[0, np.cumsum(cml) / len(bona)]
    pf_cm = np.r_[1, (len(cm_spf) - (np.arange(1, len(cms) + 1) - np.cumsum(cml))) / len(cm_spf)]
    best, value = np.inf, None
    for i in range(len(pm_asv)):
        a, b, c = pm_asv[i], pfn_asv[i], pfs_asv[i]
        h = pm_cm + (1 - pm_cm) * a - (0.5 * (1 - pm_cm) * b + 0.5 * pf_cm * c)
        j = int(np.argmin(np.abs(h)))
        if a < 0.5 * b + 0.5 * c:
            with np.errstate(divide="ignore", invalid="ignore"):
                crit = abs(b / c - pf_cm[j] / (1 - pm_cm[j]))
            if crit < best:
                best, value = crit, c * pf_cm[j]
    return value


def _sets(name: str, n: tuple[int, ...], digits: int | None = None):
    rng = derive_rng(name)
    tar, non, spf = rng.normal(3, 1, n[0]), rng.normal(0, 1, n[1]), rng.normal(rng.uniform(0, 3), 1, n[2])
    bona, cm_spf = rng.normal(2, 1, n[0] + n[1]), rng.normal(rng.uniform(-1, 1), 1, n[2])
    if digits is not None:  # many ties, within and across classes
        tar, non, spf, bona, cm_spf = (np.round(x, digits) for x in (tar, non, spf, bona, cm_spf))
    return tar, non, spf, bona, cm_spf


@pytest.mark.parametrize(
    ("case", "n", "digits"),
    [(0, (1, 1, 1), None), (1, (2, 3, 2), 0), (2, (7, 5, 9), None), (3, (15, 12, 10), 0), (4, (30, 25, 20), 1),
     (5, (40, 3, 40), None), (6, (25, 30, 5), 0)],
)  # fmt: skip
def test_t_eer_matches_a_brute_force_over_every_threshold_pair(case: int, n: tuple[int, ...], digits: int) -> None:
    sets = _sets(f"teer-brute-{case}", n, digits)
    got = t_eer(*sets)
    value, ta, tc = brute_t_eer(*sets)
    assert got.t_eer == pytest.approx(value, abs=1e-12)
    assert (got.asv_threshold, got.cm_threshold) == (ta, tc)
    assert got.pfa_spoof == got.t_eer
    assert 0.0 <= got.t_eer <= 1.0


@pytest.mark.parametrize("case", range(6))
def test_t_eer_matches_the_asvspoof5_package_estimator_without_ties(case: int) -> None:
    rng = derive_rng(f"teer-package-{case}")
    sets = _sets(f"teer-package-{case}", tuple(int(x) for x in rng.integers(5, 300, 3)))
    assert t_eer(*sets).t_eer == pytest.approx(package_t_eer(*sets), abs=1e-12)


def test_t_eer_of_separable_systems_and_a_fixed_set() -> None:
    # CM and ASV each perfect: the tandem makes no error at the concurrent point
    assert t_eer([2.0, 3.0], [0.0, 0.5], [1.0, 1.5], [1.0, 1.0], [0.0]).t_eer == 0.0
    # by hand: allowed ASV thresholds 0 (a, b, c = 0, 1, 1) and 1 (0, 1/2, 1); both pick τ_cm = 2
    # (P_miss,cm 1/2, P_fa,cm 0; |h| 0.25 and 0.375); criteria |1 − 0| and |1/2 − 0|: τ_asv = 1 wins.
    # Two trials per class cannot reach a concurrent point; the estimator reports P_fa,spf,tdm.
    got = t_eer([1.0, 2.0], [0.0, 1.0], [1.0, 3.0], [1.0, 2.0], [0.0, 1.0])
    assert (got.t_eer, got.asv_threshold, got.cm_threshold) == (0.0, 1.0, 2.0)
    assert (got.pmiss, got.pfa_nontarget, got.pfa_spoof) == (0.5, 0.25, 0.0)


def test_t_eer_degenerate_inputs_raise_typed_errors() -> None:
    with pytest.raises(MetricError, match="t-EER ASV spoof: need a non-empty"):
        t_eer([1.0], [0.0], [], [1.0], [0.0])
    with pytest.raises(MetricError, match="t-EER CM bona fide: need a non-empty"):
        t_eer([1.0], [0.0], [0.5], [], [0.0])
    with pytest.raises(MetricError, match="NaN or infinite"):
        t_eer([1.0], [np.nan], [0.5], [1.0], [0.0])
    # one trial per class, every class inverted: still defined (τ_asv at the lowest score)
    assert 0.0 <= t_eer([0.0], [6.0], [5.0], [-1.0], [1.0]).t_eer <= 1.0


def test_cm_eval_teer_from_asv_and_cm_files(tmp_path) -> None:
    tar, non, spf, bona, cm_spf = _sets("teer-cli", (40, 50, 30))
    asv = tmp_path / "asv.txt"
    asv.write_text("".join(f"e t {float(s)!r} {k}\n" for k, xs in (("target", tar), ("nontarget", non), ("spoof", spf))
                           for s in xs))  # fmt: skip
    cm = tmp_path / "cm.txt"
    cm.write_text("".join(f"u{i} {float(s)!r} {k}\n" for i, (s, k) in enumerate(
        [(x, "bonafide") for x in bona] + [(x, "spoof") for x in cm_spf])))  # fmt: skip
    res = CliRunner().invoke(app, ["scores", "cm-eval", "teer", str(asv), str(cm), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["t_eer"] == pytest.approx(package_t_eer(tar, non, spf, bona, cm_spf), abs=1e-12)
    assert (out["n_target"], out["n_nontarget"], out["n_spoof"], out["n_bonafide_cm"], out["n_spoof_cm"]) == (
        40, 50, 30, 90, 30)  # fmt: skip
    text = CliRunner().invoke(app, ["scores", "cm-eval", "teer", str(asv), str(cm)])
    assert text.exit_code == 0 and f"t-EER {out['t_eer']:.6f}" in text.stdout
    cm.write_text("u0 1.0 bonafide\n")
    bad = CliRunner().invoke(app, ["scores", "cm-eval", "teer", str(asv), str(cm)])
    assert bad.exit_code == 1 and "needs bona fide and spoof trials" in bad.output


# ---- cm-eval tdcf --asv-threshold package: the ASVspoof 5 package's operating point -------------


def _package_tdcf(tar, non, spf, bona_cm, spoof_cm):
    """The ASVspoof 5 evaluation package's t-DCF path restated with plain loops: ``compute_eer``
    of target vs non-target over the scores sorted ascending (target first at equal scores),
    its threshold the last rejected score (lowest − 0.001 before any); ASV rates with accept ≥
    threshold (``obtain_asv_error_rates``); then ``compute_tDCF`` (C0, C1, C2) over the sorted
    CM points (bona fide first at equal scores), minimised."""
    items = sorted([(float(x), 0) for x in tar] + [(float(x), 1) for x in non])
    points, thresholds = [(0.0, 1.0)], [items[0][0] - 0.001]
    rt = rn = 0
    for score, cls in items:
        rt, rn = rt + (cls == 0), rn + (cls == 1)
        points.append((rt / len(tar), (len(non) - rn) / len(non)))
        thresholds.append(score)
    best = min(range(len(points)), key=lambda i: (abs(points[i][0] - points[i][1]), i))
    thr = thresholds[best]
    pfa = sum(x >= thr for x in non) / len(non)
    pmiss = sum(x < thr for x in tar) / len(tar)
    pfa_spf = sum(x >= thr for x in spf) / len(spf)
    p_tar, p_non, p_spoof, c_miss, c_fa, c_fa_spoof = 0.95 * 0.99, 0.95 * 0.01, 0.05, 1.0, 10.0, 10.0
    c0 = p_tar * c_miss * pmiss + p_non * c_fa * pfa
    c1 = p_tar * c_miss - c0
    c2 = p_spoof * c_fa_spoof * pfa_spf
    cm_items = sorted([(float(x), 0) for x in bona_cm] + [(float(x), 1) for x in spoof_cm])
    m = f = 0
    curve = [(c0 + c2) / (c0 + min(c1, c2))]
    for _, cls in cm_items:
        m, f = m + (cls == 0), f + (cls == 1)
        curve.append((c0 + c1 * m / len(bona_cm) + c2 * (len(spoof_cm) - f) / len(spoof_cm)) / (c0 + min(c1, c2)))
    return thr, (pfa, pmiss, pfa_spf), min(curve)


def _write_tdcf_files(tmp_path, seed):
    rng = derive_rng("tdcf-package", seed)
    grid = lambda lo, hi, n: rng.integers(lo, hi, int(n)) / 4.0  # noqa: E731 — quarter-unit grid: ties
    tar, non, spf = (
        grid(0, 16, rng.integers(5, 40)),
        grid(-8, 8, rng.integers(5, 40)),
        grid(-4, 12, rng.integers(3, 30)),
    )
    bona_cm, spoof_cm = grid(-2, 10, rng.integers(3, 40)), grid(-8, 4, rng.integers(3, 40))
    asv, cm = tmp_path / f"asv{seed}.txt", tmp_path / f"cm{seed}.txt"
    asv.write_text("".join(f"e t {float(s)!r} {k}\n" for k, xs in (("target", tar), ("nontarget", non), ("spoof", spf))
                           for s in xs))  # fmt: skip
    cm.write_text("".join(f"u{i} {float(s)!r} {k}\n" for i, (s, k) in enumerate(
        [(x, "bonafide") for x in bona_cm] + [(x, "spoof") for x in spoof_cm])))  # fmt: skip
    return (tar, non, spf, bona_cm, spoof_cm), asv, cm


@pytest.mark.parametrize("seed", range(12))
def test_tdcf_with_the_package_threshold_equals_the_package_restated(tmp_path, seed):
    sets, asv, cm = _write_tdcf_files(tmp_path, seed)
    assert len(set(sets[0]) & set(sets[1])) and len(set(sets[3]) & set(sets[4]))  # ties in both systems
    thr, rates, want = _package_tdcf(*sets)
    res = CliRunner().invoke(
        app, ["scores", "cm-eval", "tdcf", str(asv), str(cm), "--asv-threshold", "package", "--json"]
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["asv_threshold"] == thr and out["asv_threshold_rule"] == "package"
    assert (out["pfa_asv"], out["pmiss_asv"], out["pfa_spoof_asv"]) == pytest.approx(rates, abs=1e-15)
    assert out["min_t_dcf"] == pytest.approx(want, abs=1e-12)


def test_tdcf_default_is_the_interpolated_threshold_and_a_bad_rule_is_one_line(tmp_path):
    from interbias.metrics import verification as M

    (tar, non, *_), asv, cm = _write_tdcf_files(tmp_path, 0)
    res = CliRunner().invoke(app, ["scores", "cm-eval", "tdcf", str(asv), str(cm), "--json"])
    out = json.loads(res.stdout)
    want = M.eer_from_sweep(M.threshold_sweep(np.r_[tar, non], np.r_[np.ones(len(tar)), np.zeros(len(non))]))[1]
    assert out["asv_threshold_rule"] == "interpolated" and out["asv_threshold"] == want
    bad = CliRunner().invoke(app, ["scores", "cm-eval", "tdcf", str(asv), str(cm), "--asv-threshold", "nearest"])
    assert bad.exit_code == 1 and len(bad.output.strip().splitlines()) == 1 and "'nearest' is not one of" in bad.output


def test_weighted_a_dcf_equals_a_dcf_of_the_repeated_scores_ties_included() -> None:
    from interbias.metrics.sasv import a_dcf_weighted

    rng = np.random.default_rng(52)
    for n in (1, 2, 7, 40):
        # rounded to one decimal: many ties within and across the classes
        tar, non, spf = (np.round(rng.normal(mu, 1.0, n + k), 1) for k, mu in enumerate((2.0, 0.0, 1.0)))
        unit = a_dcf_weighted((tar, non, spf), (np.ones(len(tar)), np.ones(len(non)), np.ones(len(spf))))
        assert unit.shape == (1,) and unit[0] == a_dcf(tar, non, spf)[0]
        weights = [rng.integers(0, 3, size=(6, len(x))) for x in (tar, non, spf)]
        got = a_dcf_weighted((tar, non, spf), weights)
        for b in range(6):
            if min(int(w[b].sum()) for w in weights) == 0:
                assert np.isnan(got[b])  # a class with no weight has no rate
                continue
            want = a_dcf(*(np.repeat(x, w[b]) for x, w in zip((tar, non, spf), weights, strict=True)))[0]
            assert got[b] == pytest.approx(want, abs=1e-12)


def test_weighted_a_dcf_refuses_weights_of_another_shape() -> None:
    from interbias.metrics.sasv import a_dcf_weighted

    with pytest.raises(MetricError, match="one weight per score"):
        a_dcf_weighted(([1.0, 2.0], [0.0], [0.5]), (np.ones((2, 3)), np.ones((2, 1)), np.ones((2, 1))))
