"""The countermeasure stage of a spoofing verification run (interbias/run/cm_stage.py): a tiny
gender × noise run with a dev split, attacks and a CM trained here scores every eval trial's test
audio with the CM; the score is the CM's log-odds of exactly the waveform the speaker encoder
embedded (checked by rebuilding that waveform by hand: the encoder's cosine on it equals the
run's score, the CM's log-odds on it equals cm_trials.parquet), the dev rows hold both classes,
sasv_fusion.csv follows with a dev-fitted CM calibration, a rerun reuses every cell byte for
byte, and bad requests are one line each, before any run directory exists."""

from __future__ import annotations

import json
import re
import signal
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cm_fixtures import cm_manifest, copy_attacks
from conftest import tiny_experiment
from run_helpers import only_run_dir, run_child
from typer.testing import CliRunner

from interbias.analysis.after_run import run_analyses
from interbias.analysis.security.sasv_run import cm_llr
from interbias.audio.frontend import load
from interbias.cli import app
from interbias.cm.models import load_cm
from interbias.cm.train import train_model
from interbias.encoders import load_encoders
from interbias.experiments.schema import load_experiment
from interbias.metrics.logistic import fit_logistic
from interbias.operators import OpContext
from interbias.run.conductor import RunOptions, run
from interbias.run.rundir import CM_DEV, CM_TRIALS, SASV_FUSION, RunDir
from interbias.trials.sampler import partners
from interbias.utils.seeding import sha256_file

TINY_CM = {"duration_s": "0.5", "width": "4", "max_epochs": "1", "batch_size": "4", "lr": "0.01"}
CM = "ResNet18-logspec"


@pytest.fixture(scope="module")
def staged(tmp_path_factory, tiny_corpus, session_cache) -> dict:
    tmp = tmp_path_factory.mktemp("cmstage")
    mp = pytest.MonkeyPatch()
    mp.setenv("INTERBIAS_MODELS", str(tmp / "models"))
    train_model(CM, cm_manifest(tmp / "cmdata", per_class=3), settings=dict(TINY_CM), log=lambda s: None)
    spoofing = {"attacks": str(copy_attacks(tmp, tiny_corpus)), "countermeasures": [CM]}
    exp = tiny_experiment(
        tmp, name="C52", trials={"targets": 24, "min_speakers": 3, "dev_share": 0.5},
        spoofing=spoofing, fairness={"groups": ["gender"], "threshold": "eer"},
    )  # fmt: skip
    opts = RunOptions(
        experiment=str(exp), encoders=["mfcc-stats"], out=tmp / "r", quiet=True, command=["t"],
        cache_dir=session_cache, after_run=run_analyses,
    )  # fmt: skip
    first = run(opts)
    files = {p.name: p.read_bytes() for p in first.run_dir.iterdir() if p.is_file() and p.name != "run.json"}
    again = run(opts)
    yield {"tmp": tmp, "exp": exp, "run": first.run_dir, "files": files, "again": again, "corpus": tiny_corpus}
    mp.undo()


def test_every_eval_trial_has_a_cm_score_per_cell_and_the_dev_rows_hold_both_classes(staged) -> None:
    rd = RunDir(staged["run"])
    trials = rd.read_trials().frame
    cm = pd.read_parquet(rd.file(CM_TRIALS))
    cells = sorted(set(rd.read_results()["cell"]))
    assert sorted(set(cm["cell"])) == cells and set(cm["cm"]) == {CM} and not cm["calibrated"].any()
    exp = load_experiment(staged["exp"])
    for cell in exp.cells():
        want = trials[(trials["stratum"] == cell.stratum) & (trials["split"] == "eval")]["trial_id"]
        got = cm[cm["cell"] == cell.id]["trial_id"]
        assert sorted(got) == sorted(want)
    assert set(trials.loc[trials["trial_id"].isin(cm["trial_id"]), "trial_type"]) == {"target", "nontarget", "spoof"}
    dev = pd.read_parquet(rd.file(CM_DEV))
    assert set(dev["cell"]) == {c.id for c in exp.cells() if dict(c.levels)["noise"] == "clean"}
    for cell, part in dev.groupby("cell"):
        stratum = next(c.stratum for c in exp.cells() if c.id == cell)
        mine = trials[(trials["stratum"] == stratum) & (trials["split"] == "dev")]
        bona = part[part["cm_class"] == "bonafide"]["id"]
        assert sorted(bona) == sorted(set(mine["test"]))
        spoof = part[part["cm_class"] == "spoof"]["id"]
        speakers = set(mine["enrol_speaker"]) | set(mine["test_speaker"])
        attacked = {u.id for u in _attack_set(staged) if u.speaker in speakers}
        assert len(spoof) > 0 and set(spoof) == attacked


