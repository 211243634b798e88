"""The frame-level LCNN: LFCC against a numpy restatement, frame labels by the centre rule, regions
by threshold + minimum length, training deterministic and resumable, `cm score --regions`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from cm_fixtures import cm_manifest
from typer.testing import CliRunner

from interbias.cli import app
from interbias.cm.lcnn_frames import (
    HOP,
    IGNORE,
    RegionRule,
    frame_labels,
    frame_lfcc,
    frame_network,
    load_frame_detector,
    regions_from_posteriors,
    train_frames,
)
from interbias.corpora.had import HADSpec, write_had
from interbias.corpora.manifest import Utterance
from interbias.utils.errors import ConfigError
from interbias.utils.seeding import derive_rng

TINY = {"duration_s": "0.5", "width": "4", "max_epochs": "2", "batch_size": "4", "lr": "0.01"}


def _old_frame_lfcc(x: torch.Tensor) -> torch.Tensor:
    """The detector's LFCC as it was written before it joined cm.frontends.LFCC (own filterbank over
    FFT bins, DCT and deltas), kept to pin the shared class to the same bytes."""
    n_bins, t = 257, -(-x.shape[-1] // 160)
    edges, k = np.linspace(0, n_bins - 1, 22), np.arange(n_bins)
    fb = np.stack([np.clip(np.minimum((k - edges[i]) / (edges[i + 1] - edges[i]),
                                      (edges[i + 2] - k) / (edges[i + 2] - edges[i + 1])), 0, None) for i in range(20)])  # fmt: skip
    n = np.arange(20)
    dct = np.cos(np.pi / 20 * (n + 0.5)[None, :] * np.arange(20)[:, None]) * np.sqrt(2.0 / 20)
    dct[0] /= np.sqrt(2.0)
    fb_t, dct_t = torch.from_numpy(fb.astype(np.float32)), torch.from_numpy(dct.astype(np.float32))
    xp = torch.nn.functional.pad(x, (80, (t - 1) * 160 + 320 - x.shape[-1] - 80))
    power = torch.fft.rfft(xp.unfold(-1, 320, 160) * torch.hann_window(320), n=512).abs() ** 2
    c = (torch.log(power @ fb_t.T + 1e-10) @ dct_t.T).transpose(1, 2)

    def delta(v: torch.Tensor) -> torch.Tensor:
        p = torch.cat([v[..., :1], v, v[..., -1:]], dim=-1)
        return (p[..., 2:] - p[..., :-2]) / 2

    return torch.cat([c, delta(c), delta(delta(c))], dim=1)


@pytest.mark.parametrize("n", [321, 12345, 16000])
def test_shared_lfcc_gives_the_detectors_features_unchanged(n):
    x = torch.from_numpy(0.1 * derive_rng("lfcc-check", n).standard_normal((2, n)).astype(np.float32))
    assert torch.equal(frame_lfcc()(x), _old_frame_lfcc(x))


def test_lfcc_against_a_numpy_restatement():
    x = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    got = frame_lfcc()(torch.from_numpy(x)[None])[0].numpy()
    assert got.shape == (60, 7)  # ⌈1000 / 160⌉ frames
    # frame 2 covers samples [320, 480): its 320-sample window starts 80 samples earlier
    w = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(320) / 320)
    seg = x[320 - 80 : 320 - 80 + 320] * w
    power = np.abs(np.fft.rfft(seg, 512)) ** 2
    edges = np.linspace(0, 256, 22)
    k = np.arange(257)
    fb = np.array([np.clip(np.minimum((k - a) / (b - a), (c - k) / (c - b)), 0, None) for a, b, c in
                   zip(edges[:-2], edges[1:-1], edges[2:], strict=True)])  # fmt: skip
    logfb = np.log(fb @ power + 1e-10)
    n = np.arange(20)
    ceps = [np.sqrt((1 if q == 0 else 2) / 20) * np.sum(logfb * np.cos(np.pi * q * (n + 0.5) / 20)) for q in range(20)]
    assert got[:20, 2] == pytest.approx(ceps, rel=1e-3, abs=1e-3)


def test_frame_labels_follow_the_centre_rule():
    u = Utterance(id="u", path="x", speaker="s", attrs={"label": "spoof", "fake_regions": "240-400;1000-1050"})
    y = frame_labels(u, 1100, 9)
    # centres 80, 240, 400, 560, ..., 1040: frame 1 (240 in [240, 400)) and frame 6 (1040 in [1000, 1050)) fake
    assert y.tolist() == [1, 0, 1, 1, 1, 1, 0, IGNORE, IGNORE]
    with pytest.raises(ConfigError, match="spoof utterance v has no fake_regions"):
        frame_labels(Utterance(id="v", path="x", speaker="s", attrs={"label": "spoof"}), 100, 1)


def test_regions_by_threshold_and_minimum_length():
    p = np.array([0.9, 0.2, 0.8, 0.8, 0.8, 0.6, 0.1, 0.7, 0.7, 0.51])
    rule = RegionRule(0.5, 0.03)  # 3 frames
    assert rule.min_frames == 3
    assert regions_from_posteriors(p, 1550, rule) == [(2 * HOP, 6 * HOP), (7 * HOP, 1550)]
    assert regions_from_posteriors(p, 1600, RegionRule(0.75, 0.0)) == [(0, HOP), (2 * HOP, 5 * HOP)]
    with pytest.raises(ConfigError, match="threshold must lie in"):
        RegionRule(1.0).check()


@pytest.fixture(scope="module")
def had(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("had")
    spec = HADSpec(fake_share=0.6, min_segment_s=0.05, max_segment_s=0.15)
    return write_had(cm_manifest(tmp / "data"), tmp / "had", spec)


def _train(m, out: Path, **kw):
    return train_frames(m, settings={**TINY, **kw.pop("extra", {})}, out=out, log=lambda s: None, **kw)


def test_training_is_deterministic_and_resumable(had, tmp_path):
    _, info = _train(had, tmp_path / "a")
    _train(had, tmp_path / "b")
    a = (tmp_path / "a" / "checkpoint.pt").read_bytes()
    assert a == (tmp_path / "b" / "checkpoint.pt").read_bytes()
    assert info["epochs_done"] == 2 and info["label"] == "LCNN-LFCC-frames"
    assert (
        info["n_train_bonafide"] + sum(1 for u in had if u.get("split") == "train" and u.get("label") == "spoof")
        == info["n_train"]
    )
    _, first = _train(had, tmp_path / "split", stop_after=1)
    assert first["stopped"] == "stopped"
    _train(had, tmp_path / "split")
    assert (tmp_path / "split" / "checkpoint.pt").read_bytes() == a
    _train(had, tmp_path / "c", extra={"seed": "1"})
    assert (tmp_path / "c" / "checkpoint.pt").read_bytes() != a
    det = load_frame_detector(tmp_path / "a")
    p = det.posteriors(np.zeros(1234, dtype=np.float32))
    assert p.shape == (8,) and ((p >= 0) & (p <= 1)).all()
    net = frame_network(4)
    assert set(net.classifier.state_dict()) == set(det.net.classifier.state_dict())


def test_cli_trains_scores_regions_and_cm_eval_reads_them(had, tmp_path):
    runner = CliRunner()
    sets = [x for k, v in TINY.items() for x in ("--set", f"{k}={v}")]
    res = runner.invoke(app, ["cm", "train", "--model", "LCNN-LFCC-frames", "--manifest", str(had.root / "manifest.jsonl"),
                              "--out", str(tmp_path / "m"), "-q", *sets])  # fmt: skip
    assert res.exit_code == 0, res.output
    evals = [u for u in had if u.get("split") == "eval"]
    m = had.__class__(had.name, had.root, tuple(evals))
    m.write(tmp_path / "eval.jsonl")
    out = tmp_path / "pred.txt"
    res = runner.invoke(app, ["cm", "score", "LCNN-LFCC-frames", "--manifest", str(tmp_path / "eval.jsonl"),
                              "--checkpoint", str(tmp_path / "m"), "--regions", str(out), "-q"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert len(out.read_text().splitlines()) == len(evals)
    res = runner.invoke(app, ["scores", "cm-eval", "location", str(had.root / "reference_eval.txt"), str(out),
                              "--resolution", "10ms", "--json"])  # fmt: skip
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["cm", "score", "ResNet18-logspec", "--manifest", str(tmp_path / "eval.jsonl"),
                              "--regions", str(out)])  # fmt: skip
    assert res.exit_code == 1
    assert res.stderr.strip() == (
        "error: cm score --regions: only the frame detector LCNN-LFCC-frames locates regions, not ResNet18-logspec"
    )
