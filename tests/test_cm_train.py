"""``interbias cm train``: recipe defaults, determinism, resume at an epoch boundary, refusals."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from cm_fixtures import SPEAKERS, cm_manifest
from typer.testing import CliRunner

from interbias.cli import app
from interbias.cm.models import load_cm
from interbias.cm.train import PRESETS, TrainConfig, train_model
from interbias.utils.errors import ConfigError, EncoderError, ManifestError, RunError

#: Tiny and fast: 0.5 s clips, width 4, two epochs.
TINY = {"duration_s": "0.5", "width": "4", "max_epochs": "2", "batch_size": "4", "lr": "0.01"}


def test_paper_recipe_is_the_default():
    cfg = PRESETS["paper"]
    assert cfg == TrainConfig()
    assert (cfg.lr, cfg.weight_decay, cfg.patience, cfg.sample_rate_hz, cfg.duration_s, cfg.n_samples) == (
        3e-5, 1e-4, 15, 16000, 4.0, 64000,
    )  # fmt: skip
    assert (cfg.lr_factor, cfg.lr_patience) == (0.5, 5)  # ReduceLROnPlateau of the study's recipe
    assert cfg.override({"lr": "1e-4"}).lr == 1e-4
    with pytest.raises(ConfigError, match="lr_factor must lie in"):
        cfg.override({"lr_factor": "1.5"})
    with pytest.raises(ConfigError, match="unknown setting 'learning_rate'; valid: lr, weight_decay"):
        cfg.override({"learning_rate": "1"})
    assert cfg.override({"max_per_class": "all", "width": "8"}) == replace(cfg, max_per_class=None, width=8)
    assert cfg.override({"max_per_class": "7"}).max_per_class == 7
    with pytest.raises(ConfigError, match=r"^cm train: width='8.5' is not a number$"):
        cfg.override({"width": "8.5"})


def _train(m, out: Path, **kw):
    return train_model("ResNet18-logspec", m, settings=dict(TINY), out=out, log=lambda s: None, **kw)


def test_same_seed_same_checkpoint_bytes_and_outputs(tmp_path):
    m = cm_manifest(tmp_path / "data")
    _, info = _train(m, tmp_path / "a")
    _train(m, tmp_path / "b")
    a, b = (tmp_path / x / "checkpoint.pt" for x in "ab")
    assert a.read_bytes() == b.read_bytes()
    assert info["epochs_done"] == 2 and info["n_train"] == 24 and info["n_dev"] == 12
    assert info["class_weights"] == [1.0, 1.0] and info["stopped"] == "max_epochs"
    curve = pd.read_csv(tmp_path / "a" / "curve.csv")
    assert list(curve.columns) == ["epoch", "train_loss", "val_loss", "val_eer", "lr", "best", "seconds"]
    assert curve["epoch"].tolist() == [1, 2] and curve["val_loss"].min() == pytest.approx(info["best_val_loss"])
    saved = json.loads((tmp_path / "a" / "training.json").read_text())
    assert saved["manifest_sha256"] == info["manifest_sha256"] and len(saved["manifest_sha256"]) == 64
    other = train_model("ResNet18-logspec", m, settings={**TINY, "seed": "1"}, out=tmp_path / "c", log=lambda s: None)
    assert other[1]["config_sha256"] != info["config_sha256"]
    assert (tmp_path / "c" / "checkpoint.pt").read_bytes() != a.read_bytes()


def test_resume_after_a_stop_at_an_epoch_boundary_gives_the_same_checkpoint(tmp_path):
    m = cm_manifest(tmp_path / "data")
    _train(m, tmp_path / "full")
    _, first = _train(m, tmp_path / "split", stop_after=1)
    assert first["epochs_done"] == 1 and first["stopped"] == "stopped"
    _, second = _train(m, tmp_path / "split")
    assert second["epochs_done"] == 2
    assert (tmp_path / "split" / "checkpoint.pt").read_bytes() == (tmp_path / "full" / "checkpoint.pt").read_bytes()
    a, b = (torch.load(tmp_path / x / "state.pt", weights_only=True) for x in ("split", "full"))
    assert all(torch.equal(a["model"][k], b["model"][k]) for k in a["model"])
    sa, sb = a["optimizer"]["state"], b["optimizer"]["state"]
    assert all(torch.equal(sa[i][j], sb[i][j]) for i in sa for j in sa[i])
    drop = lambda curve: [{k: v for k, v in r.items() if k != "seconds"} for r in curve]  # noqa: E731 - timings differ
    assert drop(a["curve"]) == drop(b["curve"])
    # another config in the same folder is refused, not mixed in
    with pytest.raises(RunError, match="holds a training run with another config sha256"):
        train_model("ResNet18-logspec", m, settings={**TINY, "lr": "0.02"}, out=tmp_path / "split", log=lambda s: None)


#: ``cm train`` arguments of the kill test per model: the ResNet at TINY; AASIST (the authors'
#: full architecture) under ``--config small`` cut to 0.5 s clips and two epochs, on a
#: manifest of two utterances per speaker and label, to keep its three processes short.
KILL_ARGS = {
    "ResNet18-logspec": [x for k, v in TINY.items() for x in ("--set", f"{k}={v}")],
    "AASIST": ["--config", "small"]
    + [
        x for k, v in {"duration_s": "0.5", "max_epochs": "2", "batch_size": "4"}.items() for x in ("--set", f"{k}={v}")
    ],
}


@pytest.mark.slow  # 95 s; test_aasist_trains_byte_identically_resumes_and_scores resumes in make test
@pytest.mark.parametrize("model", list(KILL_ARGS))
def test_resume_after_a_kill_during_an_epoch_boundary_write_gives_the_same_checkpoint(tmp_path, model):
    """A real SIGKILL (crashpoints) while epoch 2's state.pt is being written: the rerun resumes
    from epoch 1's state and ends with the uninterrupted run's checkpoint bytes."""
    import signal

    from run_helpers import run_child

    cm_manifest(tmp_path / "data", **({"per_class": 2} if model == "AASIST" else {}))
    args = ["cm", "train", "--model", model, "--manifest", str(tmp_path / "data" / "manifest.csv")]
    args += [*KILL_ARGS[model], "--quiet"]
    full = run_child([*args, "--out", str(tmp_path / "full")], timeout=600)
    assert full.returncode == 0, full.stderr
    killed = run_child(
        [*args, "--out", str(tmp_path / "k")], env={"INTERBIAS_CRASH_AT": "write:state.pt@2"}, timeout=600
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert pd.read_csv(tmp_path / "k" / "curve.csv").epoch.max() == 1  # epoch 2 was lost with the kill
    again = run_child([*args, "--out", str(tmp_path / "k")], timeout=600)
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "k" / "checkpoint.pt").read_bytes() == (tmp_path / "full" / "checkpoint.pt").read_bytes()
    assert json.loads((tmp_path / "k" / "training.json").read_text())["label"] == model
    assert pd.read_csv(tmp_path / "k" / "curve.csv").epoch.tolist() == [1, 2]


def test_refuses_speaker_overlap_between_splits(tmp_path):
    speakers = {**SPEAKERS, "f4": ("female", "eval")}
    m = cm_manifest(tmp_path / "data", per_class=2, speakers=speakers)
    from interbias.corpora.manifest import Manifest, Utterance

    leak = m.utterances[0]  # a train speaker's utterance relabelled eval
    moved = Utterance.from_dict({**leak.to_dict(), "id": "leak", "split": "eval"})
    bad = Manifest(m.name, m.root, (*m.utterances, moved))
    with pytest.raises(
        ManifestError, match=r"1 speaker\(s\) appear in more than one split .* first: f1 in eval, train"
    ):
        _train(bad, tmp_path / "x")


def test_trained_checkpoint_loads_and_scores(tmp_path, monkeypatch):
    m = cm_manifest(tmp_path / "data")
    folder, _ = _train(m, tmp_path / "ck")
    cm = load_cm("ResNet18-logspec", path=folder)
    s = cm.score([np.zeros(8000, np.float32) + 0.01, np.ones(4000, np.float32) * 0.1])
    assert s.shape == (2,) and ((s >= 0) & (s <= 1)).all()
    assert cm.provenance()["manifest_sha256"] and cm.n_samples == 8000
    with pytest.raises(EncoderError, match="holds a 'ResNet18-logspec' model"):
        load_cm("ResNet18-cqt", path=folder / "checkpoint.pt")


def test_cli_trains_from_a_manifest(tmp_path):
    cm_manifest(tmp_path / "data")
    sets = [x for k, v in TINY.items() for x in ("--set", f"{k}={v}")]
    args = ["cm", "train", "--model", "ResNet18-cqt", "--manifest", str(tmp_path / "data" / "manifest.csv")]
    res = CliRunner().invoke(app, [*args, *sets, "--out", str(tmp_path / "o"), "--quiet"])
    assert res.exit_code == 0, res.output
    assert "ResNet18-cqt: 2 epoch(s) (max_epochs), best epoch" in res.output
    assert (tmp_path / "o" / "checkpoint.pt").is_file()
    bad = CliRunner().invoke(app, [*args, "--set", "lr", "--out", str(tmp_path / "p")])
    assert bad.exit_code == 1 and "--set 'lr': expected KEY=VALUE" in bad.output
    unknown = CliRunner().invoke(
        app, ["cm", "train", "--model", "AASIST-XL", "--manifest", str(tmp_path / "data" / "manifest.csv")]
    )
    assert unknown.exit_code == 1 and "AASIST-XL" in unknown.output and len(unknown.output.strip().splitlines()) == 1
    helptext = CliRunner().invoke(app, ["cm", "train", "--help"]).output
    assert "Example: interbias cm train --model ResNet18-logspec --config small" in helptext


def test_ssl_frontend_trains_and_its_folder_is_pinned(tmp_path):
    from encoder_fixtures import make_transformers

    m = cm_manifest(tmp_path / "data", per_class=2)
    hf = make_transformers(tmp_path / "wavlm", "wavlm", layer_norm=True)
    folder, info = train_model(
        "ResNet18-wavlm",
        m,
        settings={**TINY, "max_epochs": "1"},
        out=tmp_path / "w",
        frontend_path=hf,
        log=lambda s: None,
    )
    assert len(info["frontend_sha256"]) == 64
    cm = load_cm("ResNet18-wavlm", path=folder)
    assert cm.provenance()["frontend_sha256"] == info["frontend_sha256"]
    assert cm.score([np.full(8000, 0.01, np.float32)]).shape == (1,)
    other = make_transformers(tmp_path / "other", "wavlm", layer_norm=True, hidden=16)
    with pytest.raises(EncoderError, match="is not the one the checkpoint was trained with"):
        load_cm("ResNet18-wavlm", path=folder, frontend_path=other)


def plateau_lrs(val_losses: list[float], lr: float, factor: float, patience: int) -> list[float]:
    """The learning rate of each epoch under ReduceLROnPlateau's rule restated (mode min,
    relative threshold 1e-4, no cooldown): after more than ``patience`` epochs in a row whose
    loss is not below best·(1 − 1e-4), the rate is multiplied by ``factor``."""
    out, best, bad = [], float("inf"), 0
    for v in val_losses:
        out.append(lr)
        if v < best * (1 - 1e-4):
            best, bad = v, 0
        else:
            bad += 1
        if bad > patience:
            lr, bad = lr * factor, 0
    return out


def test_the_scheduler_steps_show_in_the_curve_and_survive_a_resume(tmp_path):
    m = cm_manifest(tmp_path / "data")
    settings = {**TINY, "max_epochs": "5", "lr": "0.05", "lr_patience": "0"}
    train_model("ResNet18-logspec", m, settings=dict(settings), out=tmp_path / "a", log=lambda s: None)
    curve = pd.read_csv(tmp_path / "a" / "curve.csv")
    want = plateau_lrs(curve["val_loss"].tolist(), 0.05, 0.5, 0)
    assert curve["lr"].tolist() == pytest.approx(want, rel=1e-12)
    assert curve["lr"].nunique() > 1, curve  # the rate was halved at least once in these five epochs
    train_model("ResNet18-logspec", m, settings=dict(settings), out=tmp_path / "b", log=lambda s: None, stop_after=2)
    train_model("ResNet18-logspec", m, settings=dict(settings), out=tmp_path / "b", log=lambda s: None)
    resumed = pd.read_csv(tmp_path / "b" / "curve.csv")
    assert resumed.drop(columns="seconds").equals(curve.drop(columns="seconds"))
    assert (tmp_path / "a" / "checkpoint.pt").read_bytes() == (tmp_path / "b" / "checkpoint.pt").read_bytes()


def test_aasist_trains_byte_identically_resumes_and_scores(tmp_path, monkeypatch):
    """cm train --model AASIST-L (0.5 s inputs, tile/cut): the same checkpoint bytes twice, the
    same after a stop and resume, dropout seeded; the checkpoint loads as AASIST-L (not the
    published one) and scores with the tile rule."""
    import json

    from interbias.cm.models import load_cm

    m = cm_manifest(tmp_path / "data", per_class=2)
    settings = {"duration_s": "0.5", "max_epochs": "2", "batch_size": "4", "lr": "0.001"}
    run = lambda out, **kw: train_model(  # noqa: E731
        "AASIST-L", m, settings=dict(settings), out=tmp_path / out, log=lambda s: None, **kw
    )
    _, info = run("a")
    run("b")
    run("c", stop_after=1)
    run("c")
    a = (tmp_path / "a" / "checkpoint.pt").read_bytes()
    assert a == (tmp_path / "b" / "checkpoint.pt").read_bytes() == (tmp_path / "c" / "checkpoint.pt").read_bytes()
    assert (
        info["epochs_done"] == 2 and json.loads((tmp_path / "a" / "training.json").read_text())["label"] == "AASIST-L"
    )
    cm = load_cm("AASIST-L", path=tmp_path / "a")
    assert cm.policy.pad == "tile" and cm.n_samples == 8000 and cm.provenance()["config_sha256"]
    assert cm.score([np.ones(3000, np.float32) * 0.1]).shape == (1,)
    monkeypatch.setenv("INTERBIAS_MODELS", str(tmp_path / "models"))
    folder, _ = train_model("AASIST-L", m, settings={**settings, "max_epochs": "1"}, log=lambda s: None)
    assert folder == tmp_path / "models" / "cm" / "AASIST-L" / "trained"  # never shadows the published file
