"""Trial-budget planner: hand-checked arithmetic, and achieved power by simulation."""

from __future__ import annotations

import math
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np
import pandas as pd
import pytest
from synthetic_runs import ScoreModel, clustered_scores, clustered_trials, write_run
from typer.testing import CliRunner

from interbias.analysis import planner
from interbias.analysis.effect_names import effect_name
from interbias.analysis.stats.bootstrap import Resampler, TrialDesign, percentile_ci
from interbias.analysis.suite import Options, analyse
from interbias.cli import app
from interbias.metrics import verification as metrics
from interbias.metrics.weighted import metric_batch, sort_cell
from interbias.utils.errors import AnalysisError
from interbias.utils.seeding import derive_rng

MODEL = ScoreModel()
MU_F, MU_M = 2.0, 1.5  # male targets score lower: population EER gap ≈ 0.066
STRATA = ("gender=female", "gender=male")


def _draw(n: int, rng: np.random.Generator) -> tuple[pd.DataFrame, dict[str, tuple[np.ndarray, np.ndarray]]]:
    trials = clustered_trials(dict.fromkeys(STRATA, n), 8, 8)
    cells = {}
    for st, mu in zip(STRATA, (MU_F, MU_M), strict=True):
        part = trials[trials["stratum"] == st]
        cells[st.split("=")[1]] = (part["trial_id"].to_numpy(), clustered_scores(part, MODEL, mu, rng))
    return trials, cells


def _pilot(folder: Path, n: int) -> Path:
    trials, cells = _draw(n, derive_rng("test-planner", "pilot"))
    return write_run(
        folder,
        trials,
        {("enc", (lv,)): v for lv, v in cells.items()},
        [("gender", "population", "female")],
    )


def test_settings_and_needed_speakers_by_hand() -> None:
    s = planner.Settings(effect=0.01, power=0.8, alpha=0.05)
    assert s.z == pytest.approx(1.959964 + 0.841621, abs=1e-5)
    # SE 0.01 at 24 speakers: n = ceil(24 * (2.801585 * 0.01 / 0.01)^2) = ceil(188.37) = 189
    assert planner.speakers_needed(0.01, 24, s) == 189
    assert planner.speakers_needed(0.0001, 24, s) == 2  # at least 2
    assert math.isnan(planner.speakers_needed(0.0, 24, s))
    for bad in ({"effect": 0}, {"power": 1.0}, {"alpha": 0}):
        with pytest.raises(AnalysisError):
            planner.Settings(**bad)


def test_plan_of_a_pilot_run(tmp_path: Path) -> None:
    run = _pilot(tmp_path / "run", 12)
    a = analyse(run, Options(n_boot=200, design="speaker"))  # the plain speaker-bootstrap SE
    plan = planner.plan(a, planner.Settings(effect=0.05))
    assert len(plan) == 1
    row = plan.iloc[0]
    res = pd.read_csv(run / "results.csv")
    assert row["estimate"] == pytest.approx(res.eer.iloc[1] - res.eer.iloc[0])
    se = float(np.std(a.gaps.gap_replicates[0], ddof=1))
    assert row["se"] == pytest.approx(se)
    assert row["mde"] == pytest.approx(2.8015852 * se, rel=1e-6)
    assert row["speakers_per_stratum"] == 12
    assert row["speakers_per_stratum_needed"] == math.ceil(12 * (2.8015852 * se / 0.05) ** 2)
    assert row["target_trials_per_stratum_needed"] == 8 * row["speakers_per_stratum_needed"]
    assert (row["target_trials_per_speaker"], row["nontarget_trials_per_speaker"]) == (8, 8)
    assert bool(row["resolved"]) == (row["lo"] > 0 or row["hi"] < 0)


