"""Tiny randomly initialised checkpoints written in each backend's on-disk layout.

Each writer produces exactly the files a user would download for that backend (hub folder,
model-zoo archive, ONNX file), with weights drawn from derived seeds, so tests load them
through the real loaders.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
import yaml

from interbias.utils.seeding import derive_rng, derive_seed


def _seed_torch(*names: str) -> torch.Generator:
    return torch.Generator().manual_seed(derive_seed("fixture", *names))


def _randomise(module: torch.nn.Module, *names: str) -> None:
    """Fill every parameter and BatchNorm statistic with derived random values."""
    g = _seed_torch(*names)
    with torch.no_grad():
        for name, p in module.state_dict().items():
            if p.dtype.is_floating_point:
                if name.endswith("running_var"):
                    p.copy_(0.5 + torch.rand(p.shape, generator=g))
                else:
                    p.copy_(torch.randn(p.shape, generator=g) * 0.2)


# ------------------------------------------------------------------------------ SpeechBrain

SB_HPARAMS = """# tiny spkrec-style hyperparams (layout of speechbrain/spkrec-*-voxceleb)
n_mels: 24
pretrained_path: {pretrained_path}
out_n_neurons: 3
compute_features: !new:speechbrain.lobes.features.Fbank
    n_mels: !ref <n_mels>
mean_var_norm: !new:speechbrain.processing.features.InputNormalization
    norm_type: sentence
    std_norm: False
embedding_model: {embedding_model}
classifier: !new:speechbrain.lobes.models.ECAPA_TDNN.Classifier
    input_size: {dim}
    out_neurons: !ref <out_n_neurons>
mean_var_norm_emb: !new:speechbrain.processing.features.InputNormalization
    norm_type: global
    std_norm: False
modules:
    compute_features: !ref <compute_features>
    mean_var_norm: !ref <mean_var_norm>
    embedding_model: !ref <embedding_model>
    mean_var_norm_emb: !ref <mean_var_norm_emb>
    classifier: !ref <classifier>
label_encoder: !new:speechbrain.dataio.encoder.CategoricalEncoder
pretrainer: !new:speechbrain.utils.parameter_transfer.Pretrainer
    loadables:
        embedding_model: !ref <embedding_model>
        mean_var_norm_emb: !ref <mean_var_norm_emb>
        classifier: !ref <classifier>
        label_encoder: !ref <label_encoder>
    paths:
        embedding_model: !ref <pretrained_path>/embedding_model.ckpt
        mean_var_norm_emb: !ref <pretrained_path>/mean_var_norm_emb.ckpt
        classifier: !ref <pretrained_path>/classifier.ckpt
        label_encoder: !ref <pretrained_path>/label_encoder.txt