def _attack_set(staged):
    from interbias.corpora.attacks import load_attacks

    exp = load_experiment(staged["exp"])
    return load_attacks(exp.spoofing, exp.corpus, staged["corpus"], None).utterances


def test_cm_judges_the_waveform_the_encoder_embedded(staged) -> None:
    rd = RunDir(staged["run"])
    exp = load_experiment(staged["exp"])
    trials = rd.read_trials().frame
    by_id = {u.id: u for u in staged["corpus"]} | {u.id: u for u in _attack_set(staged)}
    exclude = partners(trials)
    enc = load_encoders(["mfcc-stats"], "cpu")[0]
    model = load_cm(CM)
    cm = pd.read_parquet(rd.file(CM_TRIALS)).set_index(["cell", "trial_id"])["cm_score"]
    noisy = next(c for c in exp.cells() if dict(c.levels)["noise"] != "clean")
    scores = rd.read_scores("mfcc-stats", noisy.id).set_index("trial_id")["score"]
    ev = trials[(trials["stratum"] == noisy.stratum) & (trials["split"] == "eval")]
    picked = pd.concat([g.head(2) for _, g in ev.groupby("trial_type")])
    for t in picked.itertuples(index=False):
        u = by_id[t.test]
        path = u.path if Path(u.path).is_absolute() else staged["corpus"].resolve(u)
        x = load(path, exp.frontend, vad=True).samples
        chain, ex = noisy.test_chain, exclude.get(t.test, frozenset())
        wave, _ = chain.apply(
            x, utterance_sha256=sha256_file(path), key=chain.key(ex),
            make_ctx=lambda rng, u=u, ex=ex: OpContext(sample_rate_hz=16000, utterance_id=u.id, speaker=u.speaker,
                                                       rng=rng, corpus=staged["corpus"], exclude_speakers=ex | {u.speaker},
                                                       frontend=exp.frontend),
        )  # fmt: skip
        assert not np.array_equal(wave, x)  # the noise was applied
        enrol = enc.embed([load(staged["corpus"].resolve(by_id[t.enrol]), exp.frontend, vad=True).samples])[0]
        test = enc.embed([wave])[0]
        cosine = float(np.dot(enrol / np.linalg.norm(enrol), test / np.linalg.norm(test)))
        assert cosine == pytest.approx(scores[t.trial_id], abs=1e-5)  # the encoder's waveform
        logits = model.logits([wave])[0]
        assert logits[1] - logits[0] == pytest.approx(cm[(noisy.id, t.trial_id)], rel=1e-6, abs=1e-6)


def test_fusion_uses_a_calibration_fitted_on_the_dev_rows(staged) -> None:
    rd = RunDir(staged["run"])
    fused = pd.read_csv(rd.file(SASV_FUSION), keep_default_na=False)
    assert set(fused["cm_calibration"]) == {"logistic-dev"} and set(fused["cm"]) == {CM}
    assert (fused[fused["group"] == "all"][["n_target", "n_nontarget", "n_spoof"]] > 0).all().all()
    dev = pd.read_parquet(rd.file(CM_DEV))
    cm = pd.read_parquet(rd.file(CM_TRIALS))
    fit = fit_logistic(
        dev[["cm_score"]].to_numpy(), (dev["cm_class"] == "bonafide").to_numpy(), ("cm_score",), prior=0.5
    )
    trials = rd.read_trials().frame.set_index("trial_id")
    llr, how = cm_llr(cm, trials, set(dev["cell"]), dev)
    assert how == "logistic-dev"
    np.testing.assert_allclose(llr, fit.llr(cm[["cm_score"]].to_numpy()), rtol=1e-12)