def test_plan_cli_writes_plan_csv_and_states_the_model(tmp_path: Path) -> None:
    run = _pilot(tmp_path / "run", 12)
    res = CliRunner().invoke(app, ["plan", str(run), "--effect", "0.05", "--bootstrap", "200"])
    assert res.exit_code == 0, res.output
    assert "SE(n) = SE_pilot * sqrt(n_pilot / n)" in res.output and "assumptions:" in res.output
    plan = pd.read_csv(run / "plan.csv")
    assert list(plan.kind) == ["gap"] and plan.speakers_per_stratum_needed.iloc[0] >= 2
    # one row per effect: its long form (effect) and its one name (label), as findings.csv
    assert list(plan.columns[list(plan.columns).index("effect") :][:2]) == ["effect", "label"]
    assert plan.effect.iloc[0].startswith("gap ") and plan.label.iloc[0] == effect_name(plan.iloc[0])
    assert plan.label.iloc[0] == "gender male − female at (none)"  # the pilot has no acoustic factor
    # the pilot is not from the catalogue: the follow-up hint names a placeholder for its YAML
    assert "a follow-up of the planned size: interbias run EXPERIMENT.yaml --plan" in res.output
    bad = CliRunner().invoke(app, ["plan", str(run), "--power", "1.5"])
    assert bad.exit_code == 1 and bad.output.startswith("error: --power must be a finite number in (0, 1), got 1.5")


#: Simulation size: draws of the follow-up run, bootstrap replicates per draw.
DRAWS, BOOT = 200, 100


def test_planned_size_achieves_the_target_power(tmp_path: Path) -> None:
    """Pilot (60 speakers per gender) -> speakers needed for the true gap at power 0.8 -> the
    achieved power of the analysis' own test (95 % speaker-bootstrap interval excludes zero)
    over DRAWS fresh runs of that size is within ±0.07 of 0.8."""
    true_gap = MODEL.population_eer(MU_M) - MODEL.population_eer(MU_F)
    a = analyse(_pilot(tmp_path / "pilot", 60), Options(n_boot=1000, design="speaker"))  # the plain test below
    row = planner.plan(a, planner.Settings(effect=true_gap, power=0.8)).iloc[0]
    need = int(row["speakers_per_stratum_needed"])
    assert 60 < need < 150  # the pilot alone is under-powered
    hits, analytic, estimates = 0, 0, []
    se_planned = row["se"] * math.sqrt(60 / need)
    z = NormalDist().inv_cdf(0.975)
    for r in range(DRAWS):
        trials, cells = _draw(need, derive_rng("test-planner", "draw", r))
        design = TrialDesign.from_frame(trials)
        weights = Resampler(design, n_boot=BOOT, seed=r)
        est, reps = 0.0, np.zeros(BOOT)
        for sign, (ids, scores) in zip((-1, 1), cells.values(), strict=True):
            rows = design.rows(ids)
            est += sign * metrics.eer(scores, design.label[rows])
            reps += sign * metric_batch("eer", sort_cell(scores, design.label[rows]), weights.weights(rows))
        lo, hi, _ = percentile_ci(reps)
        hits += bool(lo > 0 or hi < 0)
        analytic += bool(abs(est) > z * se_planned)
        estimates.append(est)
    power, power_analytic = hits / DRAWS, analytic / DRAWS
    print(
        f"planned {need} speakers/stratum; achieved power {power:.3f} (bootstrap interval), {power_analytic:.3f} (planned SE)"
    )
    print(
        f"SD of estimates {np.std(estimates, ddof=1):.4f}, planned SE {se_planned:.4f}, mean {np.mean(estimates):.4f} vs true {true_gap:.4f}"
    )
    assert abs(power - 0.8) <= 0.07
    assert abs(power_analytic - 0.8) <= 0.07
    assert abs(np.mean(estimates) - true_gap) < 0.005


def test_plan_hint_names_a_catalogued_experiment() -> None:
    from interbias.cli.plan import follow_up_experiment
    from interbias.experiments.schema import load_experiment
    from interbias.utils.paths import conditions_dir

    assert follow_up_experiment(load_experiment(conditions_dir() / "E16.yaml").resolved()["name"]) == "E16"