"""

SB_MODELS = {
    "ECAPA_TDNN": """!new:speechbrain.lobes.models.ECAPA_TDNN.ECAPA_TDNN
    input_size: !ref <n_mels>
    channels: [16, 16, 16, 16, 48]
    kernel_sizes: [5, 3, 3, 3, 1]
    dilations: [1, 2, 3, 4, 1]
    attention_channels: 8
    lin_neurons: 12""",
    "Xvector": """!new:speechbrain.lobes.models.Xvector.Xvector
    in_channels: !ref <n_mels>
    tdnn_channels: [16, 16, 16, 16, 24]
    lin_neurons: 12""",
}


def make_speechbrain(
    folder: Path, model: str = "ECAPA_TDNN", pretrained_path: str = "speechbrain/spkrec-ecapa-voxceleb"
) -> Path:
    """A spkrec folder: hyperparams.yaml (hub path left in, as shipped), 4 checkpoint files."""
    from hyperpyyaml import load_hyperpyyaml

    folder.mkdir(parents=True, exist_ok=True)
    text = SB_HPARAMS.format(pretrained_path=pretrained_path, embedding_model=SB_MODELS[model], dim=12)
    hp = load_hyperpyyaml(text)
    _randomise(hp["embedding_model"], "sb", model)
    _randomise(hp["classifier"], "sb-classifier")
    torch.save(hp["embedding_model"].state_dict(), folder / "embedding_model.ckpt")
    torch.save(hp["classifier"].state_dict(), folder / "classifier.ckpt")
    norm = hp["mean_var_norm_emb"]
    norm.glob_mean = torch.zeros(12)
    norm.glob_std = torch.ones(12)
    norm.count = 3
    norm._save(folder / "mean_var_norm_emb.ckpt")
    hp["label_encoder"].update_from_iterable(["spk_a", "spk_b", "spk_c"])
    hp["label_encoder"].save(folder / "label_encoder.txt")
    (folder / "hyperparams.yaml").write_text(text)
    return folder


# ------------------------------------------------------------------------------ WeSpeaker


def make_wespeaker(folder: Path, model: str = "ResNet18", feat_dim: int = 16, embed_dim: int = 8, **extra) -> Path:
    """A WeSpeaker model-zoo folder: config.yaml + avg_model.pt (with the training head)."""
    from interbias.encoders.wespeaker_models import build

    folder.mkdir(parents=True, exist_ok=True)
    args = {"feat_dim": feat_dim, "embed_dim": embed_dim, **extra}
    net = build(model, args, {})
    _randomise(net, "wespeaker", model)
    state = dict(net.state_dict())
    state["projection.weight"] = torch.randn(5, embed_dim, generator=_seed_torch("projection"))
    torch.save(state, folder / "avg_model.pt")
    config = {
        "model": model,
        "model_args": args,
        "dataset_args": {
            "fbank_args": {"num_mel_bins": feat_dim, "frame_shift": 10, "frame_length": 25, "dither": 1.0}
        },
        "projection_args": {"project_type": "arc_margin", "scale": 32.0},
        "num_epochs": 150,
    }
    (folder / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return folder


# ------------------------------------------------------------------------------ RawNet3


def make_rawnet3(folder: Path, channels: int = 16, scale: int = 4, n_out: int = 8, pooled: int = 24) -> Path:
    """A RawNet3 folder as published (``model.pt``: ``{"model": state_dict}``), small sizes."""
    from interbias.encoders.rawnet3 import RawNet3

    folder.mkdir(parents=True, exist_ok=True)
    net = RawNet3(channels=channels, scale=scale, n_out=n_out, pooled=pooled, attention=8)
    _randomise(net, "rawnet3", str(channels))
    state = net.state_dict()
    for key in ("conv1.filterbank.low_hz_", "conv1.filterbank.band_hz_"):  # keep the sinc bands positive and apart
        state[key].copy_(
            RawNet3(channels=channels, scale=scale, n_out=n_out, pooled=pooled, attention=8).state_dict()[key]
        )
    torch.save({"model": state}, folder / "model.pt")
    return folder


# ------------------------------------------------------------------------------ transformers


def make_transformers(folder: Path, model_type: str = "wavlm", layer_norm: bool = False, hidden: int = 32) -> Path:
    """A hub snapshot folder (config.json, preprocessor_config.json, model.safetensors)."""
    import transformers

    folder.mkdir(parents=True, exist_ok=True)
    common = {
        "hidden_size": hidden,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "intermediate_size": 48,
        "conv_dim": (16, 16, 16),
        "conv_stride": (5, 4, 4),
        "conv_kernel": (10, 8, 4),
        "num_conv_pos_embeddings": 8,
        "num_conv_pos_embedding_groups": 2,
        "feat_extract_norm": "layer" if layer_norm else "group",
        "do_stable_layer_norm": layer_norm,
    }
    configs = {
        "wavlm": (transformers.WavLMConfig, transformers.WavLMModel),
        "hubert": (transformers.HubertConfig, transformers.HubertModel),
        "unispeech-sat": (transformers.UniSpeechSatConfig, transformers.UniSpeechSatModel),
        "wav2vec2": (transformers.Wav2Vec2Config, transformers.Wav2Vec2Model),
    }
    config_cls, model_cls = configs[model_type]
    torch.manual_seed(derive_seed("fixture", "hf", model_type))  # transformers initialises from torch's RNG
    model = model_cls(config_cls(**common))
    _randomise(model, "hf", model_type)
    model.save_pretrained(folder)
    extractor = transformers.Wav2Vec2FeatureExtractor(
        feature_size=1,
        sampling_rate=16000,
        padding_value=0.0,
        do_normalize=layer_norm,
        return_attention_mask=layer_norm,
    )
    extractor.save_pretrained(folder)
    return folder


# ------------------------------------------------------------------------------ ONNX


def make_onnx(folder: Path, kind: str = "waveform", dim: int = 16, bins: int = 80, name: str = "model.onnx") -> Path:
    """A single-file ONNX embedding model built with onnx.helper (random weights).

    ``waveform``: (1, T) -> strided conv (400/160) -> tanh -> mean over time -> (1, dim).
    ``wespeaker-fbank``: (1, F, bins) -> matmul -> tanh -> mean over frames -> (1, dim).
    ``nemo-mel``: (1, bins, F) + length -> matmul -> tanh -> mean; outputs ``logits`` and ``embs``."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    folder.mkdir(parents=True, exist_ok=True)
    rng = derive_rng("fixture", "onnx", kind)
    nodes, inputs, inits = [], [], []
    f32 = TensorProto.FLOAT
    if kind == "waveform":
        inputs.append(helper.make_tensor_value_info("wav", f32, [1, "T"]))
        w = rng.standard_normal((dim, 1, 400)).astype(np.float32) * 0.1
        inits.append(numpy_helper.from_array(w, "conv_w"))
        inits.append(numpy_helper.from_array(np.array([1, 1, -1], dtype=np.int64), "shape3"))
        nodes += [
            helper.make_node("Reshape", ["wav", "shape3"], ["x3"]),
            helper.make_node("Conv", ["x3", "conv_w"], ["c"], strides=[160]),
            helper.make_node("Tanh", ["c"], ["t"]),
            helper.make_node("ReduceMean", ["t"], ["emb"], axes=[2], keepdims=0),
        ]
        outputs = [helper.make_tensor_value_info("emb", f32, [1, dim])]
    else:
        if kind == "wespeaker-fbank":
            inputs.append(helper.make_tensor_value_info("feats", f32, [1, "F", bins]))
            first = "feats"
        else:
            inputs.append(helper.make_tensor_value_info("audio_signal", f32, [1, bins, "F"]))
            inputs.append(helper.make_tensor_value_info("length", TensorProto.INT64, [1]))
            nodes.append(helper.make_node("Transpose", ["audio_signal"], ["feats_t"], perm=[0, 2, 1]))
            first = "feats_t"
        w = rng.standard_normal((bins, dim)).astype(np.float32) * 0.1
        inits.append(numpy_helper.from_array(w, "proj"))
        nodes += [
            helper.make_node("MatMul", [first, "proj"], ["h"]),
            helper.make_node("Tanh", ["h"], ["t"]),
            helper.make_node("ReduceMean", ["t"], ["emb"], axes=[1], keepdims=0),
        ]
        outputs = [helper.make_tensor_value_info("emb", f32, [1, dim])]
        if kind == "nemo-mel":
            nodes[-1] = helper.make_node("ReduceMean", ["t"], ["embs"], axes=[1], keepdims=0)
            inits.append(numpy_helper.from_array(rng.standard_normal((dim, 3)).astype(np.float32), "cls"))
            nodes.append(helper.make_node("MatMul", ["embs", "cls"], ["logits"]))
            outputs = [
                helper.make_tensor_value_info("logits", f32, [1, 3]),
                helper.make_tensor_value_info("embs", f32, [1, dim]),
            ]
    graph = helper.make_graph(nodes, f"tiny-{kind}", inputs, outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    (folder / name).write_bytes(model.SerializeToString())
    return folder


def write_json(path: Path, obj: dict) -> None:
    path.write_text(json.dumps(obj))
