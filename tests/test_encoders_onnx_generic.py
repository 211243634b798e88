"""Generic ONNX backend (waveform, WeSpeaker fbank and NeMo mel inputs) via the real loader."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

import numpy as np
import pytest
import torch
from encoder_fixtures import make_onnx

from interbias.encoders import ENCODERS, load_encoder, load_from_layouts, probe_wave
from interbias.encoders.features import nemo_mel
from interbias.encoders.wespeaker import wespeaker_fbank
from interbias.utils.errors import EncoderError

pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")


def tiny(label: str):
    return dataclasses.replace(ENCODERS.get(label), embedding_dim=16)


def weights(folder: Path, name: str) -> np.ndarray:
    model = onnx.load(str(folder / "model.onnx"))
    return next(onnx.numpy_helper.to_array(t) for t in model.graph.initializer if t.name == name)


def normed(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


def test_waveform_export_rawnet3(tmp_path: Path) -> None:
    folder = make_onnx(tmp_path, "waveform")
    enc = load_from_layouts(tiny("RawNet3"), path=str(folder))
    enc.check_dimension()
    w = probe_wave(1.0)
    a = enc.embed([w, w[:9000]])
    assert a.shape == (2, 16) and a.tobytes() == enc.embed([w, w[:9000]]).tobytes()
    sha = hashlib.sha256((folder / "model.onnx").read_bytes()).hexdigest()
    assert enc.checkpoint_sha256 == sha and enc.files == {"model.onnx": sha}  # one file: its own hash
    W = weights(folder, "conv_w")[:, 0, :].astype(np.float64)  # numpy reference: strided frames · W
    frames = np.lib.stride_tricks.sliding_window_view(w.astype(np.float64), 400)[::160]
    np.testing.assert_allclose(a[0], normed(np.tanh(frames @ W.T).mean(0)), rtol=1e-4, atol=1e-5)


def test_wespeaker_fbank_export_is_an_alternative_layout(tmp_path: Path) -> None:
    folder = make_onnx(tmp_path, "wespeaker-fbank")
    enc = load_from_layouts(tiny("ECAPA-TDNN-Large"), path=str(folder))
    assert enc.config == {"input": "wespeaker-fbank", "bins": 80, "output": "emb"}
    w = probe_wave(0.8)
    feats = wespeaker_fbank(torch.from_numpy(w), 80).numpy().astype(np.float64)
    ref = np.tanh(feats @ weights(folder, "proj")).mean(0)
    np.testing.assert_allclose(enc.embed([w])[0], normed(ref), rtol=1e-4, atol=1e-5)


def test_nemo_mel_export_takes_a_length_and_names_its_output(tmp_path: Path) -> None:
    folder = make_onnx(tmp_path, "nemo-mel")
    enc = load_from_layouts(tiny("TitaNet"), path=str(folder))
    assert enc.output == "embs" and enc.length_input == ("length", "tensor(int64)")
    w = probe_wave(0.8)
    mel = nemo_mel(torch.from_numpy(w)).numpy().astype(np.float64)
    ref = np.tanh(mel.T @ weights(folder, "proj")).mean(0)
    np.testing.assert_allclose(enc.embed([w])[0], normed(ref), rtol=1e-4, atol=1e-5)


def test_wrong_input_wrong_dimension_and_unnamed_outputs(tmp_path: Path) -> None:
    fb = make_onnx(tmp_path / "fb", "wespeaker-fbank")
    with pytest.raises(EncoderError) as info:
        load_from_layouts(tiny("RawNet3"), path=str(fb))
    assert str(info.value) == (
        f"RawNet3: model.onnx: input feats is tensor(float) [1, 'F', 80]; RawNet3 feeds waveform in {fb} "
        "(expected [model.pt] or [model.onnx])"
    )
    wav = make_onnx(tmp_path / "wav", "waveform")
    with pytest.raises(
        EncoderError,
        match=r"^ReDimNet: the checkpoint in .*model.onnx gives 16-dimensional embeddings; ReDimNet is 192",
    ):
        load_encoder("ReDimNet", options={"path": str(wav)})
    mel40 = make_onnx(tmp_path / "mel40", "nemo-mel", bins=40)
    with pytest.raises(EncoderError, match=r"^TitaNet: model\.onnx: input takes 40 feature bins; TitaNet uses 80 in "):
        load_from_layouts(tiny("TitaNet"), path=str(mel40))
    two = make_onnx(tmp_path / "two", "nemo-mel")
    unnamed = dataclasses.replace(tiny("TitaNet"), expect={"onnx_input": "nemo-mel", "bins": 80})
    with pytest.raises(
        EncoderError, match=r"^TitaNet: model.onnx: several outputs \(logits, embs\) and the card names none"
    ):
        load_from_layouts(unnamed, path=str(two))


def test_corrupt_file_external_data_and_cuda_without_provider(tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "model.onnx").write_bytes(b"\x08\x07garbage" * 10)
    with pytest.raises(
        EncoderError,
        match=rf"^RawNet3: onnxruntime cannot load model.onnx \(.*\) in {bad} \(expected \[model.pt\] or \[model.onnx\]\)",
    ):
        load_from_layouts(tiny("RawNet3"), path=str(bad))
    ext = make_onnx(tmp_path / "ext", "waveform")
    model = onnx.load(str(ext / "model.onnx"))
    onnx.save_model(
        model, str(ext / "model.onnx"), save_as_external_data=True, location="weights.bin", size_threshold=0
    )
    assert (ext / "weights.bin").is_file()
    with pytest.raises(EncoderError, match=r"^RawNet3: onnxruntime cannot load model.onnx"):
        load_from_layouts(tiny("RawNet3"), path=str(ext))  # weights.bin would escape the hash
    import onnxruntime

    if "CUDAExecutionProvider" not in onnxruntime.get_available_providers():
        with pytest.raises(EncoderError, match=r"^RawNet3: --device cuda needs onnxruntime's CUDAExecutionProvider"):
            load_from_layouts(tiny("RawNet3"), path=str(make_onnx(tmp_path / "ok", "waveform")), device="cuda")
