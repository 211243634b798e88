"""RawNet3's published checkpoint layout in interbias's own definition, and the native loader."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

import numpy as np
import pytest
import torch
from encoder_fixtures import make_rawnet3

from interbias.encoders import ENCODERS, load_from_layouts, probe_wave
from interbias.encoders.rawnet3 import RawNet3, SincBank
from interbias.utils.errors import EncoderError

#: ``model.pt`` in jungjee/RawNet3 (LFS pointer of commit e4b2908: sha256 1ab283bc…f90c).
PUBLISHED_BYTES = 65_297_133
#: RawNet3 (Jung et al., 2022), Table 1: 16.3 M parameters.
PUBLISHED_PARAMS_M = 16.3


def tiny(dim: int = 8):
    return dataclasses.replace(ENCODERS.get("RawNet3"), embedding_dim=dim)


def test_the_published_size_parameter_names_and_shapes() -> None:
    net = RawNet3()
    n = sum(p.numel() for p in net.parameters())
    assert round(n / 1e6, 1) == PUBLISHED_PARAMS_M and n == 16_280_322
    state = net.state_dict()
    shapes = {k: tuple(v.shape) for k, v in state.items()}
    assert len(state) == 234
    assert {
        "preprocess.0.flipped_filter": (1, 1, 2),
        "preprocess.1.weight": (1,),
        "conv1.filterbank.low_hz_": (128, 1),
        "conv1.filterbank.band_hz_": (128, 1),
        "conv1.filterbank.window_": (125,),
        "conv1.filterbank.n_": (1, 125),
        "bn1.running_var": (256,),
        "layer1.conv1.weight": (1024, 256, 1),
        "layer1.convs.6.weight": (128, 128, 3),
        "layer1.bns.6.num_batches_tracked": (),
        "layer1.residual.0.weight": (1024, 256, 1),
        "layer2.afms.alpha": (1024, 1),
        "layer3.afms.fc.weight": (1024, 1024),
        "layer4.weight": (1536, 3072, 1),
        "attention.0.weight": (128, 4608, 1),
        "attention.2.running_mean": (128,),
        "attention.3.weight": (1536, 128, 1),
        "bn5.weight": (3072,),
        "fc6.weight": (256, 3072),
        "bn6.running_var": (256,),
    }.items() <= shapes.items()
    assert not any(k.startswith(("layer2.residual", "layer3.residual")) for k in state)  # identity shortcuts
    buf = io.BytesIO()
    torch.save({"model": state}, buf)  # the published file's form; sizes agree within pickle overhead
    assert abs(len(buf.getvalue()) - PUBLISHED_BYTES) / PUBLISHED_BYTES < 1e-3


def test_sinc_filters_are_windowed_ideal_band_passes() -> None:
    bank = SincBank(8, 251)
    with torch.no_grad():
        bank.low_hz_.copy_(torch.tensor([[100.0], [-700.0], [1500.0], [3000.0]]))  # |low| is used
        bank.band_hz_.copy_(torch.tensor([[200.0], [400.0], [-900.0], [6000.0]]))
        filters = bank.filters()[:, 0, :].double().numpy()
    sr, half = 16000.0, 125
    n = np.arange(-half, half + 1)
    window = np.hamming(251)
    window[half + 1 :] = window[:half][::-1]
    low = 50 + np.abs([100.0, -700.0, 1500.0, 3000.0])
    high = np.minimum(low + 50 + np.abs([200.0, 400.0, -900.0, 6000.0]), sr / 2)
    for i, (fl, fh) in enumerate(zip(low, high, strict=True)):
        t = np.where(n == 0, 1, n) / sr
        cos = (np.sin(2 * np.pi * fh * t) - np.sin(2 * np.pi * fl * t)) / (np.pi * t)
        sin = (np.cos(2 * np.pi * fl * t) - np.cos(2 * np.pi * fh * t)) / (np.pi * t)
        cos[half], sin[half] = 2 * (fh - fl), 0.0
        np.testing.assert_allclose(filters[i], cos * window / (2 * (fh - fl)), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(filters[4 + i], sin * window / (2 * (fh - fl)), rtol=1e-4, atol=1e-5)


def test_the_published_layout_loads_by_name_and_embeds(tmp_path: Path) -> None:
    folder = make_rawnet3(tmp_path / "r3")
    enc = load_from_layouts(tiny(), path=str(folder))
    enc.check_dimension()
    assert enc.config == {
        "model": "RawNet3",
        "channels": 16,
        "scale": 4,
        "n_out": 8,
        "pooled": 24,
        "attention": 8,
        "sinc": "251/10",
        "input": "whole utterance",
    }
    w = probe_wave(1.0)
    a = enc.embed([w, w[:300]])  # a 19 ms input is wrap-padded to the shortest the network takes
    assert a.shape == (2, 8) and a.tobytes() == enc.embed([w, w[:300]]).tobytes()
    with torch.inference_mode():  # the embedding is the network's output, normalised
        ref = enc.model(torch.from_numpy(w)[None])[0].double().numpy()
    np.testing.assert_allclose(a[0], ref / np.linalg.norm(ref), rtol=1e-5, atol=1e-6)
    bare = tmp_path / "bare"  # a plain state dict (not under "model") is the same network
    bare.mkdir()
    torch.save(torch.load(folder / "model.pt", weights_only=True)["model"], bare / "model.pt")
    np.testing.assert_array_equal(load_from_layouts(tiny(), path=str(bare)).embed([w]), a[:1])


def test_other_checkpoints_are_refused_in_one_line(tmp_path: Path) -> None:
    folder = make_rawnet3(tmp_path / "r3")
    state = torch.load(folder / "model.pt", weights_only=True)["model"]
    cases = {
        "missing": {k: v for k, v in state.items() if k != "bn6.weight"},
        "extra": {**state, "fc7.weight": torch.zeros(2, 2)},
        "other": {"conv.weight": torch.zeros(2, 2)},
    }
    for name, sd in cases.items():
        d = tmp_path / name
        d.mkdir()
        torch.save({"model": sd}, d / "model.pt")
        with pytest.raises(EncoderError) as info:
            load_from_layouts(tiny(), path=str(d))
        msg = str(info.value)
        assert msg.startswith("RawNet3: model.pt does not match RawNet3 (") and "\n" not in msg
        assert msg.endswith(f" in {d} (expected [model.pt] or [model.onnx])")
    assert 'Missing key(s) in state_dict: "bn6.weight"' in str(_error(tmp_path / "missing"))
    assert "no tensor 'layer1.conv3.weight'" in str(_error(tmp_path / "other"))
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "model.pt").write_bytes(b"not a checkpoint")
    assert str(_error(tmp_path / "junk")).startswith("RawNet3: cannot load model.pt (")


def _error(folder: Path) -> EncoderError:
    with pytest.raises(EncoderError) as info:
        load_from_layouts(tiny(), path=str(folder))
    return info.value