def test_family_level_and_dev_speakers_by_hand() -> None:
    from interbias.trials.speaker_budget import dev_speakers

    s = planner.Settings(effect=0.01, power=0.8, alpha=0.05, family=True)
    assert s.effect_alpha(75) == pytest.approx(0.05 / 75)
    assert planner.Settings(alpha=0.05).effect_alpha(75) == 0.05  # one effect alone
    z = NormalDist().inv_cdf(1 - 0.05 / 150) + NormalDist().inv_cdf(0.8)
    assert s.z_at(0.05 / 75) == pytest.approx(z, rel=1e-12)
    assert planner.speakers_needed(0.01, 24, s, z=z) == math.ceil(24 * z**2)
    assert planner.speakers_needed(0.0001, 24, s, floor=4) == 4  # never below the experiment's min_speakers
    # dev split: round(n * s / (1 - s)), at least min_speakers; none without a dev split
    assert dev_speakers(40, 0.3, 4) == 17 and dev_speakers(5, 0.1, 4) == 4 and dev_speakers(40, None) == 0


def _flat_plan(folder: Path, n: int, tag: str) -> tuple[Path, Any]:
    """A pilot of ``n`` speakers per gender whose scores never err (targets 10, non-targets 0:
    no bootstrap spread) and ``interbias plan`` on it."""
    trials, cells = _draw(n, derive_rng("test-planner", tag))
    label = dict(zip(trials.trial_id, trials.label, strict=True))
    flat = {k: (ids, np.array([10.0 if label[i] else 0.0 for i in ids])) for k, (ids, _) in cells.items()}
    folder = write_run(
        folder, trials, {("enc", (lv,)): v for lv, v in flat.items()}, [("gender", "population", "female")]
    )
    res = CliRunner().invoke(app, ["plan", str(folder), "--bootstrap", "200"])
    assert res.exit_code == 0, res.output
    return folder, res


def test_plan_never_proposes_what_the_experiment_refuses(tmp_path: Path) -> None:
    """A need below min_speakers (4 in the pilot's experiment) is raised to it; a pilot without
    bootstrap spread gets "no plan (reason)" instead of a follow-up."""
    run = _pilot(tmp_path / "run", 12)
    row = planner.plan(analyse(run, Options(n_boot=200)), planner.Settings(effect=2.0)).iloc[0]
    assert row["speakers_per_stratum_needed"] == 4 and row["note"] == "raised to the experiment's min_speakers 4"
    _, res = _flat_plan(tmp_path / "flat", 6, "flat")
    flat_out = " ".join(res.output.split())
    assert "follow-up: no plan (no effect of the family has bootstrap spread in the pilot" in flat_out
    assert "every stratum has at least 5 speakers (fewest: gender=female, 6), so the metric itself" in flat_out
    assert "a follow-up of the planned size" not in res.output


def test_a_pilot_without_spread_names_its_smallest_stratum_and_the_speakers_it_needs(tmp_path: Path) -> None:
    """3 speakers per stratum and scores that never err: no SE; the plan says which stratum is
    short and how many speakers per stratum a pilot needs (5, the clustered test's minimum, above
    the experiment's min_speakers 4), and ``run --plan`` on that plan.csv says the same."""
    from interbias.trials.speaker_budget import read_plan
    from interbias.utils.errors import ConfigError

    folder, res = _flat_plan(tmp_path / "flat", 3, "flat3")
    hint = (
        "stratum gender=female has 3 speaker(s), the fewest of the pilot's 2 strata; a pilot needs at least 5 "
        "speakers in every stratum: trials: {speakers_per_stratum: 5}"
    )
    assert hint in " ".join(res.output.split())
    plan = pd.read_csv(folder / "plan.csv")
    assert plan.note.str.contains(hint, regex=False).all()
    with pytest.raises(ConfigError) as err:
        read_plan(folder / "plan.csv", str(plan.experiment[0]))
    assert str(err.value).endswith(f"could be planned (no bootstrap spread in the pilot: SE 0 or undefined; {hint})")


def test_speakers_must_be_a_whole_number(tmp_path: Path) -> None:
    """Checked before the run is read (the folder does not exist)."""
    for value, why in (("2.5", "--speakers must be a whole number of speakers per stratum, got 2.5"),
                       ("1", "--speakers must be a whole number >= 2 (speakers per stratum), got 1")):  # fmt: skip
        res = CliRunner().invoke(app, ["plan", str(tmp_path / "none"), "--speakers", value])
        assert res.exit_code == 1 and res.output == f"error: {why}\n", res.output


