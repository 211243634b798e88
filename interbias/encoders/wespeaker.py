"""WeSpeaker PyTorch checkpoints: ``config.yaml`` + ``avg_model.pt`` from a model-zoo archive.

``config.yaml`` names the model (``model: ECAPA_TDNN_GLOB_c1024``) and its ``model_args``;
``dataset_args.fbank_args.num_mel_bins`` the features. The state dict loads with
``weights_only=True`` and ``strict=True`` into interbias's own definitions
(:mod:`interbias.encoders.wespeaker_models`); only the training head (``projection.*``) is
dropped. Features as in WeSpeaker's data pipeline: Kaldi fbank of the int16-scaled waveform
(25 ms Hamming frames every 10 ms, no dither), mean-normalised over time.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import yaml

from interbias.encoders import (
    Encoder,
    EncoderCard,
    Layout,
    Located,
    combined_sha256,
    freeze,
    load_problem,
    load_reason,
)
from interbias.encoders.features import fbank
from interbias.encoders.wespeaker_models import build

_MODEL_ARGS = {"feat_dim", "embed_dim", "pooling_func", "two_emb_layer", "emb_bn"}


def wespeaker_fbank(wave: torch.Tensor, num_mel_bins: int) -> torch.Tensor:
    """WeSpeaker's input: Kaldi fbank (Hamming, int16 scale) minus its mean over time, (frames, bins)."""
    feats = fbank(wave, num_mel_bins=num_mel_bins, scale=32768.0, window="hamming")
    return feats - feats.mean(dim=0, keepdim=True)


class WeSpeakerEncoder(Encoder):
    #: 2: Kaldi fbank's power spectrum computed as re² + im² (was |z|²; float32 features can differ in the last bit).
    code_version = 2

    def __init__(self, card: EncoderCard, model: torch.nn.Module, num_mel_bins: int, **kw: Any) -> None:
        super().__init__(card, **kw)
        self.model = model
        self.num_mel_bins = num_mel_bins

    @torch.inference_mode()
    def _embed_one(self, wave: np.ndarray) -> np.ndarray:
        feats = wespeaker_fbank(torch.from_numpy(wave).to(self.device), self.num_mel_bins)
        return self.model(feats.unsqueeze(0))[0].float().cpu().numpy()


def load_wespeaker(
    card: EncoderCard, located: Located, files: dict[str, str], *, device: str = "cpu"
) -> WeSpeakerEncoder:
    folder = located.folder
    try:
        config = yaml.safe_load((folder / "config.yaml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise card.error(folder, f"config.yaml is not readable YAML ({type(exc).__name__})") from exc
    if not isinstance(config, dict) or "model" not in config:
        raise card.error(folder, "config.yaml has no 'model' key")
    name = str(config["model"])
    want = card.expect.get("model")
    if want and name not in (want if isinstance(want, tuple) else (want,)):
        raise card.error(folder, f"config.yaml names model {name}; {card.label} is {want}")
    model_args = dict(config.get("model_args") or {})
    unknown = sorted(set(model_args) - _MODEL_ARGS)
    if unknown:
        raise card.error(folder, f"config.yaml model_args has unsupported key(s) {', '.join(unknown)}")
    fbank_args = ((config.get("dataset_args") or {}).get("fbank_args")) or {}
    bins = int(fbank_args.get("num_mel_bins", model_args.get("feat_dim", 80)))
    if int(model_args.get("feat_dim", bins)) != bins:
        raise card.error(folder, f"config.yaml: feat_dim {model_args.get('feat_dim')} ≠ num_mel_bins {bins}")
    for key, want_value in (("frame_length", 25), ("frame_shift", 10)):
        if int(fbank_args.get(key, want_value)) != want_value:
            raise card.error(folder, f"config.yaml: fbank {key} {fbank_args[key]} is not supported (only {want_value})")
    try:
        state = torch.load(str(folder / "avg_model.pt"), map_location="cpu", weights_only=True)
    except Exception as exc:
        raise card.error(folder, f"cannot load avg_model.pt ({load_reason(exc)})") from exc
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise card.error(folder, "avg_model.pt is not a state dict of tensors")
    state = {k: v for k, v in state.items() if not k.startswith("projection.")}
    try:
        model = build(name, model_args, state)
        model.load_state_dict(state, strict=True)
    except (ValueError, RuntimeError) as exc:
        first = load_problem(exc)
        raise card.error(folder, f"avg_model.pt does not match {name} ({first})") from exc
    model = freeze(model, device)
    return WeSpeakerEncoder(
        card,
        model,
        bins,
        source=str(folder),
        checkpoint_sha256=combined_sha256(files),
        files=files,
        device=device,
        config={"model": name, "model_args": model_args, "feat": f"kaldi-fbank-{bins}-hamming-int16-cmn"},
    )


LAYOUT = Layout("wespeaker", ("config.yaml", "avg_model.pt"), load_wespeaker)
