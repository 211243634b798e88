"""Attack success by group (interbias.analysis.security.attacks) on a hand-made attacks table: rates,
speaker-bootstrap replicates recomputed from the speaker counts by hand, gaps and gap changes."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from interbias.analysis.security.attacks import attack_analysis, replicates
from interbias.analysis.stats.bootstrap import Resampler, TrialDesign
from interbias.utils.seeding import derive_rng

FACTORS = [
    {"name": "gender", "type": "population", "reference": "female"},
    {"name": "channel", "type": "acoustic", "reference": "clean"},
]


def table() -> pd.DataFrame:
    """12 impostor trials per gender (distinct speaker pairs among 6 speakers), two channels, one budget."""
    rng = derive_rng("attack-table")
    rows = []
    tid = 0
    for gender, p in (("female", 0.8), ("male", 0.3)):
        spk = [f"{gender[0]}{i}" for i in range(6)]
        for k in range(12):
            e, t = spk[k % 6], spk[(k + 1 + k // 6) % 6]
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
    reps = replicates(t, 60, 3)
    design = TrialDesign.from_frame(t.drop_duplicates("trial_id"))
    counts = Resampler(design, n_boot=60, seed=3).speaker_counts()
    index = {s: i for i, s in enumerate(design.speakers)}
    for key, sub in t.groupby(["model", "cell", "kind", "method", "norm", "budget"]):
        rate, r = reps[key]
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
    assert clean["ci_low"] <= clean["estimate"] <= clean["ci_high"]
    reps = replicates(t, 200, 3)
    key = ("M", "gender=male,channel=clean", "impostor", "pgd", "linf", 0.002)
    ref = ("M", "gender=female,channel=clean", "impostor", "pgd", "linf", 0.002)
    diff = reps[key][1] - reps[ref][1]
    assert clean["p_boot"] == pytest.approx(min(1, 2 * min((diff <= 0).mean(), (diff >= 0).mean())))
    m = len(gaps)
    ordered = np.sort(gaps["p_boot"].to_numpy())
    holm = np.maximum.accumulate(np.minimum(1, (m - np.arange(m)) * ordered))
    np.testing.assert_allclose(np.sort(gaps["p_holm"].to_numpy()), holm)
    assert (gaps["resolved"].astype(str) == (gaps["p_holm"] < 0.05).astype(str)).all()
    change = gaps[gaps["term"] == "gap_change"].iloc[0]
    assert change["versus"] == "channel=amr_nb"
    want = (rate[("male", "amr_nb")] - rate[("female", "amr_nb")]) - (
        rate[("male", "clean")] - rate[("female", "clean")]
    )
    assert change["estimate"] == pytest.approx(want)
    assert (tmp_path / "attack_curves.png").read_bytes()[:4] == b"\x89PNG"


def test_no_attacks_file_means_no_analysis(tmp_path):
    assert attack_analysis(tmp_path, json.loads('{"factors": []}')) is None
