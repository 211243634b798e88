"""GE2E (Resemblyzer) from the weights shipped in the ``resemblyzer`` wheel (3-layer LSTM,
256-d; trained on LibriSpeech train-other-500, VoxCeleb1 and VoxCeleb2).

Resemblyzer's documented pipeline: ``preprocess_wav`` (raise the level to −30 dBFS, never
lower; cut silences longer than ~0.2 s with webrtcvad), then ``embed_utterance``: 1.6 s
partial windows at 1.3 per second, each embedded (ReLU, L2) and averaged. Its VAD and window
functions are called from the wheel; the mel spectrogram is computed in PyTorch
(:func:`interbias.encoders.features.ge2e_mel`, equal to the wheel's librosa call to float32
precision) so that a run does not wait for librosa's JIT. Weights load with ``weights_only``
and ``strict=True`` (the GE2E loss's similarity scale and bias are dropped).

Batched (CUDA by default; ``batch="always"`` on CPU): every utterance's partial windows have
the same shape (160 frames × 40 mels), so a batch stacks the partials of all its utterances
into one LSTM call with no padding and no mask, and averages each utterance's own rows: equal
to one at a time within float rounding. Preprocessing (VAD) and the mel spectrogram stay per
utterance. The frame budget counts partials × 160 frames.
"""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

from interbias.encoders import (
    Encoder,
    EncoderCard,
    freeze,
    load_problem,
    load_reason,
    optional_import,
    probe_wave,
    register,
    sha256_file,
)
from interbias.encoders.features import ge2e_mel, num_frames
from interbias.encoders.ort_runtime import OnnxSpec
from interbias.utils.errors import EncoderError

WEIGHTS = "pretrained.pt"
#: Frames per partial window (1.6 s at 100 frames/s).
PARTIAL_FRAMES = 160


def resemblyzer_dir() -> Path:
    spec = importlib.util.find_spec("resemblyzer")
    if spec is None or not spec.submodule_search_locations:
        raise EncoderError(
            f"GE2E: the resemblyzer wheel is not installed (pip install --no-deps resemblyzer==0.1.4); "
            f"expected {WEIGHTS} inside it"
        )
    return Path(list(spec.submodule_search_locations)[0])


class GE2E(Encoder):
    #: Why white-box attacks are refused (:func:`interbias.encoders.attacks.white_box`).
    no_gradient_reason = "resemblyzer's volume normalisation and webrtcvad silence trimming run outside torch"
    supports_masks = True
    pads_rows = False

    def __init__(self, card: EncoderCard, model: torch.nn.Module, audio: Any, **kw: Any) -> None:
        super().__init__(card, **kw)
        self.model = model
        self.net = model
        self.audio = audio

    def preprocess(self, wave: np.ndarray) -> np.ndarray:
        """Resemblyzer's ``preprocess_wav`` for 16 kHz input (volume up to −30 dBFS, VAD trim)."""
        wav = self.audio.normalize_volume(wave.astype(np.float64), -30, increase_only=True)
        return np.asarray(self.audio.trim_long_silences(wav), dtype=np.float32)

    def frame_count(self, n_samples: int) -> int:
        """Mel frames of the untrimmed waveform, at least one partial (a budget bound: VAD
        trimming only shortens)."""
        return max(num_frames(n_samples), PARTIAL_FRAMES)

    @torch.inference_mode()
    def _embed_one(self, wave: np.ndarray) -> np.ndarray:
        return self._pool(self.net(self._partials(wave)))

    @torch.inference_mode()
    def _embed_batch(self, waves: list[np.ndarray]) -> list[np.ndarray]:
        """The partials of every waveform in one network call, each waveform pooled over its own."""
        parts = [self._partials(w) for w in waves]
        out = self.model(torch.cat(parts))
        return [self._pool(rows) for rows in torch.split(out, [p.shape[0] for p in parts])]

    @staticmethod
    def _pool(partial: torch.Tensor) -> np.ndarray:
        """Mean of the partial embeddings, L2-normalised (``embed_utterance``)."""
        raw = partial.double().mean(dim=0)
        return (raw / torch.linalg.vector_norm(raw)).float().cpu().numpy()

    def _partials(self, wave: np.ndarray) -> torch.Tensor:
        """(partials, 160, 40) mel windows of ``wave`` on the device (``embed_utterance``'s slicing)."""
        if not np.any(wave):
            raise EncoderError("GE2E: the waveform is all zeros")
        wav = self.preprocess(wave)
        if wav.size < 400:
            raise EncoderError(f"GE2E: {wav.size} samples left after resemblyzer's VAD trimming (need ≥ 400)")
        wav_slices, mel_slices = self.model.compute_partial_slices(wav.size, rate=1.3, min_coverage=0.75)
        if wav_slices[-1].stop >= wav.size:
            wav = np.pad(wav, (0, wav_slices[-1].stop - wav.size))
        mel = ge2e_mel(torch.from_numpy(wav).to(self.device))
        return torch.stack([mel[s] for s in mel_slices])

    def onnx_spec(self) -> OnnxSpec:
        # (partials, 160 frames, 40 mels): the number of 1.6 s partials varies with the length
        mel = ge2e_mel(torch.from_numpy(probe_wave(2.0)))
        example = torch.stack([mel[:160], mel[20:180]])
        return OnnxSpec(self.model, (example,), ("mels",), "embedding", {"mels": {0: "partials"}}, 0, 1)

    def check_dimension(self) -> None:
        got = self.model.linear.out_features
        if got != self.card.embedding_dim:
            raise EncoderError(f"GE2E: {self.source} has a {got}-d output layer; GE2E is {self.card.embedding_dim}-d")


