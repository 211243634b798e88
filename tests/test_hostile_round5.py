"""Issue 63's hostile round 5: each case's input reproduced, its one-line answer asserted.

Outputs written onto inputs: every command that writes a file where it is told (``--out FILE``,
``OUT``) refuses a run's own files and any existing file it did not write, unless ``--force``
(interbias.run.outputs). Repeated ``--op`` in ``data degrade`` is a chain, as in ``cm score``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from synthetic_runs import gender_noise_run
from test_cm_score_files import aasist_l  # noqa: F401  (the fixture)
from test_repair_blackbox import tones  # noqa: F401  (the fixture)
from typer.testing import CliRunner

from interbias.cli import app
from interbias.run.outputs import check_output, check_output_folder, run_dir_of
from interbias.utils.errors import ConfigError

runner = CliRunner()
RATE = 16000


def _one_line(res, message: str) -> None:
    assert res.exit_code == 1, res.output
    assert "Traceback" not in res.output
    lines = res.output.splitlines()
    assert lines == [f"error: {message}"], res.output


def _run(tmp_path: Path) -> Path:
    means = {"m": {(g, n): 2.0 for g in ("female", "male") for n in ("clean", "n5")}}
    return gender_noise_run(tmp_path / "RUN", means, n=4, m=3)


def _kept(run: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in (run / "results.csv", run / "run.json")}


def _run_file(path: Path, run: Path) -> str:
    return (
        f"--out {path}: is a file of the run {run}; writing it would replace the run's own data "
        "(choose another file, or --force)"
    )


# ---- 1: outputs written onto inputs (data loss) -------------------------------------------------


def test_runs_inventory_refuses_to_write_over_a_runs_results(tmp_path: Path) -> None:
    run = _run(tmp_path)
    before = _kept(run)
    target = run / "results.csv"
    res = runner.invoke(app, ["runs", "inventory", str(tmp_path), "--out", str(target)])
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert res.output.splitlines()[-1] == f"error: {_run_file(target, run)}"
    assert _kept(run) == before
    # an inventory beside the runs is written, and written again (its own file)
    inv = tmp_path / "inventory.csv"
    for _ in range(2):
        res = runner.invoke(app, ["runs", "inventory", str(tmp_path), "--out", str(inv)])
        assert res.exit_code == 0, res.output
    # someone's file of the same name is not
    inv.write_text("my notes\n")
    res = runner.invoke(app, ["runs", "inventory", str(tmp_path), "--out", str(inv)])
    assert res.output.splitlines()[-1] == (
        f"error: --out {inv}: the file exists and this command did not write it; writing it would "
        "replace it (choose another file, or --force)"
    )
    assert inv.read_text() == "my notes\n"
    res = runner.invoke(app, ["runs", "inventory", str(tmp_path), "--out", str(inv), "--force"])
    assert res.exit_code == 0, res.output
    assert inv.read_text().splitlines()[1:] and inv.read_text() != "my notes\n"


def test_cm_score_refuses_a_runs_results(aasist_l, tmp_path: Path) -> None:  # noqa: F811
    run = _run(tmp_path)
    before = _kept(run)
    wav = tmp_path / "a.wav"
    sf.write(wav, 0.1 * np.sin(np.arange(RATE) * 0.05), RATE)
    target = run / "results.csv"
    res = runner.invoke(
        app, ["cm", "score", "AASIST-L", str(wav), "--checkpoint", str(aasist_l[0]), "--out", str(target)]
    )
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert res.output.splitlines()[-1] == f"error: {_run_file(target, run)}"
    assert _kept(run) == before
    # its own earlier output is replaced
    own = tmp_path / "scores.json"
    for _ in range(2):
        res = runner.invoke(
            app, ["cm", "score", "AASIST-L", str(wav), "--checkpoint", str(aasist_l[0]), "--out", str(own)]
        )
        assert res.exit_code == 0, res.output
    assert json.loads(own.read_text())["n_scored"] == 1


def test_blackbox_prepare_refuses_a_runs_results(tones: Path, tmp_path: Path) -> None:  # noqa: F811
    run = _run(tmp_path)
    before = _kept(run)
    target = run / "results.csv"
    args = ["audit", "blackbox", "prepare", "--manifest", str(tones / "manifest.jsonl"), "--groups", "gender"]
    res = runner.invoke(app, [*args, "--out", str(target), "--cache-dir", str(tmp_path / "cache")])
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert res.output.splitlines()[-1] == f"error: {_run_file(target, run)}"
    assert _kept(run) == before
    # the manifest it reads is an input: never written, even with --force
    manifest = tones / "manifest.jsonl"
    kept = manifest.read_bytes()
    res = runner.invoke(app, [*args, "--out", str(manifest), "--force", "--cache-dir", str(tmp_path / "cache")])
    assert res.output.splitlines()[-1] == (
        f"error: --out {manifest}: the output is an input of this command; writing it would destroy it"
    )
    assert manifest.read_bytes() == kept


def test_data_prepare_refuses_an_existing_hand_written_manifest(tmp_path: Path) -> None:
    import fake_corpora

    root = fake_corpora.torgo(tmp_path / "torgo")
    out = tmp_path / "mine.jsonl"
    out.write_text('{"id": "x", "path": "/a.wav", "speaker": "s"}\n')
    args = ["data", "prepare", "torgo", "--root", str(root), "--out", str(out), "--cache-dir", str(tmp_path / "c")]
    res = runner.invoke(app, args)
    _one_line(
        res,
        f"--out {out}: the file exists and nothing tells it from your own files; writing it would "
        "replace it (choose another file, or --force)",
    )
    assert out.read_text().startswith('{"id": "x"')
    assert runner.invoke(app, [*args, "--force"]).exit_code == 0
    assert len(out.read_text().splitlines()) == 32


def test_degrade_refuses_an_existing_output_and_a_runs_file(tmp_path: Path) -> None:
    src = tmp_path / "in.wav"
    sf.write(src, 0.1 * np.sin(np.arange(RATE) * 0.05), RATE)
    dst = tmp_path / "mine.wav"
    sf.write(dst, np.zeros(100), RATE)
    kept = dst.read_bytes()
    args = ["data", "degrade", str(src), str(dst), "--op", "gain:gain_db=-3"]
    _one_line(
        runner.invoke(app, args),
        f"OUT {dst}: the file exists and nothing tells it from your own files; writing it would "
        "replace it (choose another file, or --force)",
    )
    assert dst.read_bytes() == kept
    assert runner.invoke(app, [*args, "--force"]).exit_code == 0
    assert dst.read_bytes() != kept


def test_fairness_out_refuses_another_runs_fairness_files(tmp_path: Path) -> None:
    run = _run(tmp_path)
    (run / "fairness.csv").write_text("the run's own\n")
    res = runner.invoke(app, ["scores", "fairness", str(run), "--out", str(run)])
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert res.output.splitlines()[-1] == (
        f"error: --out {run}: is a run directory and holds its own fairness.csv; writing it would "
        "replace the run's data (choose another folder, or --force)"
    )
    assert (run / "fairness.csv").read_text() == "the run's own\n"


def test_the_guard_finds_the_run_above_a_score_file(tmp_path: Path) -> None:
    run = _run(tmp_path)
    score = next((run / "scores").rglob("*.parquet"))
    assert run_dir_of(score) == run.absolute()
    assert run_dir_of(tmp_path / "elsewhere.csv") is None
    with pytest.raises(ConfigError, match="is a file of the run"):
        check_output(score, header="trial_id")
    check_output(score, force=True)  # told to
    check_output(run / "new.csv")  # a new file beside a run's files is not one of them
    with pytest.raises(ConfigError, match="is a folder"):
        check_output(run)
    check_output_folder(tmp_path, ["fairness.csv"])  # not a run directory


# ---- 5: repeated --op in data degrade is a chain ------------------------------------------------


def test_degrade_chains_repeated_ops_as_cm_score_does(tmp_path: Path) -> None:
    src = tmp_path / "in.wav"
    sf.write(src, 0.1 * np.sin(np.arange(RATE) * 0.05), RATE)
    outs = {}
    for name, ops in (
        ("both", ["--op", "gain:gain_db=-6", "--op", "gain:gain_db=-6"]),
        ("one", ["--op", "gain:gain_db=-12"]),
        ("last", ["--op", "gain:gain_db=-6"]),
    ):
        res = runner.invoke(app, ["data", "degrade", str(src), str(tmp_path / f"{name}.wav"), *ops])
        assert res.exit_code == 0, res.output
        outs[name] = sf.read(tmp_path / f"{name}.wav")[0]
    assert res.output.startswith("gain(gain_db=-6.0) -> ")
    # two -6 dB steps are one -12 dB step, not the last -6 dB step alone
    assert np.allclose(outs["both"], outs["one"], atol=2 / 32768)
    assert not np.allclose(outs["both"], outs["last"], atol=2 / 32768)
    res = runner.invoke(
        app,
        ["data", "degrade", str(src), str(tmp_path / "x.wav"), "--op", "gain:gain_db=-6", "--op", "gain:gain_db=-6"],
    )
    assert res.output.startswith("gain(gain_db=-6.0)+gain(gain_db=-6.0) -> ")


# ---- 3: FRR at FAR 1 % wherever a metric is ----------------------------------------------------


def test_frr_at_far1_is_refused_with_its_reason_and_pooled_by_the_inventory(tmp_path: Path) -> None:
    from interbias.metrics import registry

    run = _run(tmp_path)
    why = registry.spec("frr_at_far1").no_interval
    assert why and "small-support" in why
    for cmd in (["analyze", str(run)], ["runs", "leaderboard", str(run)]):
        res = runner.invoke(app, [*cmd, "--metric", "frr_at_far1"])
        assert res.exit_code == 1 and "Traceback" not in res.output
        assert res.output.splitlines()[-1] == (
            f"error: --metric 'frr_at_far1': no interval or test of it: {why}; its values are in "
            "results.csv (runs inventory pools them); valid: eer, eer_legacy, min_dcf, act_dcf, "
            "calibration_loss, cllr"
        )
    # the inventory pools every summary metric of the registry, FRR at FAR 1 % among them
    import pandas as pd

    from interbias.analysis.across.inventory import inventory
    from interbias.metrics import verification

    assert "frr_at_far1" in registry.summary_metrics()
    from interbias.run.rundir import RunDir

    results = pd.read_csv(run / "results.csv")
    frr = []
    for model, cell_id in zip(results["model"], results["cell"], strict=True):
        cell = pd.read_parquet(RunDir(run).scores_path(model, cell_id))
        frr.append(verification.frr_at_far1(cell["score"].to_numpy(), cell["label"].to_numpy(bool)))
    results["frr_at_far1"] = frr  # as every run writes it
    results.to_csv(run / "results.csv", index=False)
    assert len(set(frr)) > 1
    row = inventory([tmp_path]).iloc[0]
    assert row["frr_at_far1"] == pytest.approx(float(np.mean(frr)), abs=1e-12)
    assert row["frr_at_far1_sd"] == pytest.approx(float(np.std(frr, ddof=1)), abs=1e-12)


def test_the_card_names_the_summary_metrics_it_has_no_interval_of() -> None:
    from interbias.analysis.across.encoder_page import left_off_line
    from interbias.metrics import registry

    line = left_off_line({"eer": [], "min_dcf": []})
    assert line == (
        "Not on this card (no interval; runs inventory pools their values): "
        f"auc: {registry.spec('auc').no_interval}; frr_at_far1: {registry.spec('frr_at_far1').no_interval}."
    )


# ---- 2: E23 runs ---------------------------------------------------------------------------------


def test_openmax_that_cannot_be_fitted_says_what_to_change() -> None:
    """E23's failure: a recogniser that put every TTS training utterance but one in the bona fide
    class; OpenMax cannot model a class from one sample, and says so with the remedy."""
    from interbias.cm.openset import fit_openmax
    from interbias.utils.errors import MetricError

    classes = ("bonafide", "tts")
    av = np.array([[3.0, 0.0]] * 58 + [[0.0, 3.0]] * 2 + [[2.5, 0.5]] * 59 + [[0.2, 2.0]])
    av = av + 0.1 * np.random.default_rng(63).standard_normal(av.shape)
    labels = ["bonafide"] * 60 + ["tts"] * 60
    with pytest.raises(MetricError) as err:
        fit_openmax(av, labels, classes)
    assert str(err.value) == (
        "OpenMax fit: class 'tts' has 1 correctly classified training sample(s); needs 2 (the network "
        "has not learnt the class: train it on more of its utterances or longer, e.g. train: set: "
        "max_per_class, max_epochs)"
    )


def test_e23_trains_track3_on_every_known_training_utterance() -> None:
    """The fix: the synthetic variant's recogniser sees all 96 TTS training utterances (60 left it
    at epoch 1 with one TTS utterance classified right); the slow test runs it."""
    import yaml

    from interbias.utils.paths import conditions_dir

    doc = yaml.safe_load((conditions_dir() / "E23.yaml").read_text(encoding="utf-8"))
    track3 = next(t for t in doc["variants"]["synthetic"]["tracks"] if t["track"] == 3)
    assert int(track3["train"]["set"]["max_per_class"]) >= 96


# ---- 4: impossible question effects refused at validate ------------------------------------------


@pytest.mark.parametrize(
    ("effect", "message"),
    [
        (
            "noise gap",
            "'noise gap': a gap is between the levels of a population factor and 'noise' is acoustic; "
            "population factors: gender",
        ),
        ("gender × gender", "'gender × gender' names 'gender' twice; an interaction is between different factors"),
        ("noise x noise", "'noise x noise' names 'noise' twice; an interaction is between different factors"),
    ],
)
def test_impossible_question_effects_are_refused_with_the_reason(tmp_path: Path, effect: str, message: str) -> None:
    from conftest import tiny_experiment

    exp = tiny_experiment(tmp_path, question={"text": "Does it?", "effects": [effect]})
    res = runner.invoke(app, ["validate", str(exp)], env={"COLUMNS": "1000"})  # one line per error, unwrapped
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert res.output.splitlines() == [f"error: {exp}: {exp.name}: question.effects: {message}", "0 of 1 file(s) valid"]


def test_possible_question_effects_still_validate(tmp_path: Path) -> None:
    from conftest import tiny_experiment

    from interbias.experiments.schema import load_experiment

    exp = tiny_experiment(tmp_path, question={"text": "Does it?", "effects": ["gender gap", "gender × noise", "noise"]})
    assert [e.kind for e in load_experiment(exp).key_effects] == ["gap", "interaction", "main"]


# ---- 6: huge counts: the memory they imply, before the work -------------------------------------


def test_a_huge_bootstrap_or_permutation_count_is_one_line_with_its_memory(tmp_path: Path) -> None:
    from interbias.utils.budget import available_bytes

    run = _run(tmp_path)
    trials = len(__import__("pandas").read_parquet(run / "trials.parquet"))
    for cmd, flag, each in (
        (
            ["analyze", str(run)],
            "--bootstrap",
            f"a count per speaker and a weight per trial, (8 + {trials:,}) × 8 bytes each",
        ),
        (
            ["analyze", str(run), "--bootstrap", "0"],
            "--permutations",
            f"a group weight per trial, {trials:,} × 8 bytes each",
        ),
    ):
        res = runner.invoke(app, [*cmd, flag, "1000000000"])
        assert res.exit_code == 1 and "Traceback" not in res.output, res.output
        last = res.output.splitlines()[-1]
        assert last.startswith(f"error: {flag} 1,000,000,000: needs at least "), last
        assert f"of memory ({each}); this machine has " in last, last
        assert available_bytes() > 0
    # the fairness report's speaker bootstrap (its own resampler)
    from interbias.analysis.groups.fairness_cluster import SpeakerBootstrap
    from interbias.utils.errors import AnalysisError

    spk = np.array(["a", "b", "c", "d"])
    message = r"^--bootstrap 1,000,000,000: needs at least .* \(a count per speaker and a draw per speaker, 2 × 4 × 8 bytes each\)"
    with pytest.raises(AnalysisError, match=message):
        SpeakerBootstrap.draw(
            spk, spk[::-1], np.array(["f", "f", "m", "m"]), n_boot=10**9, rng=np.random.default_rng(0)
        )


def test_check_memory_states_the_implied_memory_and_what_fits() -> None:
    from interbias.utils.budget import GIB, check_memory

    check_memory("--bootstrap", 1000, 8 * 2000, "w", available=GIB)  # 16 MB fits
    with pytest.raises(ConfigError) as err:
        check_memory("--bootstrap", 10**9, 8 * 34, "a weight per trial, 34 × 8 bytes", available=16 * GIB)
    assert str(err.value) == (
        "--bootstrap 1,000,000,000: needs at least 253 GiB of memory (a weight per trial, 34 × 8 bytes each); "
        "this machine has 16 GiB free, enough for at most 63,161,283"
    )


def test_repair_hidden_and_batch_are_checked_before_torch_allocates() -> None:
    from interbias.repair.orca import OrcaConfig, check_sizes
    from interbias.utils.errors import AnalysisError

    check_sizes(192, OrcaConfig())
    for key, message in (
        ("hidden", "--set hidden 1,000,000,000: needs at least"),
        ("batch", "--set batch 1,000,000,000"),
    ):
        with pytest.raises(AnalysisError, match=message):
            check_sizes(192, OrcaConfig(**{key: 10**9}))


def test_jobs_above_two_per_core_are_capped_with_a_note() -> None:
    from interbias.embedding.jobs import jobs_note, max_jobs, usable_cores
    from interbias.embedding.local import LocalExecutor

    assert max_jobs() == 2 * usable_cores()
    assert LocalExecutor(jobs=999).resolve_jobs(10**6) == max_jobs()
    assert LocalExecutor(jobs=1).resolve_jobs(10**6) == 1
    assert jobs_note(max_jobs()) is None
    assert jobs_note(999) == (
        f"note: --jobs 999 is more than 2 per usable core ({usable_cores()} here): using at most "
        f"{max_jobs()} worker(s), each with its own copy of the encoders"
    )


# ---- 7: workers end with their driver ------------------------------------------------------------

DRIVER = """
import os, sys, time
from interbias.embedding.jobs import PoolSpec, ordered_map

