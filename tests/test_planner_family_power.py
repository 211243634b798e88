"""The planner's power to be *resolved* in the findings, end to end at the default settings:
SIMS passes of: a pilot run (60 speakers per stratum) of a small E16-like design (gender ×
noise at two levels, one model) → ``plan`` on the pilot's findings at the family level (each
effect at α/m, Holm's worst case; corrected bootstrap design) → the plan of one effect applied
as ``run --plan`` applies it → a follow-up run of that size (the real sampler, fresh speakers
and scores, ``analyse`` with the corrected design at B = 200); the power is the fraction of
passes in which the planned effect is resolved after Holm over the whole family (m = 5: main
noise and main gender averaged over the other factor, the IE, the gap at each noise level). Asserted 0.8 ± 0.07 (Monte Carlo SE ≈ 0.028 at SIMS = 200).

Scores (no audio): every noise level scores the stratum's trials, so a trial's cells share its
speakers' effects and trial noise; each cell adds its own noise. Target score
mu(gender, noise) + u_s + sigma·e + sigma_c·d, non-target v_e + v_t + sigma·e + sigma_c·d.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from synthetic_runs import ScoreModel, write_run

from interbias.analysis import planner
from interbias.analysis.suite import Options, analyse
from interbias.corpora.manifest import Manifest, Utterance
from interbias.experiments.schema import Experiment, load_experiment
from interbias.trials.sampler import draw_trials
from interbias.trials.speaker_budget import apply_plan, check_drawn
from interbias.utils.seeding import derive_rng

SHARED = ScoreModel()  # u, v, e: shared by the cells of one trial
SIGMA_C = 0.5  # each cell's own noise
TRUE = ScoreModel(sigma=math.hypot(SHARED.sigma, SIGMA_C))  # a cell's score distribution
GENDERS, NOISE = ("female", "male"), ("clean", "gaussian_5")
FACTORS = [("gender", "population", "female"), ("noise", "acoustic", "clean")]
#: Passes per scenario, bootstrap replicates per follow-up (the corrected
#: design's minimum), replicates of the pilot (``interbias plan``'s default).
SIMS, BOOT, PILOT_BOOT = 200, 200, 1000


def _experiment(folder: Path) -> Path:
    data = {
        "name": "P16",
        "corpus": {"name": "synthetic"},
        "factors": [
            {"name": "gender", "type": "population", "attribute": "gender", "reference": "female"}
            | {"levels": {g: g for g in GENDERS}},
            {"name": "noise", "type": "acoustic", "apply_to": "test", "reference": "clean"}
            | {"levels": {"clean": [], "gaussian_5": [{"op": "noise", "kind": "gaussian", "snr_db": 5}]}},
        ],
        "trials": {"targets": 375, "nontargets": 375, "min_speakers": 4, "speakers_per_stratum": 60},
    }
    path = folder / "P16.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _manifest(n: int = 400, k: int = 10) -> Manifest:
    utts = [
        Utterance(id=f"{g}{i:03d}_{j}", path=f"{g}{i:03d}_{j}.wav", speaker=f"{g}{i:03d}", gender=g)
        for g in GENDERS
        for i in range(n)
        for j in range(k)
    ]
    return Manifest("sim", Path("."), tuple(utts))


def _cells(frame: pd.DataFrame, mu: dict[tuple[str, str], float], rng: np.random.Generator) -> dict:
    """(model, (gender, noise)) -> (trial ids, scores) for every cell (vectorised)."""
    spk, idx = np.unique(np.concatenate([frame.enrol_speaker, frame.test_speaker]), return_inverse=True)
    e, t = idx[: len(frame)], idx[len(frame) :]
    u, v = rng.normal(0, SHARED.tau, len(spk)), rng.normal(0, SHARED.tau_n, len(spk))
    lab = frame.label.to_numpy(bool)
    base = np.where(lab, u[e], v[e] + v[t]) + rng.normal(0, SHARED.sigma, len(frame))
    gender = frame.stratum.str.split("=").str[1].to_numpy()
    ids = frame.trial_id.to_numpy()
    out = {}
    for g in GENDERS:
        sel = gender == g
        for c in NOISE:
            own = base[sel] + np.where(lab[sel], mu[(g, c)], SHARED.mu_n) + rng.normal(0, SIGMA_C, int(sel.sum()))
            out[("enc", (g, c))] = (ids[sel], own)
    return out


def _analyse(folder: Path, frame: pd.DataFrame, cells: dict, n_boot: int, seed: int = 0):
    run = write_run(folder, frame, cells, FACTORS, experiment="P16")
    return analyse(run, Options(n_boot=n_boot, seed=seed, group_factor="gender"))


def _mu_for(gap: float) -> float:
    """Target mean whose population EER is the reference's (mu 2.0) plus ``gap``."""
    lo, hi = 0.0, 2.0
    want = TRUE.population_eer(2.0) + gap
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if TRUE.population_eer(mid) > want else (lo, mid)
    return (lo + hi) / 2


