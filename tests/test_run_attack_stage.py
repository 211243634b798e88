"""The attack stage of a run (interbias.run.attack_stage) end to end on the tiny corpus with
mfcc-stats: budget 0 rescoring the clean cell, the codec applied to the attacked audio, the
achieved budgets, a byte-identical rerun, and the refusals before any work."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import gender_factor, tiny_experiment
from run_helpers import isolated_cache, only_run_dir, run_args, run_child

from interbias.audio import frontend as audio
from interbias.encoders import load_encoders
from interbias.experiments import load_experiment
from interbias.operators import OpContext
from interbias.run.rundir import RunDir

ATTACKS = {"methods": ["fgsm", "pgd"], "budgets": [0, 0.003], "steps": 2, "trials": 3}
CHANNEL = {
    "name": "channel",
    "type": "acoustic",
    "apply_to": "test",
    "reference": "clean",
    "levels": {"clean": [], "amr_nb": [{"op": "codec", "codec": "amr_nb"}]},
}


def attack_experiment(tmp: Path, attacks: dict | None = None, **overrides) -> Path:
    return tiny_experiment(
        tmp,
        "T24",
        factors=[gender_factor(), CHANNEL],
        trials={"targets": 40, "min_speakers": 2, "dev_share": 0.4},
        attacks=dict(attacks or ATTACKS),
        **overrides,
    )


def attack_run(tmp: Path, session_cache: Path, name: str) -> tuple[Path, Path]:
    """One mfcc-stats run of the attack experiment with a fresh cache: (run dir, cache)."""
    cache = isolated_cache(tmp / f"c-{name}", session_cache)
    done = run_child(run_args(attack_experiment(tmp), tmp / f"out-{name}", cache))
    assert done.returncode == 0, done.stderr
    return only_run_dir(tmp / f"out-{name}"), cache


@pytest.fixture(scope="module")
def runs(tmp_path_factory, session_cache, tiny_corpus):
    """(experiment path, [(run dir, cache)]) of one run."""
    tmp = tmp_path_factory.mktemp("attack-run")
    return attack_experiment(tmp), [attack_run(tmp, session_cache, "a")], tmp


@pytest.mark.slow
def test_rerun_is_byte_identical(runs, session_cache):
    _, [(a, _)], tmp = runs
    b, _ = attack_run(tmp, session_cache, "b")
    for name in ("attacks.csv", "attack_summary.csv", "attack_gaps.csv", "attack_curves.png", "results.csv"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_budget_zero_rescores_the_clean_cell_exactly(runs):
    _, [(run, _)], _ = runs
    table = pd.read_csv(run / "attacks.csv")
    clean = table[table["budget"] == 0]
    assert len(clean) == 2 * 2 * 2 * 2 * 3  # methods × cells (gender × channel) × kinds × trials
    assert (clean["score"] == clean["clean_score"]).all()
    assert (clean["linf"] == 0).all() and np.isinf(clean["snr_db"]).all()
    rd = RunDir(run)
    for (cell, model), sub in clean.groupby(["cell", "model"]):
        scores = rd.read_scores(model, cell).set_index("trial_id")["score"]
        np.testing.assert_array_equal(sub["score"], scores.loc[sub["trial_id"]].to_numpy())
    accepted = clean["score"] >= clean["threshold"]
    assert (clean["success"] == np.where(clean["kind"] == "impostor", accepted, ~accepted)).all()


def test_attacks_stay_in_budget_and_move_the_score(runs):
    _, [(run, _)], _ = runs
    table = pd.read_csv(run / "attacks.csv")
    hit = table[(table["budget"] > 0) & (table["channel"] == "clean")]
    assert (hit["linf"] <= 0.003 + 1e-7).all()
    kept = hit["kept_step"] > 0
    assert (hit["linf"][kept] > 0).all() and (hit["linf"][~kept] == 0).all()  # kept_step 0: the clean audio
    fgsm = hit[(hit["method"] == "fgsm") & kept]["linf"]
    assert np.allclose(fgsm, 0.003, rtol=0, atol=1e-7)  # the full budget in one signed step
    moved = (hit["score"] - hit["clean_score"]) * np.where(hit["kind"] == "impostor", 1, -1)
    assert (moved[~kept] == 0).all()
    assert (moved[hit["method"] == "pgd"] > 0).mean() >= 0.8
    summary = pd.read_csv(run / "attack_summary.csv")
    for key, sub in table.groupby(["model", "cell", "kind", "method", "budget"]):
        row = summary[
            (summary["cell"] == key[1]) & (summary["kind"] == key[2]) & (summary["method"] == key[3])
            & (summary["budget"] == key[4])
        ]  # fmt: skip
        assert row["success_rate"].item() == pytest.approx(sub["success"].mean())
        assert row["ci_low"].item() <= row["success_rate"].item() <= row["ci_high"].item()


def test_the_codec_is_applied_to_the_attacked_audio(runs, tiny_corpus):
    """Recompute an AMR-NB row from the cached attacked waveform through the codec by hand."""
    exp_path, [(run, cache)], _ = runs
    table = pd.read_csv(run / "attacks.csv")
    row = table[(table["budget"] > 0) & (table["channel"] == "amr_nb") & (table["method"] == "pgd")].iloc[0]
    twin = table[
        (table["budget"] > 0) & (table["channel"] == "clean") & (table["method"] == "pgd")
        & (table["trial_id"] == row["trial_id"])
    ].iloc[0]  # fmt: skip
    (enc,) = load_encoders(["mfcc-stats"], "cpu")
    manifest = tiny_corpus
    u = manifest.by_id()[row["test"]]
    exp = load_experiment(exp_path)
    x = audio.load(manifest.resolve(u), exp.frontend, vad=True).samples
    stored = [np.load(p) for p in sorted((cache / "adversarial").rglob("*.npz"))]
    chain = next(c for c in exp.cells() if dict(c.levels)["channel"] == "amr_nb").test_chain
    enrol = enc.embed([audio.load(manifest.resolve(manifest.by_id()[row["enrol"]]), exp.frontend, vad=True).samples])
    found = []
    for data in stored:
        wave = data["wave"]
        if wave.shape != x.shape or not np.isclose(np.max(np.abs(wave - x)), row["linf"], atol=1e-9):
            continue
        plain = float(enc.embed([wave])[0] @ enrol[0])
        coded, _ = chain.apply(
            wave, utterance_sha256="", key="k", make_ctx=lambda rng: OpContext(16000, u.id, u.speaker, rng)
        )
        found.append((plain, float(enc.embed([coded])[0] @ enrol[0])))
    assert any(
        p == pytest.approx(twin["score"], abs=1e-5) and c == pytest.approx(row["score"], abs=1e-5) for p, c in found
    )
    assert row["score"] != twin["score"]


def test_white_box_on_ge2e_is_refused_before_any_work(tmp_path, session_cache, tiny_corpus):
    exp = attack_experiment(tmp_path)
    args = run_args(exp, tmp_path / "out", isolated_cache(tmp_path, session_cache))
    args[args.index("mfcc-stats")] = "GE2E"
    done = run_child(args)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "error: GE2E: white-box attacks (fgsm, pgd) are refused: resemblyzer's volume normalisation and webrtcvad "
        "silence trimming run outside torch; use method: nes (query-based, any encoder)"
    ]
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_a_spoofing_section_is_refused_in_one_line(tmp_path):
    exp = attack_experiment(tmp_path, spoofing={"attacks": "spoofs.csv"})
    with pytest.raises(Exception) as err:
        load_experiment(exp)
    assert "attacks: adversarial attacks perturb bona fide test utterances" in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.slow
def test_nes_through_a_run_counts_its_queries(tmp_path, session_cache, tiny_corpus):
    nes = {"samples": 4, "queries": 20}
    exp = attack_experiment(
        tmp_path, {"methods": ["nes"], "budgets": [0.003], "steps": 3, "trials": 2, "kinds": ["impostor"], "nes": nes}
    )
    done = run_child(run_args(exp, tmp_path / "out", isolated_cache(tmp_path, session_cache)))
    assert done.returncode == 0, done.stderr
    table = pd.read_csv(only_run_dir(tmp_path / "out") / "attacks.csv")
    assert set(table["method"]) == {"nes"}
    # one query checks the clean input; each step costs 2·4 + 1 and must fit in 20
    assert table["queries"].isin([1, 10, 19]).all() and (table["steps"] <= 2).all()
    assert ((table["queries"] - 1) == 9 * table["steps"]).all()


@pytest.mark.slow  # 13 s
def test_success_never_falls_as_the_budget_grows(tmp_path, session_cache, tiny_corpus):
    """Budgets up to ε 0.5 (large steps overshoot): per trial and method, the clean cell's success
    and score toward the goal never fall from one budget to the next, and the summary counts
    the decisions a budget left unchanged and the trials that kept the clean audio."""
    spec = {"methods": ["fgsm", "pgd"], "budgets": [0, 0.003, 0.05, 0.5], "steps": 2, "trials": 3}
    exp = attack_experiment(tmp_path, spec)
    done = run_child(run_args(exp, tmp_path / "out", isolated_cache(tmp_path, session_cache)))
    assert done.returncode == 0, done.stderr
    run = only_run_dir(tmp_path / "out")
    table = pd.read_csv(run / "attacks.csv")
    ref = table[table["channel"] == "clean"].sort_values("budget")
    for _, sub in ref.groupby(["model", "cell", "kind", "method", "trial_id"]):
        toward = sub["score"].to_numpy() * (1 if sub["kind"].iloc[0] == "impostor" else -1)
        assert (np.diff(sub["success"].to_numpy()) >= 0).all(), sub[["budget", "score", "success"]]
        assert (np.diff(toward) >= -1e-6).all(), sub[["budget", "score", "kept_budget", "kept_step"]]
    assert (table["kept_budget"] <= table["budget"]).all()
    summary = pd.read_csv(run / "attack_summary.csv")
    for key, sub in table.groupby(["model", "cell", "kind", "method", "budget"]):
        row = summary[(summary["cell"] == key[1]) & (summary["kind"] == key[2]) & (summary["method"] == key[3])
                      & (summary["budget"] == key[4])]  # fmt: skip
        accepted = sub["clean_score"] >= sub["threshold"]
        same = sub["success"] == np.where(sub["kind"] == "impostor", accepted, ~accepted)
        assert row["unchanged"].item() == int(same.sum())
        assert row["kept_clean"].item() == (0 if key[4] == 0 else int((sub["kept_step"] == 0).sum()))
