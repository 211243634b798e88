"""ASV + CM fusion: the sum of LLRs and the product of posteriors written out, their a-DCF per
(condition, group) against a brute-force a-DCF over every threshold, the t-EER per slice."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from interbias.metrics.sasv import ADCFCost, t_eer
from interbias.metrics.sasv_fusion import product_fusion, sasv_table, sum_fusion
from interbias.utils.errors import MetricError
from interbias.utils.seeding import derive_rng


def brute_a_dcf(tar: np.ndarray, non: np.ndarray, spf: np.ndarray, c: ADCFCost) -> float:
    best = np.inf
    for t in [*np.concatenate([tar, non, spf]), np.inf]:
        cost = c.c_miss * c.p_tar * np.mean(tar < t) + c.c_fa_asv * c.p_non * np.mean(non >= t)
        best = min(best, (cost + c.c_fa_cm * c.p_spf * np.mean(spf >= t)) / c.norm)
    return float(best)


def trials(seed: str) -> pd.DataFrame:
    rng = derive_rng("sasv-fusion", seed)
    rows = []
    for cond in ("clean", "noise"):
        for group in ("female", "male"):
            shift = 1.0 if cond == "noise" else 0.0
            for key, asv_mu, cm_mu, n in (("target", 3, 2, 40), ("nontarget", -3, 2, 60), ("spoof", 2, -2, 50)):
                asv = rng.normal(asv_mu - shift * (key == "target"), 1.5, n)
                cm = rng.normal(cm_mu - shift * (key != "spoof"), 1.5, n)
                rows += [(cond, group, key, a, m) for a, m in zip(asv, cm, strict=True)]
    return pd.DataFrame(rows, columns=["condition", "group", "key", "asv_llr", "cm_llr"])


def test_fusions_are_the_written_formulas() -> None:
    a, m = np.array([-2.0, 0.0, 3.0]), np.array([1.0, -1.0, 0.5])
    assert np.allclose(sum_fusion(a, m), a + m)
    sig = lambda z: 1 / (1 + np.exp(-z))  # noqa: E731
    assert np.allclose(product_fusion(a, m), sig(a) * sig(m))
    assert np.allclose(product_fusion(a, m, prior_asv=0.2, prior_cm=0.9), sig(a + np.log(0.25)) * sig(m + np.log(9)))
    with pytest.raises(MetricError, match=r"prior_cm 1\.0 is outside"):
        product_fusion(a, m, prior_cm=1.0)


def test_table_per_condition_and_group_equals_brute_force() -> None:
    frame = trials("a")
    table = sasv_table(frame, ["condition", "group"])
    assert len(table) == 4
    cost = ADCFCost()
    for r in table.itertuples():
        part = frame[(frame.condition == r.condition) & (frame.group == r.group)]
        by = {k: part[part.key == k] for k in ("target", "nontarget", "spoof")}
        s = {k: p.asv_llr.to_numpy() + p.cm_llr.to_numpy() for k, p in by.items()}
        prod = {k: product_fusion(p.asv_llr, p.cm_llr) for k, p in by.items()}
        assert r.a_dcf_sum == pytest.approx(brute_a_dcf(s["target"], s["nontarget"], s["spoof"], cost))
        assert r.a_dcf_product == pytest.approx(brute_a_dcf(prod["target"], prod["nontarget"], prod["spoof"], cost))
        bona = pd.concat([by["target"], by["nontarget"]])
        want = t_eer(
            by["target"].asv_llr, by["nontarget"].asv_llr, by["spoof"].asv_llr, bona.cm_llr, by["spoof"].cm_llr
        )
        assert r.t_eer == want.t_eer and (r.n_target, r.n_nontarget, r.n_spoof) == (40, 60, 50)
    noisy = table.set_index(["condition", "group"])
    assert (noisy.loc["noise"].a_dcf_sum > noisy.loc["clean"].a_dcf_sum).all()


def test_slice_without_spoofs_is_refused() -> None:
    frame = trials("b")
    frame = frame[~((frame.group == "male") & (frame.key == "spoof"))]
    with pytest.raises(MetricError, match="needs target, nontarget and spoof trials"):
        sasv_table(frame, ["group"])


def test_cli_prints_the_table_and_refuses_bad_files_in_one_line(tmp_path) -> None:
    import json

    from typer.testing import CliRunner

    from interbias.cli import app

    path = tmp_path / "trials.csv"
    frame = trials("c")
    frame.to_csv(path, index=False)
    res = CliRunner().invoke(
        app, ["scores", "cm-eval", "sasv-fusion", str(path), "--by", "condition", "--by", "group", "--json"]
    )
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)
    want = sasv_table(frame, ["condition", "group"])
    assert [r["a_dcf_sum"] for r in rows] == pytest.approx(want.a_dcf_sum.tolist())
    frame.loc[3, "key"] = "bonafide"
    frame.to_csv(path, index=False)
    res = CliRunner().invoke(app, ["scores", "cm-eval", "sasv-fusion", str(path)])
    assert res.exit_code == 1 and res.output.strip().count("\n") == 0
    assert "key 'bonafide' is not one of target, nontarget, spoof" in res.output