SCENARIOS = {
    # noise raises EER by DELTA in both genders: main noise = DELTA, every other effect 0
    "noise": lambda d: {(g, c): (_mu_for(d) if c != "clean" else 2.0) for g in GENDERS for c in NOISE},
    # men's EER DELTA above women's at every noise level: main gender (averaged gap) = DELTA,
    # the gaps at each level DELTA too, main noise and the IE 0
    "gender": lambda d: {(g, c): (_mu_for(d) if g == "male" else 2.0) for g in GENDERS for c in NOISE},
}
PLANNED = {"noise": "main noise=gaussian_5 − noise=clean", "gender": "main gender=male − gender=female"}
DELTA = {"noise": 0.03, "gender": 0.05}


def _one_effect_plan(plan: pd.DataFrame, scenario: str, path: Path) -> pd.Series:
    """plan.csv holding the planned effect's row only (a plan for that effect: ``run --plan``
    draws the largest need of the rows it reads)."""
    row = plan[plan.effect.str.startswith(PLANNED[scenario])]
    assert len(row) == 1
    row.to_csv(path, index=False)
    return row.iloc[0]


def _pilot_plan_follow_up(folder: Path, exp: Experiment, manifest: Manifest, scenario: str, r: int) -> tuple[bool, int]:
    """One pass of pilot → plan (family level, corrected design) → ``run --plan`` → findings:
    (the planned effect resolved after Holm over the family, the planned speakers per stratum)."""
    mu = SCENARIOS[scenario](DELTA[scenario])
    pilot = draw_trials(replace(exp, seed=r), manifest)  # a pilot of other speakers each time
    scores = _cells(pilot.frame, mu, derive_rng("test-planner-family", scenario, "pilot", r))
    a = _analyse(folder / "pilot", pilot.frame, scores, PILOT_BOOT, seed=r)
    plan = planner.plan(a, planner.Settings(effect=DELTA[scenario], power=0.8, family=True))
    assert set(plan.family_size) == {5}
    row = _one_effect_plan(plan, scenario, folder / "plan.csv")
    assert row.alpha_effect == pytest.approx(0.05 / 5)
    follow, request = apply_plan(exp, folder / "plan.csv")
    trials = draw_trials(replace(follow, seed=100_000 + r), manifest)  # fresh speakers and scores
    check_drawn(request, trials.strata)
    cells = _cells(trials.frame, mu, derive_rng("test-planner-family", scenario, "follow-up", r))
    found = planner.effects(_analyse(folder / "follow-up", trials.frame, cells, BOOT, seed=r))
    assert len(found) == 5 and set(found.family_size) == {5} and set(found.adjustment) == {"holm"}
    return bool(
        found.loc[found.effect.str.startswith(PLANNED[scenario]), "resolved"].iloc[0]
    ), request.speakers_per_stratum


@pytest.mark.slow
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_planned_power_is_the_power_to_be_resolved(tmp_path: Path, scenario: str) -> None:
    """Each of SIMS passes plans from its own pilot (so the power measured is the procedure's,
    averaged over what one pilot's SE gets wrong) and runs one follow-up of the planned size."""
    exp = load_experiment(_experiment(tmp_path))
    manifest = _manifest()
    hits, sizes = 0, []
    for r in range(SIMS):
        hit, n = _pilot_plan_follow_up(tmp_path / f"pass{r}", exp, manifest, scenario, r)
        hits, sizes = hits + hit, [*sizes, n]
    power = hits / SIMS
    mc = math.sqrt(power * (1 - power) / SIMS)
    q = np.percentile(sizes, [10, 50, 90])
    print(
        f"{scenario}: effect {DELTA[scenario]}, planned speakers per stratum median {q[1]:.0f} (10-90 %: {q[0]:.0f}-{q[2]:.0f}); "
        f"power to be resolved {power:.3f} ± {mc:.3f} (SIMS {SIMS}, pilot B {PILOT_BOOT}, follow-up B {BOOT})"
    )
    assert 60 < q[1] < 400
    assert abs(power - 0.8) <= 0.07
