"""The loaded, frozen encoder every backend subclasses (:class:`Encoder`), and the helpers
backends share: a probe signal for shape checks, one-line load errors, freezing a model."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from interbias.encoders.batching import (
    MAX_BATCH_ITEMS,
    MAX_BATCH_SAMPLES,
    MAX_LENGTH_RATIO,
    equal_frame_batches,
    length_buckets,
)
from interbias.encoders.card import EncoderCard
from interbias.utils.errors import EncoderError
from interbias.utils.seeding import canonical_json, derive_rng


def probe_wave(seconds: float = 1.0, sample_rate_hz: int = 16000) -> np.ndarray:
    """A fixed voiced-like probe signal (harmonics of 140 Hz plus derived noise) for shape checks."""
    t = np.arange(int(seconds * sample_rate_hz)) / sample_rate_hz
    wave = sum(np.sin(2 * np.pi * 140 * k * t) / k for k in range(1, 12))
    wave = 0.1 * wave + 0.01 * derive_rng("encoder-probe", sample_rate_hz).standard_normal(t.size)
    return wave.astype(np.float32)


class Encoder:
    """A loaded, frozen encoder. Subclasses implement :meth:`_embed_one` and, when the model
    takes padding masks, :meth:`_embed_batch` with ``supports_padding = True``."""

    #: Bump when the embedding computation of a backend changes (invalidates the cache).
    code_version = 1
    #: Whether :meth:`_embed_batch` handles padded batches (used on CUDA only).
    supports_padding: ClassVar[bool] = False
    #: Whether :meth:`_embed_batch` stacks inputs of equal :meth:`frame_count` (models without
    #: padding masks, e.g. CAM++: no padding, so a batch computes what one at a time does;
    #: used on CUDA only).
    batches_equal_frames: ClassVar[bool] = False
    #: The models.lock pin the files were checked against (repo, commit, digest), if any.
    models_lock: dict[str, str] | None = None

    def __init__(
        self,
        card: EncoderCard,
        *,
        source: str,
        checkpoint_sha256: str,
        device: str = "cpu",
        config: dict[str, Any] | None = None,
        files: Mapping[str, str] | None = None,
    ) -> None:
        self.card = card
        self.source = source
        self.checkpoint_sha256 = checkpoint_sha256
        self.device = device
        self.config = dict(config or {})
        self.files = dict(files or {})
        self.forward_calls = 0
        #: L2 norms of the last :meth:`embed` call's embeddings before normalisation, in input order.
        self.last_norms: list[float] = []
        #: Network calls (a batch counts once); forward_calls counts embeddings.
        self.batch_calls = 0
        self.max_batch_items = MAX_BATCH_ITEMS
        self.max_batch_samples = MAX_BATCH_SAMPLES
        #: The network's forward (the torch module, or an onnxruntime session in its place).
        self.net: Any = None
        self.runtime = "eager"
        #: Versions the runtime's numbers depend on (fingerprinted unless eager) and its graph file.
        self.runtime_config: dict[str, Any] = {}
        self.runtime_graph: dict[str, str] = {}

    @property
    def label(self) -> str:
        return self.card.label

    @property
    def family(self) -> str:
        return self.card.family

    @property
    def fingerprint(self) -> str:
        """sha256 (16 hex) of label, backend, code version, checkpoint hash and config.

        The device is excluded: CPU and CUDA embeddings of one checkpoint share cache keys
        only when they agree (checked by ``benchmarks/gpu_check.sh``). Padded batching (CUDA,
        models with masks) changes embeddings slightly, so it gets its own keys."""
        payload: dict[str, Any] = {
            "label": self.card.label,
            "backend": self.card.backend,
            "code": self.code_version,
            "checkpoint": self.checkpoint_sha256,
            "config": self.config,
        }
        if self.runtime != "eager":
            payload["runtime"] = {"name": self.runtime, **self.runtime_config}
        if self.batches() and self.supports_padding:
            payload["padded_batches"] = [self.max_batch_items, self.max_batch_samples, MAX_LENGTH_RATIO]
        elif self.batches():
            payload["equal_frame_batches"] = [self.max_batch_items, self.max_batch_samples]
        return hashlib.sha256(canonical_json(payload).encode()).hexdigest()[:16]

    def batches(self) -> bool:
        """Whether :meth:`embed` batches: only on CUDA, and only with padding masks or for models
        that stack inputs of equal frame count."""
        return self.device != "cpu" and (self.supports_padding or self.batches_equal_frames)

    def frame_count(self, n_samples: int) -> int:
        """Frames the network sees for ``n_samples`` samples (encoders with ``batches_equal_frames``)."""
        raise NotImplementedError

    def batch_groups(self, lengths: Sequence[int]) -> list[list[int]]:
        """Indices of one :meth:`embed` call grouped into the batches the network gets."""
        if not self.supports_padding:
            frames = [self.frame_count(n) for n in lengths]
            return equal_frame_batches(frames, lengths, self.max_batch_items, self.max_batch_samples)
        return length_buckets(lengths, self.max_batch_items, self.max_batch_samples)

    def embed(self, waves: Sequence[np.ndarray]) -> np.ndarray:
        """(N, D) float32 L2-normalised embeddings of 16 kHz float32 waveforms.

        On CPU each waveform is embedded on its own, so an embedding never depends on which
        other utterances shared its batch (byte-identical reruns and resumes). On CUDA, models
        that take padding masks get batches of similar length (:func:`length_buckets`)."""
        arrays = [np.ascontiguousarray(w, dtype=np.float32).reshape(-1) for w in waves]
        raw: list[np.ndarray | None] = [None] * len(arrays)
        if self.batches() and len(arrays) > 1:
            for idx in self.batch_groups([a.size for a in arrays]):
                self.batch_calls += 1
                out = self._embed_batch([arrays[i] for i in idx])
                for i, e in zip(idx, out, strict=True):
                    raw[i] = e
        else:
            for i, a in enumerate(arrays):
                self.batch_calls += 1
                raw[i] = self._embed_one(a)
        out = []
        self.last_norms = []
        for e in raw:
            v = np.asarray(e, dtype=np.float32).reshape(-1)
            self.forward_calls += 1
            if not np.isfinite(v).all():
                raise EncoderError(f"{self.label}: produced a non-finite embedding")
            norm = float(np.linalg.norm(v))
            if norm == 0.0:
                raise EncoderError(f"{self.label}: produced an all-zero embedding")
            self.last_norms.append(norm)  # the embedding magnitude (a blind quality measure)
            out.append(v / norm)
        if not out:
            return np.zeros((0, self.card.embedding_dim or 0), dtype=np.float32)
        return np.stack(out).astype(np.float32)

    def _embed_one(self, wave: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def onnx_spec(self) -> Any:
        """How to export the network for runtime onnxruntime (an ``ort_runtime.OnnxSpec``);
        None where that runtime is not offered."""
        return None

    def runtime_provenance(self) -> dict[str, Any]:
        import torch

        if self.runtime == "eager":
            return {"name": "eager", "torch": torch.__version__}
        return {"name": self.runtime, **self.runtime_config, "graph": dict(self.runtime_graph)}

    def _embed_batch(self, waves: list[np.ndarray]) -> list[np.ndarray]:
        return [self._embed_one(w) for w in waves]

    def check_dimension(self) -> None:
        """Embed :func:`probe_wave` once and compare the dimension with the card's."""
        want = self.card.embedding_dim
        if want is None:
            return
        got = np.asarray(self._embed_one(probe_wave())).reshape(-1).size
        if got != want:
            raise EncoderError(
                f"{self.label}: the checkpoint in {self.source} gives {got}-dimensional embeddings; "
                f"{self.label} is {want}-dimensional (expected {self.card.expected() or 'its packaged weights'})"
            )

    def provenance(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "family": self.family,
            "backend": self.card.backend,
            "source": self.source,
            "checkpoint_sha256": self.checkpoint_sha256,
            "files": [{"path": name, "sha256": sha} for name, sha in sorted(self.files.items())],
            "fingerprint": self.fingerprint,
            "embedding_dim": self.card.embedding_dim,
            "config": self.config,
            "trained_on": list(self.card.trained_on),
            **({"models_lock": self.models_lock} if self.models_lock else {}),
            "runtime": self.runtime_provenance(),
        }


def load_reason(exc: BaseException) -> str:
    """``Type: first sentence`` of an error raised while reading a checkpoint file, e.g.
    ``RuntimeError: PytorchStreamReader failed reading zip archive: not a ZIP archive`` (torch
    appends advice in further sentences)."""
    line = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), "")
    sentence = line.split(". ")[0].rstrip(".")
    return f"{type(exc).__name__}: {sentence}" if sentence else type(exc).__name__


def load_problem(exc: BaseException) -> str:
    """One line for a failed ``load_state_dict``: torch's header plus its first detail (which
    parameter, which shapes), e.g. ``Error(s) in loading state_dict for ResNet: size mismatch
    for seg_1.weight: copying a param with shape torch.Size([8, 5120]) from checkpoint, the
    shape in current model is torch.Size([10, 5120]). (+1 more)``."""
    lines = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
    if not lines:
        return type(exc).__name__
    head, details = lines[0], lines[1:]
    if not details:
        return head
    more = f" (+{len(details) - 1} more)" if len(details) > 1 else ""
    return f"{head} {details[0][:300]}{more}"


def freeze(model: Any, device: str) -> Any:
    """Eval mode, no gradients, on ``device``."""
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model.to(device)