def test_plan_cli_plans_at_the_family_level_by_default(tmp_path: Path) -> None:
    run = _pilot(tmp_path / "run", 12)
    res = CliRunner().invoke(app, ["plan", str(run), "--effect", "0.05", "--bootstrap", "200"])
    assert "level: family alpha 0.05; each effect planned at alpha/m (0.05/1 = 0.05)" in res.output
    plan = pd.read_csv(run / "plan.csv")
    assert plan.alpha_effect.tolist() == [0.05] and plan.family_size.tolist() == [1]
    res = CliRunner().invoke(app, ["plan", str(run), "--effect", "0.05", "--bootstrap", "200", "--per-effect"])
    assert "level: each effect alone at alpha 0.05" in res.output


def test_a_dev_split_draws_its_own_speaker_count(tmp_path: Path, tiny_corpus) -> None:
    """speakers_per_stratum N counts eval speakers; the dev split draws dev_speakers(N)."""
    from conftest import tiny_experiment

    from interbias.experiments.schema import load_experiment
    from interbias.trials.sampler import draw_trials
    from interbias.trials.speaker_budget import dev_speakers

    block = {"targets": 10, "nontargets": 10, "min_speakers": 2, "dev_share": 0.34, "speakers_per_stratum": 3}
    trials = draw_trials(load_experiment(tiny_experiment(tmp_path, trials=block)), tiny_corpus).frame
    expected = {"eval": 3, "dev": dev_speakers(3, 0.34, 2)}
    assert expected["dev"] == 2  # round(3 * 0.34 / 0.66) = 2: the split's 2 dev speakers suffice
    for (_, split), sub in trials.groupby(["stratum", "split"]):
        assert len(set(sub.enrol_speaker) | set(sub.test_speaker)) == expected[split]


def test_only_the_confirmatory_family_is_planned() -> None:
    """The findings' test_family decides (simple and left-out effects are not planned); without
    it, every effect but simple ones."""
    frame = pd.DataFrame({"kind": ["main", "simple", "gap"], "test_family": ["confirmatory", "simple", "left out"]})
    assert planner.family_members(frame).tolist() == [True, False, False]
    assert planner.family_members(frame.drop(columns="test_family")).tolist() == [True, False, True]


def test_plan_uses_the_findings_t_test(tmp_path: Path) -> None:
    """The corrected design's findings test with Student's t at the effect's Satterthwaite df:
    the plan's multiplier λ is the noncentral t's at that df averaged over the pilot SE's own
    uncertainty (tests/test_planner_stated_power.py), above the textbook t quantiles (which at
    df 45 and alpha 0.01 are 7 % above z's); the plain design (no df) keeps the normal."""
    from scipy import stats

    s = planner.Settings(effect=0.05, power=0.8, family=True)
    textbook = stats.t.ppf(0.995, 45) + stats.t.ppf(0.8, 45)
    assert textbook == pytest.approx(2.6896 + 0.8497, abs=1e-3)  # t tables
    assert planner.textbook_ncp(0.01, 0.8, 45.0) == pytest.approx(textbook, rel=1e-12)
    assert s.z_at(0.01, 45.0) == pytest.approx(planner.planned_ncp(0.01, 0.8, 45.0)) and s.z_at(0.01, 45.0) > textbook
    assert s.z_at(0.01, math.inf) == s.z_at(0.01) == pytest.approx(2.5758 + 0.8416, abs=1e-4)
    run = _pilot(tmp_path / "run", 12)
    row = planner.plan(analyse(run, Options(n_boot=200)), s).iloc[0]
    df = float(row["df"])
    assert row["interval"] == "wald" and 2 < df < 1e6
    q = planner.planned_ncp(0.05, 0.8, planner.df_floor(df))  # family of one: alpha/m = 0.05
    assert planner.expected_power(q, 0.05, planner.df_floor(df)) == pytest.approx(0.8, abs=1e-6)
    assert row["mde"] == pytest.approx(q * row["se"], rel=1e-9)
    assert row["speakers_per_stratum_needed"] == max(4, math.ceil(12 * (q * row["se"] / 0.05) ** 2))
    frame = pd.DataFrame({"df": [30.0, np.nan, 30.0], "interval": ["wald", "wald", "bc"]})
    assert planner.findings_df(frame).tolist() == [30.0, math.inf, math.inf]