def test_rerun_reuses_every_cell_and_writes_the_same_bytes(staged) -> None:
    record = json.loads((staged["run"] / "run.json").read_text())
    n_cells = len(load_experiment(staged["exp"]).cells())
    assert record["countermeasures"]["cells_reused"] == n_cells and record["countermeasures"]["n_failed"] == 0
    assert record["countermeasures"]["models"][CM]["checkpoint_sha256"]
    assert staged["again"].cells_done_before == n_cells
    now = {p.name: p.read_bytes() for p in staged["run"].iterdir() if p.is_file() and p.name != "run.json"}
    assert {CM_TRIALS, CM_DEV, SASV_FUSION} <= set(now)
    assert [k for k in staged["files"] if now[k] != staged["files"][k]] == []


@pytest.mark.slow  # 16 s; test_crash_resume kills runs in make test
def test_killed_after_a_cm_cell_resumes_to_the_same_bytes(staged, tmp_path) -> None:
    env = {"INTERBIAS_MODELS": str(staged["tmp"] / "models"), "INTERBIAS_CACHE": str(tmp_path / "cache")}
    args = ["run", str(staged["exp"]), "--encoders", "mfcc-stats", "--out", str(tmp_path / "o"), "-q"]
    killed = run_child(args, env={**env, "INTERBIAS_CRASH_AT": "cm-cell-done@1"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    run_dir = only_run_dir(tmp_path / "o")
    assert run_dir.name == staged["run"].name
    assert len(list((run_dir / "cm_cells").glob("*.json"))) == 1 and not (run_dir / CM_TRIALS).exists()
    again = run_child(args, env=env)
    assert again.returncode == 0, again.stderr[-2000:]
    record = json.loads((run_dir / "run.json").read_text())
    assert record["countermeasures"]["cells_reused"] == 1
    for name in (CM_TRIALS, CM_DEV, SASV_FUSION):
        assert (run_dir / name).read_bytes() == (staged["run"] / name).read_bytes(), name


def _cli(args: list[str], env: dict[str, str]) -> tuple[int, str]:
    result = CliRunner().invoke(app, args, env=env)
    return result.exit_code, result.output


def test_bad_requests_are_one_line_before_any_run_directory(staged, tmp_path) -> None:
    exp, models = str(staged["exp"]), str(staged["tmp"] / "models")
    plain = tiny_experiment(tmp_path, name="C53")  # no spoofing: section
    env = {"INTERBIAS_MODELS": models}
    cases = [
        (["run", str(plain), "--cm", CM], "no spoofing: section"),
        (["run", exp, "--cm", "NotACM"], "is not a CM label"),
        (["run", exp, "--cm", "ResNet18-cqt"], "no checkpoint"),
        (["run", exp, "--cm", ""], "a list of CM labels"),
    ]
    for args, words in cases:
        code, out = _cli([*args, "--encoders", "mfcc-stats", "--out", str(tmp_path / "o"), "-q"], env)
        assert code != 0 and words in out, (args, out)
        assert "Traceback" not in out and len(out.strip().splitlines()) <= 3, out
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())


def test_a_catalogue_run_whose_cm_checkpoint_is_missing_does_not_run_here(tmp_path) -> None:
    env = {"INTERBIAS_MODELS": str(tmp_path / "none"), "COLUMNS": "200"}
    code, out = _cli(["list"], env)
    assert code == 0 and re.search(r"^E26 .*synthetic\(6\) ✗models$", out, flags=re.M), out
    code, out = _cli(["run", "E26", "--corpus", "synthetic", "--out", str(tmp_path / "o")], env)
    assert code == 1 and "E26 cannot run here: GMM-lfcc: no checkpoint in" in out
    assert out.strip().endswith("See docs/countermeasures.md") and not (tmp_path / "o").exists()


def test_the_report_names_each_cm_checkpoint_by_its_sha256(staged) -> None:
    rj = json.loads((staged["run"] / "run.json").read_text())
    checkpoint = Path(rj["countermeasures"]["models"][CM]["checkpoint"])
    res = CliRunner().invoke(app, ["report", str(staged["run"]), "--bootstrap", "0"])
    assert res.exit_code == 0, res.output
    text = (staged["run"] / "report.md").read_text()
    assert f"Countermeasure {CM}: checkpoint {checkpoint}, sha256 {sha256_file(checkpoint)}." in text
