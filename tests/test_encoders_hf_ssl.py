"""Hugging Face backend (WavLM, HuBERT, UniSpeech-SAT): tiny hub snapshots via the real loader."""

from __future__ import annotations

import dataclasses
import hashlib
import shutil
from importlib.util import find_spec
from pathlib import Path

import numpy as np
import pytest
import torch
from encoder_fixtures import make_transformers

from interbias.encoders import ENCODERS, load_encoder, load_from_layouts, probe_wave
from interbias.utils.errors import EncoderError

pytestmark = pytest.mark.skipif(find_spec("transformers") is None, reason="transformers is not installed")
FILES = ["config.json", "model.safetensors", "preprocessor_config.json"]


@pytest.fixture(scope="module")
def hf_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf")
    return {
        "wavlm": make_transformers(root / "wavlm", "wavlm", layer_norm=False),
        "hubert": make_transformers(root / "hubert", "hubert", layer_norm=True),
    }


def tiny(label: str, layers: int = 2):
    card = ENCODERS.get(label)
    return dataclasses.replace(card, embedding_dim=32, expect={**card.expect, "layers": layers})


def test_wavlm_folder_mean_of_final_layer(hf_dirs) -> None:
    folder = hf_dirs["wavlm"]
    enc = load_from_layouts(tiny("WavLM-Base"), path=str(folder))
    enc.check_dimension()
    w = probe_wave(1.0)
    a = enc.embed([w, w[:8000]])
    assert a.shape == (2, 32) and a.tobytes() == enc.embed([w, w[:8000]]).tobytes()
    shas = {n: hashlib.sha256((folder / n).read_bytes()).hexdigest() for n in FILES}
    assert enc.files == shas
    assert enc.checkpoint_sha256 == hashlib.sha256("".join(f"{n}\t{shas[n]}\n" for n in FILES).encode()).hexdigest()
    import transformers

    ref_model = transformers.WavLMModel.from_pretrained(folder).eval()
    with torch.no_grad():
        ref = ref_model(torch.from_numpy(w)[None]).last_hidden_state[0].mean(0).numpy()  # do_normalize is False
    np.testing.assert_allclose(a[0], ref / np.linalg.norm(ref), rtol=1e-5, atol=1e-6)
    assert enc.config == {"model_type": "wavlm", "layer": 2, "pooling": "mean over frames", "do_normalize": False}
    assert not enc.batches()  # group-norm CNN: never padded


def test_layer_option_and_its_range(hf_dirs) -> None:
    folder = hf_dirs["wavlm"]
    final = load_from_layouts(tiny("WavLM-Base"), path=str(folder))
    first = load_from_layouts(tiny("WavLM-Base"), path=str(folder), layer=1)
    same = load_from_layouts(tiny("WavLM-Base"), path=str(folder), layer=2)
    w = probe_wave(1.0)
    import transformers

    ref_model = transformers.WavLMModel.from_pretrained(folder).eval()
    with torch.no_grad():
        ref = ref_model(torch.from_numpy(w)[None], output_hidden_states=True).hidden_states[1][0].mean(0).numpy()
    np.testing.assert_allclose(first.embed([w])[0], ref / np.linalg.norm(ref), rtol=1e-5, atol=1e-6)
    assert same.fingerprint == final.fingerprint != first.fingerprint
    with pytest.raises(EncoderError, match=r"^WavLM-Base: layer 3 is out of range 0..2 in "):
        load_from_layouts(tiny("WavLM-Base"), path=str(folder), layer=3)


