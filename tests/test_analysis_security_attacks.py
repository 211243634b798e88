"""Attack success by group (interbias.analysis.security.attacks) on a hand-made attacks table: rates,
speaker-bootstrap replicates recomputed from the speaker counts by hand, gaps and gap changes
with the project's one interval rule (corrected-SE t interval recomputed here from the
replicates, Holm against statsmodels, too few speakers never resolved)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy.stats import t as student_t
from statsmodels.stats.multitest import multipletests

from interbias.analysis.security.attacks import attack_analysis, replicates
from interbias.analysis.stats.bootstrap import Resampler, TrialDesign
from interbias.utils.seeding import derive_rng

FACTORS = [
    {"name": "gender", "type": "population", "reference": "female"},
    {"name": "channel", "type": "acoustic", "reference": "clean"},
]


def table(n_spk: int = 6) -> pd.DataFrame:
    """2·n_spk impostor trials per gender (distinct speaker pairs among n_spk speakers), two channels, one budget."""
    rng = derive_rng("attack-table", str(n_spk))
    rows = []
    tid = 0
    for gender, p in (("female", 0.8), ("male", 0.3)):
        spk = [f"{gender[0]}{i}" for i in range(n_spk)]
        for k in range(2 * n_spk):
            e, t = spk[k % n_spk], spk[(k + 1 + k // n_spk) % n_spk]
            tid += 1
            for channel, q in (("clean", 1.0), ("amr_nb", 0.5)):
                rows.append(
                    {
                        "model": "M",
                        "cell": f"gender={gender},channel={channel}",
                        "gender": gender,
                        "channel": channel,
                        "stratum": f"gender={gender}",
                        "kind": "impostor",
                        "method": "pgd",
                        "norm": "linf",
                        "budget": 0.002,
                        "trial_id": tid,
                        "enrol_speaker": e,
                        "test_speaker": t,
                        "label": 0,
                        "success": int(rng.random() < p * q),
                        "linf": 0.002,
                        "snr_db": 40.0,
                        "queries": 0,
                    }
                )
    return pd.DataFrame(rows)


def test_replicates_are_speaker_weighted_rates():
    t = table()
    _, reps = replicates(t, 60, 3)
    design = TrialDesign.from_frame(t.drop_duplicates("trial_id"))
    counts = Resampler(design, n_boot=60, seed=3).speaker_counts()
    index = {s: i for i, s in enumerate(design.speakers)}
    for key, sub in t.groupby(["model", "cell", "kind", "method", "norm", "budget"]):
        rate, r = reps[key].rate, reps[key].speaker
        assert rate == pytest.approx(sub["success"].mean())
        # by hand: a non-target trial between e and t counts c_e · c_t times
        e = sub["enrol_speaker"].map(index).to_numpy()
        s = sub["test_speaker"].map(index).to_numpy()
        w = counts[:, e] * counts[:, s]
        with np.errstate(invalid="ignore"):
            want = (w * sub["success"].to_numpy()).sum(1) / w.sum(1)
        np.testing.assert_allclose(r, np.where(w.sum(1) > 0, want, np.nan))


def test_written_tables_give_gaps_and_their_change_under_the_channel(tmp_path):
    t = table()
    t.to_csv(tmp_path / "attacks.csv", index=False)
    names = attack_analysis(tmp_path, {"factors": FACTORS, "seed": 3}, n_boot=200)
    assert names == ["attack_summary.csv", "attack_gaps.csv", "attack_curves.png"]
    summary = pd.read_csv(tmp_path / "attack_summary.csv")
    rate = {(r.gender, r.channel): r.success_rate for r in summary.itertuples()}
    gaps = pd.read_csv(tmp_path / "attack_gaps.csv", keep_default_na=False)
    clean = gaps[(gaps["term"] == "gap") & (gaps["cell"] == "gender=male,channel=clean")].iloc[0]
    assert clean["estimate"] == pytest.approx(rate[("male", "clean")] - rate[("female", "clean")])
    boot, reps = replicates(t, 200, 3)
    key = ("M", "gender=male,channel=clean", "impostor", "pgd", "linf", 0.002)
    ref = ("M", "gender=female,channel=clean", "impostor", "pgd", "linf", 0.002)
    # the corrected-SE t interval by hand from the two rates' replicates
    v_s = np.var(reps[key].speaker - reps[ref].speaker, ddof=1)
    v_n = np.var(reps[key].pairs - reps[ref].pairs, ddof=1)
    corr = boot.correction([reps[key].rows, reps[ref].rows])
    a, c = corr.factors
    se = np.sqrt(a * v_s - c * v_n)
    df = corr.df(np.array([v_s]), np.array([v_n]), 200)[0]
    q = student_t.ppf(0.975, df)
    assert clean["se"] == pytest.approx(se, rel=1e-10) and clean["df"] == pytest.approx(df, rel=1e-10)
    assert (clean["lo"], clean["hi"]) == pytest.approx((clean["estimate"] - q * se, clean["estimate"] + q * se))
    assert clean["p"] == pytest.approx(2 * student_t.sf(abs(clean["estimate"]) / se, df), rel=1e-8)
    assert clean["speakers"] == 6
    tested = gaps["status"].isin(["resolved", "not resolved"])
    want = multipletests(gaps.loc[tested, "p"].astype(float), method="holm")[1]
    np.testing.assert_allclose(gaps.loc[tested, "p_holm"].astype(float), want)
    assert (
        gaps.loc[tested, "resolved"].astype(str) == (gaps.loc[tested, "p_holm"].astype(float) < 0.05).astype(str)
    ).all()
    change = gaps[gaps["term"] == "gap_change"].iloc[0]
    assert change["versus"] == "channel=amr_nb"
    want = (rate[("male", "amr_nb")] - rate[("female", "amr_nb")]) - (
        rate[("male", "clean")] - rate[("female", "clean")]
    )
    assert change["estimate"] == pytest.approx(want)
    assert (tmp_path / "attack_curves.png").read_bytes()[:4] == b"\x89PNG"


def test_gaps_of_cells_with_too_few_speakers_are_never_resolved(tmp_path):
    """3 speakers per gender (the E26 per-accent case): every gap and change is "too few
    speakers", with no interval and no p-value, outside the Holm family; the report says so."""
    from interbias.analysis.reporting.document import Report
    from interbias.analysis.security.attacks import attack_section

    t = table(3)
    t.to_csv(tmp_path / "attacks.csv", index=False)
    attack_analysis(tmp_path, {"factors": FACTORS, "seed": 3}, n_boot=200)
    gaps = pd.read_csv(tmp_path / "attack_gaps.csv")
    assert len(gaps) == 3 and (gaps["status"] == "too few speakers").all() and not gaps["resolved"].any()
    assert gaps[["lo", "hi", "p", "p_holm"]].isna().all().all() and (gaps["speakers"] == 3).all()
    rep = Report("t")
    attack_section(tmp_path, rep)
    text = " ".join(str(payload) for kind, payload in rep.blocks if kind == "p")
    assert "0 of 3 resolved after Holm over the 0 tested; 3 with too few speakers" in text


def test_no_attacks_file_means_no_analysis(tmp_path):
    assert attack_analysis(tmp_path, json.loads('{"factors": []}')) is None
