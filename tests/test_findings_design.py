"""The findings' design: main effects averaged over the other factors, simple effects on request,
the corrected speaker-bootstrap SE, intervals that agree with their p-values for every metric,
DCF operating points the run cannot support left out, and no numbers where no interval exists."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from synthetic_runs import gender_noise_run, pattern_run
from typer.testing import CliRunner

from interbias.analysis.reporting.headline import headline
from interbias.analysis.stats import multiplicity as mt
from interbias.analysis.stats.bootstrap import Resampler
from interbias.analysis.stats.replicates import bootstrap_cells
from interbias.analysis.suite import ANALYSIS_METRICS, Options, analyse, findings
from interbias.cli import app
from interbias.metrics.weighted_llr import SharedCalibration
from interbias.run.rundir import CalibrationRecord
from interbias.utils.paths import slug
from interbias.utils.seeding import derive_rng

NOISE = {"clean": 2.4, "n10": 1.6, "n5": 1.2}
CALIBRATION = {
    "fit_on": "reference",
    "measured": True,
    "models": {"enc": {"slope": 1.2, "offset": -1.5}},
    "operating_points": [{"p_target": 0.1, "c_miss": 1.0, "c_fa": 1.0}],
}


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """Gender × 3 noise levels, one model, 16 speakers per gender, 8 + 8 trials per speaker, with
    a shared calibration at p_target 0.1 (128 non-targets a cell: 12.8 expected false alarms)."""
    folder = tmp_path_factory.mktemp("design") / "run"
    means = {
        "enc": {(g, nz): mu + (0.3 if g == "male" else 0.0) for g in ("female", "male") for nz, mu in NOISE.items()}
    }
    gender_noise_run(folder, means, n=16, m=8, run_json={"run_id": "design", "calibration": CALIBRATION})
    res = pd.read_csv(folder / "results.csv")
    cal = SharedCalibration.of_run(CalibrationRecord.from_json(CALIBRATION), "enc")
    for metric in ("act_dcf", "cllr", "calibration_loss"):
        vals = []
        for cell in res["cell"]:
            sc = pd.read_parquet(folder / "scores" / slug("enc") / f"{slug(cell)}.parquet")
            vals.append(cal.value(metric, sc["score"].to_numpy(), sc["label"].to_numpy(bool)))
        res[metric] = vals
    res.to_csv(folder / "results.csv", index=False)
    return folder


def test_bc_interval_excludes_zero_exactly_when_its_p_is_below_the_level() -> None:
    rng = derive_rng("test", "bc-interval")
    for i in range(300):
        reps = rng.gamma(2.0, 1.0, 400) * rng.choice([-1, 1]) * 0.01 + rng.normal(0, 0.02)
        est = float(np.median(reps) + rng.normal(0, 0.005))
        levels = (0.95, 1 - 0.05 / 20)
        bounds, p = mt.bc_interval(est, reps, float(rng.uniform(0.5, 1.0)), levels)
        for (lo, hi), level in zip(bounds, levels, strict=True):
            assert (lo > 0 or hi < 0) == (p < 1 - level), (i, lo, hi, p)
    # symmetric replicates centred on the estimate: the BC interval is the percentile one
    reps = derive_rng("test", "bc-normal").normal(0.3, 0.1, 4000)
    (b,), p = mt.bc_interval(float(np.median(reps)), reps, 1.0, (0.95,))
    assert b == pytest.approx(tuple(np.quantile(reps, [0.025, 0.975])), abs=0.004)
    assert p == pytest.approx(mt.wald_p(np.array([0.3]), np.array([0.1]))[0], rel=0.3)


@pytest.mark.parametrize("metric", ANALYSIS_METRICS)
def test_every_interval_agrees_with_its_p_value(run: Path, metric: str) -> None:
    f = findings(analyse(run, Options(metric=metric, n_boot=200)))
    tested = f[f.p_value.notna()]
    assert len(tested) >= 5
    excl = (tested.lo > 0) | (tested.hi < 0)
    assert (excl == (tested.p_value < 0.05)).all()
    fam = tested[tested.test_family == "confirmatory"]
    bonferroni = np.minimum(1, fam.p_value * fam.family_size)
    assert (((fam.lo_simultaneous > 0) | (fam.hi_simultaneous < 0)) == (bonferroni < 0.05)).all()
    assert set(f.interval) == {"bc" if metric in ("min_dcf", "act_dcf", "calibration_loss") else "wald"}


def test_operating_points_the_run_cannot_support_stay_out_of_the_family(run: Path) -> None:
    a = analyse(run, Options(metric="min_dcf", n_boot=100))  # p_target 0.01 x 128 non-targets = 1.28
    h = headline(a)
    f = h.findings
    assert (f.test_family == "left out").all() and not f.resolved.any() and f.p_adjusted.isna().all()
    assert (f.family_size == 0).all()
    assert (  # the planner keeps the findings' reason in front of its own
        "left out of the family: n_nontarget x p_target = 1.28 < 10 in a cell "
        "(too few non-target trials for this operating point)" in f.note.iloc[0]
    )
    assert (
        f"(S01: 0 effects () over 1 model(s); {len(f)} left out of it: n_nontarget x p_target < 10 in a cell"
        in h.lines[0]
    )
    act = findings(analyse(run, Options(metric="act_dcf", n_boot=100)))  # p_target 0.1: 12.8, supported
    assert (act.test_family == "confirmatory").all()


def test_main_effects_are_equal_weight_averages_with_the_corrected_se(run: Path) -> None:
    a = analyse(run, Options(n_boot=200))
    f = findings(a).set_index("effect")
    eer = a.results.set_index(["level_a", "level_b"])["eer"]
    for nz in ("n10", "n5"):
        r = f.loc[f"main noise={nz} − noise=clean (averaged over gender)"]
        want = np.mean([eer[(g, nz)] - eer[(g, "clean")] for g in ("female", "male")])
        assert r.kind == "main" and r.estimate == pytest.approx(want) and r.test_family == "confirmatory"
    r = f.loc["main gender=male − gender=female (averaged over noise)"]
    assert r.estimate == pytest.approx(np.mean([eer[("male", nz)] - eer[("female", nz)] for nz in NOISE]))
    # the SE by hand: V_S from the speaker replicates, V_N from a fresh non-target-trial resample
    cell = dict(zip(zip(a.results.level_a, a.results.level_b, strict=True), a.results.cell, strict=True))

    def combo(values: dict) -> np.ndarray:
        return sum(
            (values[("S01", "enc", cell[(g, nz)])] - values[("S01", "enc", cell[(g, "clean")])]) / 2
            for g in ("female", "male")
            for nz in ("n5",)
        )

    nt = bootstrap_cells(a.results, a.run, "eer", Resampler(a.run.design(), n_boot=200, seed=0, unit="nontarget"))
    v_s, v_n = np.var(combo(a.replicates.values), ddof=1), np.var(combo(nt.values), ddof=1)
    n, k = 16, 7.5  # speakers per gender block; distinct non-target pairs per speaker: (16·7 + 8) / 16
    se = math.sqrt(n / (n - 1) * v_s - (1 + (1 - 2 / k) / (1 - 1 / n)) * v_n)
    r = f.loc["main noise=n5 − noise=clean (averaged over gender)"]
    assert r.se == pytest.approx(se, rel=1e-9) and r.se_speaker == pytest.approx(math.sqrt(v_s), rel=1e-9)
    a_, c_ = n / (n - 1), 1 + (1 - 2 / k) / (1 - 1 / n)
    nu_s, nu_n = 1 / (1 / 30 + 1 / 199), 1 / (1 / 119 + 1 / 199)  # 2 x (16 - 1) speakers; 120 pairs - 1
    df = se**4 / ((a_ * v_s - (c_ - 1) * v_n) ** 2 / nu_s + v_n**2 / nu_n)  # Satterthwaite, speaker + pair parts
    assert r.df == pytest.approx(df, rel=1e-9)
    assert r.lo == pytest.approx(r.estimate - stats.t.ppf(0.975, df) * se, rel=1e-6)
    assert r.p_value == pytest.approx(2 * stats.t.sf(abs(r.estimate) / se, df), rel=1e-6)
    plain = findings(analyse(run, Options(n_boot=200, design="speaker"))).set_index("effect")
    assert plain.loc[r.name].se == pytest.approx(math.sqrt(v_s), rel=1e-9)


def test_nontarget_weights_redraw_speaker_pairs_within_blocks_and_fix_targets(run: Path) -> None:
    a = analyse(run, Options())
    d = a.run.design()
    w = Resampler(d, n_boot=20, seed=3, unit="nontarget").weights(np.arange(len(d.trial_id)))
    assert (w[:, d.label] == 1).all()
    pair = [frozenset(p) for p in zip(d.enrol.tolist(), d.test.tolist(), strict=True)]
    for st in set(d.stratum.tolist()):  # one block per gender: pairs never cross strata here
        first: dict[frozenset, int] = {}
        for i in np.flatnonzero((d.stratum == st) & ~d.label):
            if pair[i] in first:  # every trial of a pair carries the pair's count
                assert (w[:, i] == w[:, first[pair[i]]]).all()
            first.setdefault(pair[i], i)
        counts = w[:, list(first.values())]
        assert (counts.sum(axis=1) == len(first)).all() and (counts != 1).any()


def test_simple_effects_come_on_request_outside_the_family(run: Path) -> None:
    base = findings(analyse(run, Options(n_boot=100)))
    f = findings(analyse(run, Options(n_boot=100, simple=True)))
    simple = f[f.kind == "simple"]
    assert len(simple) == 4 and (simple.test_family == "simple").all() and (simple.family_size == 4).all()
    assert set(simple.effect) == {
        f"simple noise={nz} − noise=clean at gender={g}" for nz in ("n10", "n5") for g in ("female", "male")
    }
    conf = f[f.test_family == "confirmatory"].reset_index(drop=True)
    assert conf.p_adjusted.tolist() == base.p_adjusted.tolist() and (conf.family_size == len(base)).all()
    eer = analyse(run, Options()).results.set_index("cell")["eer"]
    r = simple.set_index("effect").loc["simple noise=n5 − noise=clean at gender=male"]
    assert r.estimate == pytest.approx(eer["gender=male,noise=n5"] - eer["gender=male,noise=clean"])


def test_zero_spread_shows_no_interval_on_the_console_and_in_the_report(tmp_path: Path) -> None:
    folder = pattern_run(tmp_path / "run", 6, {"A": {"clean": "perfect", "n10": "third"}})
    res = CliRunner().invoke(app, ["analyze", str(folder), "--bootstrap", "200", "--out", str(tmp_path / "a")])
    assert res.exit_code == 0, res.output
    flat = " ".join(res.output.split())  # the console wraps lines to its width
    assert "1 unresolved, none can be planned (no bootstrap spread)" in flat
    assert "no interval for A: the bootstrap replicates do not vary" in flat  # the macro table: no lo = hi
    assert "0.167 │ 0.167 │ 0.167" not in res.output and "MDE 0.0" not in res.output
    f = pd.read_csv(tmp_path / "a" / "findings.csv")
    assert f.note[0].startswith("no interval: the bootstrap replicates do not vary (too few speakers per stratum)")
    assert f[["lo", "hi", "se", "p_value", "mde"]].isna().all().all()
    res = CliRunner().invoke(app, ["report", str(folder), "--bootstrap", "200", "--out", str(tmp_path / "r")])
    assert res.exit_code == 0, res.output
    md = (tmp_path / "r" / "report.md").read_text()
    found = md.split("## Findings", 1)[1].split("\n## ", 1)[0]
    assert "| no interval: the bootstrap replicates do not vary" in found and "0.000 | 0.000" not in found
    assert "[0.000, 0.000]" not in md and " (no interval: the replicates do not vary)" in md


def test_bc_p_value_with_replicates_equal_to_zero() -> None:
    """Ties at 0 (discrete costs): still an interval that excludes 0 exactly when p < 1 − level."""
    rng = derive_rng("test", "bc-ties")
    for i in range(300):
        reps = np.round(rng.normal(rng.normal(0, 0.05), 0.05, 200), 1)  # many replicates exactly 0
        est = float(np.round(rng.normal(0, 0.05), 1))
        for level in (0.5, 0.9, 0.95):
            (b,), p = mt.bc_interval(est, reps, 1.0, (level,))
            assert (b[0] > 0 or b[1] < 0) == (p < 1 - level), (i, b, p)
    for reps in (np.zeros(50), -np.abs(np.arange(50.0)), np.abs(np.arange(50.0))):
        (b,), p = mt.bc_interval(0.0, reps, 1.0, (0.95,))
        assert (b[0] > 0 or b[1] < 0) == (p < 0.05)


def test_cli_design_and_simple_options(run: Path, tmp_path: Path) -> None:
    res = CliRunner().invoke(
        app,
        ["analyze", str(run), "--bootstrap", "50", "--bootstrap-design", "speaker", "--out", str(tmp_path / "a"), "-q"],
    )
    assert res.exit_code == 0, res.output
    f = pd.read_csv(tmp_path / "a" / "findings.csv")
    assert (f.se == f.se_speaker).all() and f["df"].isna().all() and not (f.kind == "simple").any()
    means = {"enc": {(g, nz): mu for g in ("female", "male") for nz, mu in NOISE.items()}}
    plain = gender_noise_run(tmp_path / "plain", means, n=16, m=8)  # no calibration record
    res = CliRunner().invoke(
        app, ["report", str(plain), "--bootstrap", "200", "--simple", "--out", str(tmp_path / "r")]
    )
    assert res.exit_code == 0, res.output
    md = (tmp_path / "r" / "report.md").read_text()
    assert "4 simple effect(s) outside it, adjusted among themselves" in md
    assert "noise n5 − clean at " in md  # a resolved simple effect, as a sentence, under its one name
