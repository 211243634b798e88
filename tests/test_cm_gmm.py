"""GMM-lfcc: EM against a restatement, same seed → identical mixtures, resume after a stop and
after a real kill gives the same checkpoint, scoring, refusals."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from cm_fixtures import cm_manifest
from scipy.stats import multivariate_normal

from interbias.cm.gmm import GMMConfig, em_step, init_mixture, log_gauss
from interbias.cm.gmm_train import train_gmm as train_model
from interbias.cm.models import load_cm
from interbias.cm.train import train_model as train_loop
from interbias.utils.errors import ConfigError

SMALL = {"duration_s": "0.5", "n_components": "3", "max_iter": "4"}


def _train(m, out: Path, **kw):
    return train_model("GMM-lfcc", m, preset="small", settings=dict(SMALL), out=out, log=lambda s: None, **kw)


def test_em_step_matches_a_restatement():
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.normal(0, 1, (40, 2)), rng.normal(4, 0.5, (40, 2))])
    g = init_mixture(x, 2, 0, "toy")
    dens = np.stack(
        [g["weights"][k] * multivariate_normal(g["means"][k], np.diag(g["vars"][k])).pdf(x) for k in range(2)], axis=1
    )
    np.testing.assert_allclose(np.exp(log_gauss(x, g["weights"], g["means"], g["vars"])), dens, rtol=1e-10)
    r = dens / dens.sum(axis=1, keepdims=True)
    new, ll = em_step(x, g, np.full(2, 1e-9))
    assert ll == pytest.approx(np.log(dens.sum(axis=1)).mean(), rel=1e-12)
    nk = r.sum(axis=0)
    mu = (r.T @ x) / nk[:, None]
    np.testing.assert_allclose(new["weights"], nk / len(x), rtol=1e-12)
    np.testing.assert_allclose(new["means"], mu, rtol=1e-12)
    var = np.stack([(r[:, k : k + 1] * (x - mu[k]) ** 2).sum(axis=0) / nk[k] for k in range(2)])
    np.testing.assert_allclose(new["vars"], var, rtol=1e-9)


def test_same_seed_same_mixtures_and_resume_after_a_stop(tmp_path):
    m = cm_manifest(tmp_path / "data")
    _, info = _train(m, tmp_path / "a")
    _train(m, tmp_path / "b")
    a = (tmp_path / "a" / "checkpoint.pt").read_bytes()
    assert a == (tmp_path / "b" / "checkpoint.pt").read_bytes()
    assert info["iterations"] == 4 and info["stopped"] == "max_iter" and 0 <= info["dev_eer"] <= 1
    _, first = _train(m, tmp_path / "c", stop_after=2)
    assert first["stopped"] == "stopped" and not (tmp_path / "c" / "checkpoint.pt").exists()
    _train(m, tmp_path / "c")
    assert (tmp_path / "c" / "checkpoint.pt").read_bytes() == a
    other = train_model("GMM-lfcc", m, preset="small", settings={**SMALL, "seed": "1"}, out=tmp_path / "d", log=print)
    assert other[1]["config_sha256"] != info["config_sha256"]
    ck = torch.load(tmp_path / "d" / "checkpoint.pt", weights_only=True)
    assert not torch.equal(
        ck["mixtures"]["spoof"]["means"], torch.load(tmp_path / "a" / "checkpoint.pt")["mixtures"]["spoof"]["means"]
    )


@pytest.mark.slow
def test_resume_after_a_kill_gives_the_same_checkpoint(tmp_path):
    import signal

    from run_helpers import run_child

    cm_manifest(tmp_path / "data")
    args = [
        "cm",
        "train",
        "--model",
        "GMM-lfcc",
        "--config",
        "small",
        "--manifest",
        str(tmp_path / "data" / "manifest.csv"),
    ]
    args += [x for k, v in SMALL.items() for x in ("--set", f"{k}={v}")] + ["--quiet"]
    full = run_child([*args, "--out", str(tmp_path / "full")], timeout=600)
    assert full.returncode == 0, full.stderr
    killed = run_child(
        [*args, "--out", str(tmp_path / "k")], env={"INTERBIAS_CRASH_AT": "write:state.pt@3"}, timeout=600
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    again = run_child([*args, "--out", str(tmp_path / "k")], timeout=600)
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "k" / "checkpoint.pt").read_bytes() == (tmp_path / "full" / "checkpoint.pt").read_bytes()
    assert json.loads((tmp_path / "k" / "training.json").read_text())["iterations"] == 4


def test_scores_are_the_mean_frame_llr_and_bad_settings_are_refused(tmp_path):
    from interbias.cm.gmm import frontend, mixture_llk

    m = cm_manifest(tmp_path / "data")
    folder, _ = _train(m, tmp_path / "a")
    cm = load_cm("GMM-lfcc", path=folder)
    wave = np.sin(np.arange(3000) / 5).astype(np.float32) * 0.2
    logits = cm.logits([wave])
    tiled = np.tile(wave, 8000 // 3000 + 1)[:8000]  # the tile rule
    x = frontend()(torch.from_numpy(tiled)[None])[0].numpy().T.astype(np.float64)
    mix = cm.model.mixtures
    assert logits[0, 0] == 0 and logits[0, 1] == pytest.approx(
        (mixture_llk(x, mix["bonafide"]) - mixture_llk(x, mix["spoof"])).mean(), rel=1e-6
    )
    assert cm.score([wave])[0] == pytest.approx(1 / (1 + np.exp(-logits[0, 1])), rel=1e-12)
    with pytest.raises(ConfigError, match=r"^cm train GMM-lfcc: tol='x' is not a number$"):
        GMMConfig().override({"tol": "x"})
    with pytest.raises(ConfigError, match="unknown setting 'width'"):
        train_model("GMM-lfcc", m, settings={"width": "3"}, out=tmp_path / "x")
    with pytest.raises(ConfigError, match="GMM-lfcc is trained by EM, not this loop"):
        train_loop("GMM-lfcc", m)
    with pytest.raises(ConfigError, match="fewer than n_components"):
        train_model("GMM-lfcc", m, settings={"duration_s": "0.5", "n_components": "100000"}, out=tmp_path / "y")
