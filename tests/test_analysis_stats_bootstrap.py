"""Weighted-replicate metrics and the speaker-cluster bootstrap against naive references."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from synthetic_runs import ScoreModel, clustered_trials

from interbias.analysis.stats.bootstrap import Resampler, TrialDesign, percentile_ci
from interbias.metrics import verification as M
from interbias.metrics.weighted import metric_batch, sort_cell
from interbias.utils.errors import AnalysisError
from interbias.utils.seeding import derive_rng

NAIVE = {"eer": M.eer, "eer_legacy": M.eer_legacy, "min_dcf": M.min_dcf}


@pytest.mark.parametrize("metric", sorted(NAIVE))
def test_weighted_metric_equals_metric_of_repeated_trials(metric: str) -> None:
    rng = derive_rng("test", "weighted", metric)
    for i in range(60):
        n = int(rng.integers(2, 40))
        labels = rng.integers(0, 2, n).astype(bool)
        labels[:2] = [True, False]
        # ties (coarse rounding), and every third cell perfectly separated (EER 0)
        scores = np.round(rng.normal(size=n) + 6.0 * labels * (i % 3 == 0), i % 2)
        weights = rng.integers(0, 4, (15, n))
        got = metric_batch(metric, sort_cell(scores, labels), weights)
        for b in range(len(weights)):
            lab = np.repeat(labels, weights[b])
            if lab.all() or not lab.any():
                assert np.isnan(got[b])  # undefined without both classes
            else:
                assert got[b] == NAIVE[metric](np.repeat(scores, weights[b]), lab)


def test_weighted_metric_rejects_bad_weights() -> None:
    cell = sort_cell(np.array([0.1, 0.2]), np.array([True, False]))
    with pytest.raises(AnalysisError, match="weights must be"):
        metric_batch("eer", cell, np.ones((2, 3)))
    with pytest.raises(AnalysisError, match="non-negative"):
        metric_batch("eer", cell, -np.ones((1, 2)))
    with pytest.raises(AnalysisError, match="not supported; valid: eer, eer_legacy, min_dcf"):
        metric_batch("auc", cell, np.ones((1, 2)))


def small_trials() -> pd.DataFrame:
    """Two strata with disjoint speakers, targets and non-targets, scores with ties."""
    rows, tid = [], 0
    for stratum, spk in (("g=f", ["f1", "f2", "f3", "f4"]), ("g=m", ["m1", "m2", "m3"])):
        for s in spk:
            for _ in range(3):
                rows.append((tid, stratum, 1, s, s))
                tid += 1
        for i, e in enumerate(spk):
            for t in spk[i + 1 :]:
                rows.append((tid, stratum, 0, e, t))
                tid += 1
    return pd.DataFrame(rows, columns=["trial_id", "stratum", "label", "enrol_speaker", "test_speaker"])


def test_blocks_follow_strata_and_keep_sizes() -> None:
    design = TrialDesign.from_frame(small_trials())
    blocks = [[design.speakers[i] for i in b] for b in design.blocks()]
    assert blocks == [["f1", "f2", "f3", "f4"], ["m1", "m2", "m3"]]
    counts = Resampler(design, n_boot=50, seed=3).speaker_counts()
    f = [design.speakers.index(s) for s in blocks[0]]
    assert (counts[:, f].sum(axis=1) == 4).all() and (counts.sum(axis=1) == 7).all()


def naive_replicate(
    everything: pd.DataFrame, trials: pd.DataFrame, scores: np.ndarray, seed: int, b: int, metric: str
) -> float:
    """Rebuild replicate b by hand: draw speaker copies per block with the same generator, then
    list every target trial once per copy of its speaker and every non-target trial once per
    (copy of enrol speaker, copy of test speaker) pair."""
    design = TrialDesign.from_frame(everything)  # blocks (and draws) span the whole trial list
    rng = derive_rng("bootstrap", "speaker", seed, b)
    copies: dict[str, int] = {}
    for blk in design.blocks():
        for i in blk[rng.integers(0, len(blk), size=len(blk))]:
            copies[design.speakers[i]] = copies.get(design.speakers[i], 0) + 1
    s_out, l_out = [], []
    for r, sc in zip(trials.itertuples(), scores, strict=True):
        if r.label == 1:
            reps = copies.get(r.enrol_speaker, 0)
        else:
            reps = sum(1 for _ in range(copies.get(r.enrol_speaker, 0)) for _ in range(copies.get(r.test_speaker, 0)))
        s_out += [sc] * reps
        l_out += [r.label] * reps
    lab = np.array(l_out, dtype=bool)
    if lab.all() or not lab.any():
        return float("nan")
    return NAIVE[metric](np.array(s_out), lab)


def test_speaker_bootstrap_matches_hand_built_replicates() -> None:
    trials = small_trials()
    rng = derive_rng("test", "scores")
    scores = np.round(rng.normal(size=len(trials)) + trials["label"].to_numpy(), 1)
    design = TrialDesign.from_frame(trials)
    res = Resampler(design, n_boot=30, seed=11)
    for stratum in ("g=f", "g=m"):
        rows = np.flatnonzero(design.stratum == stratum)
        got = metric_batch("eer", sort_cell(scores[rows], design.label[rows]), res.weights(rows))
        sub = trials.iloc[rows]
        want = [naive_replicate(trials, sub, scores[rows], 11, b, "eer") for b in range(30)]
        np.testing.assert_array_equal(got, np.array(want))


def test_replicates_are_derived_not_advanced() -> None:
    design = TrialDesign.from_frame(small_trials())
    a = Resampler(design, n_boot=10, seed=5).speaker_counts()
    b = Resampler(design, n_boot=20, seed=5).speaker_counts()
    c = Resampler(design, n_boot=10, seed=6).speaker_counts()
    np.testing.assert_array_equal(a, b[:10])
    assert not np.array_equal(a, c)
    t1 = Resampler(design, n_boot=10, seed=5, unit="trial").weights(np.arange(10))
    t2 = Resampler(design, n_boot=10, seed=5, unit="trial").weights(np.arange(10))
    np.testing.assert_array_equal(t1, t2)


def test_trial_unit_redraws_within_stratum_and_label() -> None:
    trials = small_trials()
    design = TrialDesign.from_frame(trials)
    rows = np.arange(len(trials))
    w = Resampler(design, n_boot=25, seed=1, unit="trial").weights(rows)
    for st in ("g=f", "g=m"):
        for lab in (0, 1):
            sel = ((trials.stratum == st) & (trials.label == lab)).to_numpy()
            assert (w[:, sel].sum(axis=1) == sel.sum()).all()


def test_resampler_and_ci_errors() -> None:
    design = TrialDesign.from_frame(small_trials())
    with pytest.raises(AnalysisError, match="bootstrap unit 'utterance': valid: speaker, trial"):
        Resampler(design, n_boot=5, unit="utterance")
    with pytest.raises(AnalysisError, match="positive number of replicates"):
        Resampler(design, n_boot=0)
    with pytest.raises(AnalysisError, match="not in the trial list"):
        design.rows(np.array([999]))
    lo, hi, n = percentile_ci(np.array([[1.0, 2.0, 3.0, np.nan, 5.0], [np.nan] * 5]), 0.5)
    assert (lo[0], hi[0], n[0]) == (np.quantile([1, 2, 3, 5], 0.25), np.quantile([1, 2, 3, 5], 0.75), 4)
    assert np.isnan(lo[1]) and n[1] == 0


# ---- simulation (make test-slow) -------------------------------------------------------
# Does the bootstrap SE match the sampling SD? E16-sized simulated runs with known population
# values: two strata (genders) of 24 speakers, 12 target and 12 non-target trials per speaker
# (synthetic_runs.clustered_trials), two conditions (clean, noisy) scoring the same trials with
# a shared per-trial term (correlation 0.7), scores from ScoreModel (speaker effects on both
# classes). Per simulated run: the EER gap (male − female, clean), a stratum's mean non-target
# score, the IE (gender × condition), and the condition's main effect averaged over gender. The
# SE of each is taken from the speaker bootstrap (plain: √V_S) and from the corrected design
# (√(n/(n − 1)·V_S − c·V_N), interbias.analysis.effects.Correction), the weights drawn once and
# applied to every run. Ratio = √(mean SE²) / SD of the estimates over runs; coverage of the
# findings' interval estimate ± t_df·SE (Satterthwaite df) (population values from ScoreModel.population_eer; the mean
# non-target score's is 0). docs/analysis.md quotes the figures this test prints.

MODEL = ScoreModel()
STRATA = ("gender=female", "gender=male")
MU = {("gender=female", 0): 2.0, ("gender=male", 0): 1.6, ("gender=female", 1): 1.4, ("gender=male", 1): 1.1}
SIMS, BOOT = 1000, 200


def _truths() -> dict[str, float]:
    pop = {k: MODEL.population_eer(mu) for k, mu in MU.items()}
    f, m = STRATA
    return {
        "gap": pop[(m, 0)] - pop[(f, 0)],
        "mean": MODEL.mu_n,
        "ie": pop[(m, 1)] - pop[(m, 0)] - pop[(f, 1)] + pop[(f, 0)],
        "main": ((pop[(m, 1)] - pop[(m, 0)]) + (pop[(f, 1)] - pop[(f, 0)])) / 2,
    }


def _one_run(rng, trials, design, weights) -> dict[str, tuple[float, float, float]]:
    """(estimate, V_S, V_N) of each statistic in one simulated run."""
    lab = design.label
    u = rng.normal(0, MODEL.tau, len(design.speakers))
    v = rng.normal(0, MODEL.tau_n, len(design.speakers))
    shared = rng.normal(0, 1, len(trials))
    out: dict[tuple[str, int], tuple[float, np.ndarray, np.ndarray]] = {}
    mean = None
    for c in (0, 1):
        eps = 0.7 * shared + np.sqrt(1 - 0.49) * rng.normal(0, 1, len(trials))
        for st in STRATA:
            r = np.flatnonzero(design.stratum == st)
            s = (np.where(lab, MU[(st, c)] + u[design.enrol], MODEL.mu_n + v[design.enrol] + v[design.test]) + eps)[r]
            cell = sort_cell(s, lab[r])
            out[(st, c)] = (M.eer(s, lab[r]), *(metric_batch("eer", cell, w[:, r]) for w in weights))
            if (st, c) == (STRATA[0], 0):
                non = r[~lab[r]]
                x = s[~lab[r]]
                mean = (float(x.mean()), *((w[:, non] * x).sum(1) / w[:, non].sum(1) for w in weights))
    f, m = STRATA
    combos = {
        "gap": {(m, 0): 1, (f, 0): -1},
        "ie": {(m, 1): 1, (m, 0): -1, (f, 1): -1, (f, 0): 1},
        "main": {(m, 1): 0.5, (m, 0): -0.5, (f, 1): 0.5, (f, 0): -0.5},
    }
    res = {k: tuple(sum(c * out[key][i] for key, c in co.items()) for i in range(3)) for k, co in combos.items()}
    res["mean"] = mean
    return {k: (float(e), float(np.var(rs, ddof=1)), float(np.var(rn, ddof=1))) for k, (e, rs, rn) in res.items()}


@pytest.mark.slow
def test_corrected_bootstrap_se_matches_the_sampling_sd_and_its_intervals_cover() -> None:
    from interbias.analysis.effects import Correction
    from interbias.analysis.suite import design_constants

    trials = clustered_trials(dict.fromkeys(STRATA, 24), 12, 12)
    design = TrialDesign.from_frame(trials)
    all_rows = np.arange(len(trials))
    weights = [Resampler(design, n_boot=BOOT, seed=1, unit=u).weights(all_rows) for u in ("speaker", "nontarget")]
    n, k, nu_s, nu_p = design_constants(design, [np.flatnonzero(design.stratum == st) for st in STRATA])
    assert (n, k, nu_s, nu_p) == (
        24,
        11.5,
        46,
        275,
    )  # 276 distinct pairs among 24 speakers: offsets 1..12, the 12th twice
    corr = Correction(None, n, k, nu_s, nu_p)  # type: ignore[arg-type]
    a, c = corr.factors
    truth = _truths()
    runs = [_one_run(derive_rng("test-bootstrap-corrected", i), trials, design, weights) for i in range(SIMS)]
    lines, measured = [], {}
    for name, true in truth.items():
        est, v_s, v_n = (np.array([r[name][j] for r in runs]) for j in range(3))
        var = a * v_s - c * v_n
        assert (var > 0).mean() > 0.99
        se = np.sqrt(np.where(var > 0, var, np.nan))
        sd = est.std(ddof=1)
        ratio, plain = float(np.sqrt(np.nanmean(var)) / sd), float(np.sqrt(v_s.mean()) / sd)
        q = stats.t.ppf(0.975, corr.df(v_s, v_n, BOOT))  # the findings' quantile (Satterthwaite df)
        cover = float(np.nanmean(np.abs(est - true) <= q * se))
        z_cover = float(np.nanmean(np.abs(est - true) <= 1.959964 * se))
        lines.append(
            f"{name}: SE/SD corrected {ratio:.3f} (speaker {plain:.3f}), coverage {cover:.3f} (normal quantile {z_cover:.3f})"
        )
        measured[name] = (ratio, plain, cover)
    print("; ".join(lines))
    for name, (ratio, plain, cover) in measured.items():
        assert 0.95 <= ratio <= 1.10 and plain > ratio, name  # the plain speaker bootstrap overstates the SD
        assert 0.93 <= cover <= 0.97, name
