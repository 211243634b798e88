"""Holm, BH and the bootstrap Wald p-value against independent references (statsmodels, scipy)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm
from statsmodels.stats.multitest import multipletests

from interbias.analysis.stats import multiplicity as mt
from interbias.utils.errors import AnalysisError
from interbias.utils.seeding import derive_rng

CASES = {
    "uniform": derive_rng("test-multiplicity", "uniform").uniform(0, 1, 39),
    "small": np.array([0.001, 0.2, 0.04, 0.03, 0.5]),
    "ties": np.array([0.01, 0.01, 0.01, 0.04, 0.04, 1.0]),
    "one": np.array([0.03]),
    "all_ones": np.ones(4),
    "zeros": np.array([0.0, 0.0, 0.5]),
    "mixed": np.concatenate([derive_rng("test-multiplicity", "mixed").uniform(0, 1e-3, 10), np.linspace(0, 1, 30)]),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize(("ours", "theirs"), [("holm", "holm"), ("bh", "fdr_bh")])
def test_adjustment_matches_statsmodels(case: str, ours: str, theirs: str) -> None:
    p = CASES[case]
    want = multipletests(p, alpha=0.05, method=theirs)[1]
    assert mt.adjust(p, ours) == pytest.approx(want, abs=1e-12)


def test_nan_counts_as_one_and_stays_nan() -> None:
    p = np.array([0.01, np.nan, 0.02])
    want = multipletests([0.01, 1.0, 0.02], method="holm")[1]
    got = mt.adjust(p, "holm")
    assert np.isnan(got[1]) and got[[0, 2]] == pytest.approx(want[[0, 2]])
    assert mt.adjust(np.array([]), "bh").size == 0
    assert mt.adjust(p, "none")[0] == 0.01


def test_unknown_method_is_refused() -> None:
    with pytest.raises(AnalysisError, match=r"--adjust 'bonferroni': valid: holm, bh, none"):
        mt.adjust(np.array([0.1]), "bonferroni")


def test_wald_p_and_se_against_scipy() -> None:
    reps = derive_rng("test-multiplicity", "reps").normal(0.02, 0.01, (3, 500))
    reps[2, :5] = np.nan
    se = mt.bootstrap_se(reps)
    assert se == pytest.approx([np.std(r[np.isfinite(r)], ddof=1) for r in reps])
    est = np.array([0.02, -0.03, 0.0])
    assert mt.wald_p(est, se) == pytest.approx(2 * norm.sf(np.abs(est) / se))
    # no spread (or rounding noise only): no p-value
    flat = np.full((1, 50), 0.3) + np.tile([0.0, 5e-17], 25)
    assert mt.bootstrap_se(flat)[0] == 0 and np.isnan(mt.wald_p(np.array([0.3]), mt.bootstrap_se(flat)))[0]


def test_simultaneous_halfwidth_is_bonferroni() -> None:
    assert mt.simultaneous_halfwidth(np.array([1.0]), 0.05, 39)[0] == pytest.approx(norm.ppf(1 - 0.05 / 78))
    assert mt.simultaneous_halfwidth(np.array([2.0]), 0.05, 1)[0] == pytest.approx(2 * norm.ppf(0.975))
