"""One wording of a finding's decision beside its interval (interbias.analysis.verdict), from the
findings' own decide(): an unadjusted 95 % interval that excludes 0 beside "not resolved" says
that it is unadjusted and that Holm over the family decided; the Holm p-values against
statsmodels, the t interval against scipy."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import t as student_t
from statsmodels.stats.multitest import multipletests

from interbias.analysis.effects import COLUMNS, decide
from interbias.analysis.verdict import verdict_text


def _collected(estimates: list[float], se: float = 0.01, df: float = 30.0) -> pd.DataFrame:
    n = len(estimates)
    q = student_t.ppf(0.975, df)
    est = np.array(estimates)
    frame = pd.DataFrame({c: [np.nan] * n for c in COLUMNS if c not in ("verdict",)})
    frame = frame.assign(
        experiment="X", model="M", family="", kind="main", effect=[f"e{i}" for i in range(n)], group="",
        condition="", reference="", metric="eer", value_from=0.1, value_to=0.1 + est, estimate=est,
        lo=est - q * se, hi=est + q * se, se=se, se_speaker=se, df=df, interval="wald",
        test_family="confirmatory", note="",
        p_value=2 * student_t.sf(np.abs(est) / se, df),
    )  # fmt: skip
    return frame


def test_an_unadjusted_interval_that_excludes_0_is_said_to_be_unadjusted() -> None:
    # t = 6.0, 2.5, 0.5 on 30 df: p < 0.001, 0.018, 0.62; Holm over 3: < 0.001, 0.036, 0.62
    out = decide(_collected([0.06, 0.025, 0.005]), 0.05, "holm")
    want = multipletests(out["p_value"], method="holm")[1]
    np.testing.assert_allclose(out["p_adjusted"], want, rtol=1e-12)
    assert out["resolved"].tolist() == [True, True, False]
    assert out.verdict[0] == "resolved after Holm over 3 (adjusted p < 0.001)"
    # a family of 6 whose second row is resolved alone but not after Holm
    six = decide(_collected([0.06, 0.023, 0.005, 0.004, 0.003, 0.002]), 0.05, "holm")
    row = six.iloc[1]
    assert row.lo > 0 and row.p_value < 0.05 and row.p_adjusted > 0.05 and not row.resolved
    assert row.verdict == (
        f"not resolved after Holm over 6 (adjusted p {row.p_adjusted:.3f}; the interval, per effect and "
        "unadjusted, excludes 0)"
    )
    assert six.iloc[2].verdict == f"not resolved after Holm over 6 (adjusted p {six.iloc[2].p_adjusted:.3f})"
    # the rule never writes "not resolved" beside an interval that excludes 0 without saying why
    for r in six.itertuples(index=False):
        if not r.resolved and (r.lo > 0 or r.hi < 0):
            assert "unadjusted, excludes 0" in r.verdict


def test_no_interval_left_out_and_one_effect() -> None:
    assert verdict_text({"lo": np.nan, "hi": np.nan, "p_adjusted": np.nan}) == "no interval"
    assert verdict_text({"test_family": "left out", "lo": 0.1, "hi": 0.2}) == "not tested (left out of the family)"
    one = decide(_collected([0.025]), 0.05, "holm").iloc[0]
    assert one.verdict == f"resolved (p {one.p_adjusted:.3f})" and one.p_adjusted == pytest.approx(one.p_value)
