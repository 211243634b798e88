"""WeSpeaker PyTorch backend: config.yaml + avg_model.pt through the real loader."""

from __future__ import annotations

import dataclasses
import hashlib
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from encoder_fixtures import make_wespeaker

from interbias.encoders import ENCODERS, load_encoder, load_from_layouts, probe_wave
from interbias.encoders.wespeaker import wespeaker_fbank
from interbias.encoders.wespeaker_models import build
from interbias.utils.errors import EncoderError


@pytest.mark.parametrize(
    ("name", "embed_dim", "millions"),
    [
        # parameter counts published in WeSpeaker's VoxCeleb model-zoo table
        ("ResNet34", 256, 6.63),
        ("ResNet221", 256, 23.79),
        ("ResNet293", 256, 28.62),
        ("ECAPA_TDNN_GLOB_c512", 192, 6.19),
    ],
)
def test_architectures_have_the_published_sizes(name: str, embed_dim: int, millions: float) -> None:
    model = build(name, {"feat_dim": 80, "embed_dim": embed_dim}, {})
    assert sum(p.numel() for p in model.parameters()) / 1e6 == pytest.approx(millions, abs=0.01)


def test_ecapa_c1024_width_follows_the_checkpoint() -> None:
    # released voxceleb_ECAPA1024: 14.65 M parameters (post-block conv 3072 -> 1536); early code had 3072 -> 3072
    narrow = build(
        "ECAPA_TDNN_GLOB_c1024", {"feat_dim": 80, "embed_dim": 192}, {"conv.weight": torch.zeros(1536, 3072, 1)}
    )
    wide = build("ECAPA_TDNN_GLOB_c1024", {"feat_dim": 80, "embed_dim": 192}, {})
    assert sum(p.numel() for p in narrow.parameters()) / 1e6 == pytest.approx(14.65, abs=0.01)
    assert narrow.pool.linear1.weight.shape == (128, 1536 * 3, 1) and wide.conv.weight.shape == (3072, 3072, 1)


def test_state_dict_names_are_wespeakers() -> None:
    keys = set(build("ECAPA_TDNN_GLOB_c512", {"feat_dim": 80, "embed_dim": 192}, {}).state_dict())
    for k in (
        "layer1.conv.weight",
        "layer1.bn.running_var",
        "layer2.se_res2block.0.conv.weight",
        "layer2.se_res2block.1.convs.6.weight",
        "layer4.se_res2block.1.bns.0.num_batches_tracked",
        "layer3.se_res2block.3.linear2.bias",
        "conv.weight",
        "pool.linear1.weight",
        "pool.linear2.bias",
        "bn.running_mean",
        "linear.weight",
    ):
        assert k in keys, k
    keys = set(build("ResNet34", {"feat_dim": 80, "embed_dim": 256, "two_emb_layer": True}, {}).state_dict())
    for k in ("conv1.weight", "bn1.weight", "layer2.0.shortcut.0.weight", "layer4.2.bn2.bias", "seg_1.weight"):
        assert k in keys, k
    assert {"seg_bn_1.running_mean", "seg_2.weight"} <= keys and "seg_bn_1.weight" not in keys  # affine=False


def test_features_match_kaldi_native_fbank_with_hamming_window() -> None:
    knf = pytest.importorskip("kaldi_native_fbank")
    w = probe_wave(1.0)
    opts = knf.FbankOptions()
    opts.frame_opts.dither = 0
    opts.frame_opts.window_type = "hamming"
    opts.mel_opts.num_bins = 80
    f = knf.OnlineFbank(opts)
    f.accept_waveform(16000, (w * 32768).tolist())
    f.input_finished()
    ref = np.stack([f.get_frame(i) for i in range(f.num_frames_ready)])
    ref = ref - ref.mean(axis=0)
    ours = wespeaker_fbank(torch.from_numpy(w), 80).numpy()
    assert ours.shape == ref.shape and np.abs(ours - ref).max() < 2e-3


@pytest.fixture(scope="module")
def ws_dir(tmp_path_factory) -> Path:
    return make_wespeaker(tmp_path_factory.mktemp("ws") / "resnet18", "ResNet18", feat_dim=16, embed_dim=8)


