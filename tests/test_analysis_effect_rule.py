"""The one interval rule for effects outside findings.csv (CM gains, QMF gap changes, SASV
per-group rows): the corrected-SE t interval against an independent computation, Holm over the
family, and the minimum-speakers rule on a null design (3 speakers per group: never resolved)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import t as student_t
from statsmodels.stats.multitest import multipletests

from interbias.analysis.effect_rule import (
    NO_INTERVAL,
    RESOLVED,
    TOO_FEW,
    UNRESOLVED,
    Resamplers,
    corrected_interval,
    decide,
)
from interbias.analysis.effects import Correction


def _corr() -> Correction:
    return Correction(None, n=10.0, k=6.0, nu_speakers=18.0, nu_pairs=60.0)  # type: ignore[arg-type]


def test_the_interval_is_the_corrected_se_t_interval() -> None:
    rng = np.random.default_rng(1)
    reps_s, reps_n = rng.normal(0.05, 0.03, 500), rng.normal(0.05, 0.01, 500)
    got = corrected_interval(0.04, reps_s, reps_n, _corr(), speakers=20)
    a, c = 10 / 9, 1 + (1 - 2 / 6) / (1 - 1 / 10)
    v_s, v_n = np.var(reps_s, ddof=1), np.var(reps_n, ddof=1)
    se = np.sqrt(a * v_s - c * v_n)
    nu_s, nu_n = 1 / (1 / 18 + 1 / 499), 1 / (1 / 60 + 1 / 499)
    df = se**4 / ((a * v_s - (c - 1) * v_n) ** 2 / nu_s + v_n**2 / nu_n)
    q = student_t.ppf(0.975, df)
    assert got["se"] == pytest.approx(se, rel=1e-12) and got["df"] == pytest.approx(df, rel=1e-12)
    assert (got["lo"], got["hi"]) == pytest.approx((0.04 - q * se, 0.04 + q * se), rel=1e-12)
    assert got["p"] == pytest.approx(2 * student_t.sf(0.04 / se, df), rel=1e-10)
    assert got["bias"] == pytest.approx(np.mean(reps_s) - 0.04, abs=1e-15)
    assert got["status"] == UNRESOLVED and got["speakers"] == 20


def test_too_few_speakers_and_no_interval() -> None:
    rng = np.random.default_rng(2)
    few = corrected_interval(0.3, rng.normal(0.3, 0.01, 200), rng.normal(0.3, 0.001, 200), _corr(), speakers=3)
    assert few["status"] == TOO_FEW and np.isnan(few["lo"]) and np.isnan(few["p"])
    # the pair part larger than the speaker part: the corrected variance is not positive
    none = corrected_interval(0.3, rng.normal(0.3, 0.01, 200), rng.normal(0.3, 0.05, 200), _corr(), speakers=9)
    assert none["status"] == NO_INTERVAL and np.isnan(none["se"])


def test_holm_over_the_family_decides_resolved() -> None:
    frame = pd.DataFrame(
        {"x_p": [0.001, 0.03, 0.04, np.nan, 0.0001], "x_status": [UNRESOLVED] * 3 + [NO_INTERVAL, TOO_FEW]}
    )
    out = decide(frame, "x_", 0.05)
    want = multipletests([0.001, 0.03, 0.04], method="holm")[1]
    assert np.allclose(out["x_p_holm"].to_numpy()[:3], want) and out["x_p_holm"].iloc[3:].isna().all()
    assert list(out["x_status"]) == [RESOLVED, UNRESOLVED, UNRESOLVED, NO_INTERVAL, TOO_FEW]
    assert list(out["x_resolved"]) == [True, False, False, False, False]


def test_a_null_design_with_three_speakers_per_group_is_never_resolved() -> None:
    """24 null per-group rows (3 speakers each, the E26 per-accent case): the plain percentile
    interval excludes 0 in some of them; the rule calls every one "too few speakers"."""
    from interbias.analysis.stats.bootstrap import TrialDesign

    rng = np.random.default_rng(3)
    rows, statuses, percentile_hits = [], [], 0
    for g in range(24):
        spk = [f"g{g}s{i}" for i in range(3)]
        e = rng.integers(0, 3, 60)
        t = np.where(np.arange(60) < 30, e, (e + 1 + rng.integers(0, 2, 60)) % 3)
        rows.append(pd.DataFrame({"enrol_speaker": np.array(spk)[e], "test_speaker": np.array(spk)[t],
                                  "label": (np.arange(60) < 30).astype(int), "stratum": f"g{g}"}))  # fmt: skip
    trials = pd.concat(rows, ignore_index=True).assign(trial_id=lambda f: np.arange(len(f)))
    boot = Resamplers.of(TrialDesign.from_frame(trials), 200, 0)
    score = rng.normal(size=len(trials)) + trials.label.to_numpy()
    for g in range(24):
        at = np.flatnonzero(trials.stratum.to_numpy() == f"g{g}")
        w_s, w_n = boot.speaker.weights(at), boot.pairs.weights(at)
        lab = trials.label.to_numpy()[at].astype(bool)

        s = score[at]

        def effect(w: np.ndarray, s: np.ndarray = s, lab: np.ndarray = lab) -> np.ndarray:
            """A null effect: mean target minus mean non-target score, minus the true 1."""
            with np.errstate(invalid="ignore", divide="ignore"):  # a replicate may lack a class
                return (w[:, lab] @ s[lab]) / w[:, lab].sum(1) - (w[:, ~lab] @ s[~lab]) / w[:, ~lab].sum(1) - 1.0

        est = float(effect(np.ones((1, len(s))))[0])
        reps = effect(w_s)
        lo, hi = np.nanquantile(reps, [0.025, 0.975])
        percentile_hits += bool(lo > 0 or hi < 0)
        found = corrected_interval(est, reps, effect(w_n), boot.correction([at]), boot.speakers(at))
        statuses.append(found["status"])
    out = decide(pd.DataFrame({"p": np.nan, "status": statuses}), "")
    assert (out["status"] == TOO_FEW).all() and not out["resolved"].any()
    assert percentile_hits >= 1  # what the plain percentile interval did on these rows (7 of 24)
