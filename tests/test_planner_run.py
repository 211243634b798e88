"""The planner end to end through ``run --plan``: a pilot run → ``interbias plan`` → the plan
applied to the experiment exactly as ``run --plan`` applies it (speaker_budget.apply_plan, the
real trial sampler on a fresh draw of speakers and scores) → the analysis' own findings. Over
SIMS follow-up runs the gap is resolved with the planned power (0.8 ± 0.07). One effect (a
family of one) and the plain speaker-bootstrap design; tests/test_planner_family_power.py
checks the defaults (a family, the corrected design).

No audio or encoder: a manifest of utterance records and a score generator per trial (speaker
effects plus trial noise, ScoreModel) stand in for the corpus and the encoder; everything from
the experiment definition to the resolved flag is the product's code.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import gender_factor
from synthetic_runs import ScoreModel, write_run

from interbias.analysis import planner
from interbias.analysis.contrasts import compute_contrasts
from interbias.analysis.effects import collect, decide
from interbias.analysis.gaps import compute_gaps
from interbias.analysis.stats.bootstrap import Resampler, TrialDesign
from interbias.analysis.stats.replicates import Replicates
from interbias.analysis.suite import Options, analyse
from interbias.corpora.manifest import Manifest, Utterance
from interbias.experiments.schema import load_experiment
from interbias.metrics import verification as metrics
from interbias.metrics.weighted import metric_batch, sort_cell
from interbias.trials.sampler import draw_trials
from interbias.trials.speaker_budget import apply_plan, check_drawn
from interbias.utils.seeding import derive_rng

MODEL = ScoreModel()
MU = {"female": 2.0, "male": 1.5}  # population EER gap ≈ 0.066
#: Follow-up runs simulated, bootstrap replicates per run.
SIMS, BOOT = 200, 100


def _experiment(folder: Path) -> Path:
    data = {
        "name": "P01",
        "corpus": {"name": "synthetic"},
        "factors": [gender_factor()],
        "trials": {"targets": 375, "nontargets": 375, "min_speakers": 4, "speakers_per_stratum": 60},
    }
    path = folder / "P01.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _manifest(n: int = 250, k: int = 10) -> Manifest:
    utts = [
        Utterance(id=f"{g}{i:03d}_{j}", path=f"{g}{i:03d}_{j}.wav", speaker=f"{g}{i:03d}", gender=g)
        for g in MU
        for i in range(n)
        for j in range(k)
    ]
    return Manifest("sim", Path("."), tuple(utts))


def _scores(frame: pd.DataFrame, rng: np.random.Generator) -> np.ndarray:
    """Target: mu(gender) + u_speaker + sigma·e; non-target: v_enrol + v_test + sigma·e."""
    spk = sorted(set(frame.enrol_speaker) | set(frame.test_speaker))
    u = dict(zip(spk, rng.normal(0, MODEL.tau, len(spk)), strict=True))
    v = dict(zip(spk, rng.normal(0, MODEL.tau_n, len(spk)), strict=True))
    mu = frame.stratum.str.split("=").str[1].map(MU).to_numpy(float)
    lab = frame.label.to_numpy(bool)
    tgt = mu + frame.enrol_speaker.map(u).to_numpy(float)
    non = frame.enrol_speaker.map(v).to_numpy(float) + frame.test_speaker.map(v).to_numpy(float)
    return np.where(lab, tgt, non) + rng.normal(0, MODEL.sigma, len(frame))


def _cells(frame: pd.DataFrame, scores: np.ndarray) -> dict[tuple[str, tuple[str]], tuple[np.ndarray, np.ndarray]]:
    out = {}
    for g in MU:
        sel = (frame.stratum == f"gender={g}").to_numpy()
        out[("enc", (g,))] = (frame.trial_id.to_numpy()[sel], scores[sel])
    return out


def _resolved(frame: pd.DataFrame, scores: np.ndarray, seed: int) -> bool:
    """The findings' resolved flag of the gap (family of one: the experiment has no condition)."""
    design = TrialDesign.from_frame(frame)
    boot = Resampler(design, n_boot=BOOT, seed=seed)
    rows, values = [], {}
    for (model, (g,)), (ids, s) in _cells(frame, scores).items():
        pos = design.rows(ids)
        cell = f"gender={g}"
        values[("P01", model, cell)] = metric_batch("eer", sort_cell(s, design.label[pos]), boot.weights(pos))
        rows.append(
            {"experiment": "P01", "model": model, "cell": cell, "factor_a": "gender", "level_a": g, "ref_a": "female"}
            | {"eer": metrics.eer(s, design.label[pos])}
        )
    results = pd.DataFrame(rows)
    reps = Replicates("eer", "speaker", BOOT, seed, 0.95, boot.rule, values)
    gaps = compute_gaps(results, "eer", group_factor="gender", replicates=reps)
    found = decide(collect(results, "eer", compute_contrasts(results, "eer", reps), gaps, reps)[0], 0.05, "holm")
    assert list(found.kind) == ["gap"]
    return bool(found.resolved.iloc[0])


@pytest.mark.slow
def test_run_plan_reaches_the_planned_power(tmp_path: Path) -> None:
    exp = load_experiment(_experiment(tmp_path))
    manifest = _manifest()
    pilot = draw_trials(exp, manifest)
    scores = _scores(pilot.frame, derive_rng("test-planner-run", "pilot"))
    run = write_run(
        tmp_path / "pilot",
        pilot.frame,
        _cells(pilot.frame, scores),
        [("gender", "population", "female")],
        experiment="P01",
    )
    true_gap = MODEL.population_eer(MU["male"]) - MODEL.population_eer(MU["female"])
    # the plain speaker design, as the follow-ups below are tested (no correction, the normal)
    pilot_a = analyse(run, Options(n_boot=1000, design="speaker"))
    plan = planner.plan(pilot_a, planner.Settings(effect=true_gap, power=0.8))
    plan.to_csv(tmp_path / "plan.csv", index=False)
    follow, request = apply_plan(exp, tmp_path / "plan.csv")
    assert 60 < request.speakers_per_stratum < 250  # the pilot alone is under-powered
    # trials per speaker stay at the pilot's (375 / 60 = 6.25): the experiment's 375 would not
    assert request.target_trials == int(np.ceil(request.speakers_per_stratum * 375 / 60))
    hits = 0
    for r in range(SIMS):
        fresh = replace(follow, seed=1000 + r)  # other speakers of the population, other scores
        trials = draw_trials(fresh, manifest)
        check_drawn(request, trials.strata)
        hits += _resolved(trials.frame, _scores(trials.frame, derive_rng("test-planner-run", "sim", r)), r)
    power = hits / SIMS
    print(
        f"plan: {request.speakers_per_stratum} speakers, {request.target_trials} target trials per stratum; power {power:.3f}"
    )
    assert abs(power - 0.8) <= 0.07