def nap(unit):
    time.sleep(120)
    return unit

def ready():
    pass

if __name__ == "__main__":
    print(os.getpid(), flush=True)
    list(ordered_map(PoolSpec(nap, 2, ready), [1, 2, 3, 4]))
"""


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_workers_end_when_their_driver_is_killed(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    from run_helpers import REPO

    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    driver = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, env=env)
    try:
        pid = int(driver.stdout.readline())
        deadline = time.monotonic() + 60
        workers: list[int] = []
        while time.monotonic() < deadline:
            # the two spawned workers (the resource tracker is a child too: it ends on EOF)
            workers = [c for c in _children(pid) if "spawn_main" in Path(f"/proc/{c}/cmdline").read_text()]
            if len(workers) == 2:
                break
            time.sleep(0.2)
        assert len(workers) == 2, _children(pid)
        time.sleep(1.0)  # the watchdogs are running
        os.kill(pid, signal.SIGKILL)
        driver.wait(timeout=10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(_alive(w) for w in workers):
            time.sleep(0.2)
        assert not any(_alive(w) for w in workers), "a worker outlived its driver by 10 s"
    finally:
        if driver.poll() is None:
            driver.kill()


def test_worker_deaths_are_said_on_the_console(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from interbias.cli.run import note_restarts

    (tmp_path / "run.json").write_text(json.dumps({"executor": {"jobs": 2, "worker_restarts": 33}}))
    note_restarts(tmp_path)
    out = capsys.readouterr().out
    assert out.startswith("note: worker processes died 33 time(s) and their work was redone in fresh ones")
    assert "run.json executor.worker_restarts" in out
    (tmp_path / "run.json").write_text(json.dumps({"executor": {"jobs": 2, "worker_restarts": 0}}))
    note_restarts(tmp_path)
    assert capsys.readouterr().out == ""