def card(label: str = "ResNet34", model: str = "ResNet18", dim: int = 8):
    base = ENCODERS.get(label)
    return dataclasses.replace(base, embedding_dim=dim, expect={**base.expect, "model": model})


def test_model_zoo_folder_loads_with_dimension_determinism_and_hashes(ws_dir: Path) -> None:
    enc = load_from_layouts(card(), path=str(ws_dir))
    enc.check_dimension()
    w = probe_wave(1.0)
    a = enc.embed([w, w[:12000]])
    assert a.shape == (2, 8) and a.tobytes() == enc.embed([w, w[:12000]]).tobytes()
    shas = {n: hashlib.sha256((ws_dir / n).read_bytes()).hexdigest() for n in ("avg_model.pt", "config.yaml")}
    assert enc.files == shas
    text = f"avg_model.pt\t{shas['avg_model.pt']}\nconfig.yaml\t{shas['config.yaml']}\n"
    assert enc.checkpoint_sha256 == hashlib.sha256(text.encode()).hexdigest()
    # independent forward: the saved state dict (minus the training head) in a fresh model
    state = torch.load(ws_dir / "avg_model.pt", weights_only=True)
    assert "projection.weight" in state
    del state["projection.weight"]
    ref_model = build("ResNet18", {"feat_dim": 16, "embed_dim": 8}, state)
    ref_model.load_state_dict(state)
    with torch.no_grad():
        ref = ref_model.eval()(wespeaker_fbank(torch.from_numpy(w), 16)[None])[0].numpy()
    np.testing.assert_allclose(a[0], ref / np.linalg.norm(ref), rtol=1e-5, atol=1e-6)
    assert not enc.model.training


def test_ecapa_glob_folder_loads(tmp_path: Path) -> None:
    folder = make_wespeaker(tmp_path / "ecapa", "ECAPA_TDNN_GLOB_c512", feat_dim=80, embed_dim=8)
    enc = load_from_layouts(card("ECAPA-TDNN-Large", "ECAPA_TDNN_GLOB_c512"), path=str(folder))
    assert enc.embed([probe_wave(0.5)]).shape == (1, 8)


def test_real_label_refuses_another_model_and_wrong_shapes(ws_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(EncoderError) as info:
        load_encoder("ECAPA-TDNN-Large", options={"path": str(ws_dir)})
    assert str(info.value) == (
        f"ECAPA-TDNN-Large: config.yaml names model ResNet18; ECAPA-TDNN-Large is ECAPA_TDNN_GLOB_c1024 in {ws_dir} "
        "(expected [config.yaml + avg_model.pt] or [model.onnx])"
    )
    shifted = tmp_path / "shifted"
    shutil.copytree(ws_dir, shifted)
    cfg = yaml.safe_load((shifted / "config.yaml").read_text())
    cfg["model_args"]["embed_dim"] = 10
    (shifted / "config.yaml").write_text(yaml.safe_dump(cfg))
    with pytest.raises(EncoderError, match=r"^ResNet34: avg_model.pt does not match ResNet18 \(Error\(s\) in loading"):
        load_from_layouts(card(), path=str(shifted))


def test_corrupt_missing_and_pickled_objects(ws_dir: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    shutil.copytree(ws_dir, bad)
    (bad / "avg_model.pt").write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(EncoderError, match=rf"^ResNet34: cannot load avg_model.pt \(.*\) in {bad} \(expected"):
        load_from_layouts(card(), path=str(bad))
    torch.save({"conv1.weight": torch.zeros(1), "hook": Path("/")}, bad / "avg_model.pt")
    with pytest.raises(EncoderError, match=r"^ResNet34: cannot load avg_model.pt \(UnpicklingError"):
        load_from_layouts(card(), path=str(bad))
    (bad / "avg_model.pt").unlink()
    with pytest.raises(
        EncoderError, match=rf"^ResNet34: wespeaker: missing avg_model.pt; onnx: missing model.onnx in {bad}"
    ):
        load_from_layouts(card(), path=str(bad))