def _build(card: EncoderCard, *, device: str = "cpu") -> GE2E:
    root = resemblyzer_dir()
    weights = root / WEIGHTS
    if not weights.is_file():
        raise EncoderError(f"GE2E: {WEIGHTS} is missing from the resemblyzer wheel in {root} (expected {WEIGHTS})")
    try:
        state = torch.load(str(weights), map_location="cpu", weights_only=True)["model_state"]
    except Exception as exc:
        raise EncoderError(f"GE2E: cannot load {weights} ({load_reason(exc)}) (expected {WEIGHTS})") from exc
    with warnings.catch_warnings():  # resemblyzer imports scipy.ndimage.morphology (deprecated alias)
        warnings.simplefilter("ignore", DeprecationWarning)
        voice_encoder = optional_import("resemblyzer.voice_encoder", "GE2E", "resemblyzer (with librosa and webrtcvad)")
        audio = optional_import("resemblyzer.audio", "GE2E", "resemblyzer (with librosa and webrtcvad)")
    model = voice_encoder.VoiceEncoder(device="cpu", verbose=False, weights_fpath=weights)
    # the GE2E loss's similarity scale and bias are training-only; everything else must match exactly
    state = {k: v for k, v in state.items() if k not in ("similarity_weight", "similarity_bias")}
    try:  # the wheel loads with strict=False
        model.load_state_dict(state, strict=True)
    except RuntimeError as exc:
        first = load_problem(exc)
        raise EncoderError(f"GE2E: {weights} does not match the GE2E architecture ({first})") from exc
    model = freeze(model, device)
    model.device = torch.device(device)
    return GE2E(
        card,
        model,
        audio,
        source=str(weights),
        checkpoint_sha256=sha256_file(weights),
        files={WEIGHTS: sha256_file(weights)},
        device=device,
        config={"preprocess": "resemblyzer preprocess_wav", "rate": 1.3, "min_coverage": 0.75, "mel": "torch"},
    )


class _GE2ECard(EncoderCard):
    def locate(self) -> str:
        path = resemblyzer_dir() / WEIGHTS
        if not path.is_file():
            raise EncoderError(f"GE2E: {WEIGHTS} is missing from the resemblyzer wheel (expected {path})")
        return str(path)


register(
    _GE2ECard(
        label="GE2E",
        no_gradient_reason=GE2E.no_gradient_reason,
        family="sv",
        backend="resemblyzer-wheel",
        embedding_dim=256,
        features="40-bin power mel, 1.6 s partials at 1.3/s, resemblyzer VAD trimming",
        trained_on=("LibriSpeech", "VoxCeleb1", "VoxCeleb2"),
        description="GE2E LSTM (Resemblyzer) weights shipped in the resemblyzer wheel",
        checkpoint="resemblyzer==0.1.4 wheel (resemblyzer/pretrained.pt)",
        factory=_build,
        # onnxruntime: 1.4x eager's throughput with one thread (benchmarks/bench_throughput.py)
        cpu_runtime="onnxruntime",
    )
)