def test_hubert_normalises_input_and_pads_with_masks(hf_dirs) -> None:
    enc = load_from_layouts(tiny("HuBERT-Large"), path=str(hf_dirs["hubert"]))
    assert enc.normalize and enc.attention_mask
    w = probe_wave(1.0) * 3.0
    import transformers

    ref_model = transformers.HubertModel.from_pretrained(hf_dirs["hubert"]).eval()
    x = (w - w.mean()) / np.sqrt(w.var() + 1e-7)
    with torch.no_grad():
        ref = ref_model(torch.from_numpy(x)[None]).last_hidden_state[0].mean(0).numpy()
    np.testing.assert_allclose(enc.embed([w])[0], ref / np.linalg.norm(ref), rtol=1e-5, atol=1e-6)
    # padded batch (the CUDA path, run here on CPU): masks and per-item frame counts keep items apart
    short = probe_wave(0.7)
    batch = enc._embed_batch([w, short])
    np.testing.assert_allclose(batch[1], enc._embed_one(short), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(batch[0], enc._embed_one(w), rtol=1e-4, atol=1e-5)
    # batch="always" takes the masked path on CPU: one network call, padding counted in frames
    enc.set_batching("always")
    calls, alone = enc.batch_calls, enc.embed([w])[0]
    both = enc.embed([w, short])
    assert enc.batch_calls == calls + 2 and enc.valid_frames == sum(enc.frame_count(x.size) for x in (w, short))
    assert enc.padded_frames == enc.frame_count(w.size) - enc.frame_count(short.size) > 0
    assert float(both[0] @ alone) >= 1 - 1e-5


def test_unispeech_sat_folder_loads(tmp_path: Path) -> None:
    folder = make_transformers(tmp_path / "usat", "unispeech-sat")
    enc = load_from_layouts(tiny("UniSpeech-SAT"), path=str(folder))
    assert enc.embed([probe_wave(0.5)]).shape == (1, 32)


def test_real_labels_refuse_other_models_and_sizes(hf_dirs) -> None:
    hubert = hf_dirs["hubert"]
    with pytest.raises(EncoderError) as info:
        load_encoder("WavLM-Large", options={"path": str(hubert)})
    assert str(info.value) == (
        f"WavLM-Large: config.json has model_type 'hubert'; WavLM-Large is 'wavlm' in {hubert} "
        "(expected [config.json + preprocessor_config.json + model.safetensors or pytorch_model.bin])"
    )
    with pytest.raises(EncoderError, match=r"^WavLM-Base: config.json has hidden_size 32; WavLM-Base is 768 in "):
        load_encoder("WavLM-Base", options={"path": str(hf_dirs["wavlm"])})
    with pytest.raises(EncoderError, match=r"^WavLM-Base: config.json has 2 hidden layers; WavLM-Base has 12 in "):
        load_from_layouts(dataclasses.replace(ENCODERS.get("WavLM-Base"), embedding_dim=32), path=str(hf_dirs["wavlm"]))


def test_missing_corrupt_and_incomplete_weights(hf_dirs, tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    shutil.copytree(hf_dirs["wavlm"], bad)
    weights = (bad / "model.safetensors").read_bytes()
    (bad / "model.safetensors").unlink()
    with pytest.raises(EncoderError) as info:
        load_from_layouts(tiny("WavLM-Base"), path=str(bad))
    assert str(info.value) == (
        f"WavLM-Base: transformers: missing model.safetensors or pytorch_model.bin in {bad} "
        "(expected [config.json + preprocessor_config.json + model.safetensors or pytorch_model.bin])"
    )
    (bad / "model.safetensors").write_bytes(weights[: len(weights) // 3])
    with pytest.raises(EncoderError, match=r"^WavLM-Base: transformers could not load the checkpoint \("):
        load_from_layouts(tiny("WavLM-Base"), path=str(bad))
    from safetensors.torch import load_file, save_file

    (bad / "model.safetensors").write_bytes(weights)
    state = load_file(bad / "model.safetensors")
    dropped = sorted(k for k in state if "encoder.layers.1" in k)[0]
    del state[dropped]
    save_file(state, bad / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(
        EncoderError, match=r"^WavLM-Base: the weights file does not cover the model \(missing or mismatched: "
    ):
        load_from_layouts(tiny("WavLM-Base"), path=str(bad))
