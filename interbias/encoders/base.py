"""The loaded, frozen encoder every backend subclasses (:class:`Encoder`), and the helpers
backends share: a probe signal for shape checks, one-line load errors, freezing a model."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from interbias.encoders.batching import (
    BATCH_MODES,
    BUCKET_RATIO,
    FRAME_STEP,
    MAX_BATCH_FRAMES,
    MAX_BATCH_ITEMS,
    MAX_BATCH_SAMPLES,
    MAX_LENGTH_RATIO,
    MAX_MASKED_ITEMS,
    bucketed_batches,
    equal_frame_batches,
    frame_bucket,
    frame_budget_batches,
    length_buckets,
)
from interbias.encoders.card import EncoderCard
from interbias.encoders.precision import precision_scope
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
    takes mixed lengths in one call, :meth:`_embed_batch` with ``supports_masks = True`` (rows
    equal to one at a time) or ``supports_padding = True`` (rows change slightly)."""

    #: Bump when the embedding computation of a backend changes (invalidates the cache).
    code_version = 1
    #: Whether :meth:`_embed_batch` handles padded batches (used on CUDA only).
    supports_padding: ClassVar[bool] = False
    #: Whether :meth:`_embed_batch` stacks inputs of equal :meth:`frame_count` (models without
    #: padding masks, e.g. CAM++: no padding, so a batch computes what one at a time does;
    #: used on CUDA only).
    batches_equal_frames: ClassVar[bool] = False
    #: Whether :meth:`_embed_batch` takes mixed lengths with length masks, each row equal to the
    #: row alone within float rounding (cosine distance ≤ 1e-5, tested); batches are cut by a
    #: frame budget over :meth:`frame_count` (:func:`frame_budget_batches`).
    supports_masks: ClassVar[bool] = False
    #: Whether a masked batch pads its rows (False: rows are stacked without padding, e.g. GE2E's
    #: fixed-size partial windows; nothing counts as padded).
    pads_rows: ClassVar[bool] = True
    #: Whether masked batches are cut into (items, frame bucket) shapes and padded to the bucket
    #: (:func:`bucketed_batches`: few shapes per run), up to :data:`MAX_MASKED_ITEMS` rows.
    frame_buckets: ClassVar[bool] = False
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
        self.max_batch_items = MAX_MASKED_ITEMS if self.frame_buckets else MAX_BATCH_ITEMS
        self.max_batch_samples = MAX_BATCH_SAMPLES
        #: Masked batches: most ``items × longest frame count`` per network call.
        self.max_batch_frames = MAX_BATCH_FRAMES
        #: ``auto`` (batch on a device other than the CPU), ``always`` (CPU too), ``never``.
        self.batch_mode = "auto"
        #: ``fp32``, ``tf32`` or ``bf16`` (:mod:`interbias.encoders.precision`).
        self.precision = "fp32"
        #: Frames of masked batches (:meth:`frame_count` units): valid, and padding up to the longest row.
        self.valid_frames = 0
        self.padded_frames = 0
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
    def load_label(self) -> str:
        """The label that loads this encoder again in another process (worker processes load it)."""
        return self.label

    @property
    def family(self) -> str:
        return self.card.family

    @property
    def fingerprint(self) -> str:
        """sha256 (16 hex) of label, backend, code version, checkpoint hash and config.

        The device is excluded: CPU and CUDA embeddings of one checkpoint share cache keys
        only when they agree (checked by ``benchmarks/gpu_check.sh``). Batched embedding gets its
        own keys: padded batching changes embeddings slightly, and masked batching, though equal
        to one at a time within 1e-5 cosine distance, is not byte-identical to it (CPU one at a
        time, the default there, keeps its keys). A precision other than fp32 is keyed too."""
        payload: dict[str, Any] = {
            "label": self.card.label,
            "backend": self.card.backend,
            "code": self.code_version,
            "checkpoint": self.checkpoint_sha256,
            "config": self.config,
        }
        if self.runtime != "eager":
            payload["runtime"] = {"name": self.runtime, **self.runtime_config}
        if self.precision != "fp32":
            payload["precision"] = self.precision
        if self.batches() and self.supports_masks:
            payload["masked_batches"] = [self.max_batch_items, self.max_batch_frames]
            if self.frame_buckets:
                payload["frame_buckets"] = [FRAME_STEP, BUCKET_RATIO]
        elif self.batches() and self.supports_padding:
            payload["padded_batches"] = [self.max_batch_items, self.max_batch_samples, MAX_LENGTH_RATIO]
        elif self.batches():
            payload["equal_frame_batches"] = [self.max_batch_items, self.max_batch_samples]
        return hashlib.sha256(canonical_json(payload).encode()).hexdigest()[:16]

    def batch_wanted(self) -> bool:
        """Whether :attr:`batch_mode` asks for batches here (``auto``: off the CPU only)."""
        return self.batch_mode == "always" or (self.batch_mode == "auto" and self.device != "cpu")

    def batches(self) -> bool:
        """Whether :meth:`embed` batches: where :meth:`batch_wanted`, for models that take length
        masks or padding, or stack inputs of equal frame count."""
        able = self.supports_masks or self.supports_padding or self.batches_equal_frames
        return able and self.batch_wanted()

    def set_batching(self, mode: str) -> None:
        if mode not in BATCH_MODES:
            raise EncoderError(f"{self.label}: batch {mode!r}: use {', '.join(BATCH_MODES)}")
        self.batch_mode = mode

    def frame_count(self, n_samples: int) -> int:
        """Frames the network sees for ``n_samples`` samples (encoders with ``batches_equal_frames``
        or ``supports_masks``; 0 when too short for one)."""
        raise NotImplementedError

    def batch_groups(self, lengths: Sequence[int]) -> list[list[int]]:
        """Indices of one :meth:`embed` call grouped into the batches the network gets."""
        if self.supports_masks and self.frame_buckets:
            frames = [self.frame_count(n) for n in lengths]
            return bucketed_batches(frames, self.max_batch_items, self.max_batch_frames)
        if self.supports_masks:
            return frame_budget_batches(
                [self.frame_count(n) for n in lengths], self.max_batch_items, self.max_batch_frames
            )
        if not self.supports_padding:
            frames = [self.frame_count(n) for n in lengths]
            return equal_frame_batches(frames, lengths, self.max_batch_items, self.max_batch_samples)
        return length_buckets(lengths, self.max_batch_items, self.max_batch_samples)

    def embed(self, waves: Sequence[np.ndarray]) -> np.ndarray:
        """(N, D) float32 L2-normalised embeddings of 16 kHz float32 waveforms.

        On CPU each waveform is embedded on its own, so an embedding never depends on which
        other utterances shared its batch (byte-identical reruns and resumes). Where
        :meth:`batches` (CUDA; any device with ``batch_mode = "always"``), models with length
        masks get length-sorted batches cut by a frame budget (:func:`frame_budget_batches`),
        models that take padding batches of similar length (:func:`length_buckets`). Network
        calls run at :attr:`precision`."""
        arrays = [np.ascontiguousarray(w, dtype=np.float32).reshape(-1) for w in waves]
        raw: list[np.ndarray | None] = [None] * len(arrays)
        with precision_scope(self.precision, self.device):
            if self.batches() and len(arrays) > 1:
                for idx in self.batch_groups([a.size for a in arrays]):
                    self.batch_calls += 1
                    self._count_frames([arrays[i].size for i in idx])
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

    def _count_frames(self, lengths: Sequence[int]) -> None:
        """Add one masked batch's valid and padded frames to the counters."""
        if not self.supports_masks:
            return
        frames = [self.frame_count(n) for n in lengths]
        self.valid_frames += sum(frames)
        if self.pads_rows:
            longest = frame_bucket(max(frames)) if self.frame_buckets else max(frames)
            self.padded_frames += len(frames) * longest - sum(frames)

    def padding_share(self) -> float:
        """Padded / (valid + padded) frames over the masked batches so far (0 when none)."""
        total = self.valid_frames + self.padded_frames
        return self.padded_frames / total if total else 0.0

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
            **self.batching_provenance(),
        }

    def batching_provenance(self) -> dict[str, Any]:
        """How network calls are batched and at what precision; empty for the CPU default
        (one at a time, fp32)."""
        out: dict[str, Any] = {}
        if self.precision != "fp32":
            out["precision"] = self.precision
        if self.batches():
            kind = "masked" if self.supports_masks else "padded" if self.supports_padding else "equal frames"
            limits = {"max_items": self.max_batch_items}
            limits.update(
                {"max_frames": self.max_batch_frames}
                if self.supports_masks
                else {"max_samples": self.max_batch_samples}
            )
            if self.supports_masks and self.frame_buckets:
                limits["frame_buckets"] = {"step": FRAME_STEP, "ratio": BUCKET_RATIO}
            out["batching"] = {"kind": kind, **limits, "module": "eager"}
        return out


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
