"""Speaker encoders: a registry of labels, each building a frozen model from local files only.

An encoder maps 16 kHz float32 mono waveforms to L2-normalised embeddings. It proves which
model ran with the sha256 of every file it loaded (``checkpoint_sha256``) and a fingerprint
that keys the embedding cache. A label never resolves to another model: missing or
mismatched files raise :class:`EncoderError` naming the label, the folder and the files.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from interbias.errors import EncoderError
from interbias.registry import Registry
from interbias.seeding import canonical_json

Family = Literal["sv", "ssl", "baseline"]


@dataclass(frozen=True)
class EncoderCard:
    """What a label is: family, backend, input, dimension, where its files live."""

    label: str
    family: Family
    backend: str
    embedding_dim: int | None
    sample_rate_hz: int = 16000
    features: str = "waveform"
    trained_on: tuple[str, ...] = ()
    description: str = ""
    #: Files the loader needs inside the encoder's folder (empty for packaged weights).
    files: tuple[str, ...] = ()
    #: Builds the encoder; takes the card, the device and options.
    factory: Callable[..., Encoder] | None = field(default=None, repr=False, compare=False)

    def status(self) -> tuple[bool, str, str]:
        """(available, reason when not, source path)."""
        try:
            source = self.locate()
        except EncoderError as exc:
            return False, str(exc), ""
        return True, "", source

    def locate(self) -> str:
        """The source this label would load; raises when it is missing."""
        return "builtin"


ENCODERS: Registry[EncoderCard] = Registry("encoder", EncoderError)


def register(card: EncoderCard) -> EncoderCard:
    ENCODERS.register(card.label)(card)
    return card


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class Encoder:
    """A loaded, frozen encoder. Subclasses implement :meth:`_embed_one` (and may batch)."""

    #: Bump when the embedding computation of a backend changes (invalidates the cache).
    code_version = 1

    def __init__(
        self,
        card: EncoderCard,
        *,
        source: str,
        checkpoint_sha256: str,
        device: str = "cpu",
        config: dict[str, Any] | None = None,
    ) -> None:
        self.card = card
        self.source = source
        self.checkpoint_sha256 = checkpoint_sha256
        self.device = device
        self.config = dict(config or {})
        self.forward_calls = 0

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
        only when they agree (checked by ``benchmarks/gpu_check.sh``)."""
        payload = {
            "label": self.card.label,
            "backend": self.card.backend,
            "code": self.code_version,
            "checkpoint": self.checkpoint_sha256,
            "config": self.config,
        }
        return hashlib.sha256(canonical_json(payload).encode()).hexdigest()[:16]

    def embed(self, waves: Sequence[np.ndarray]) -> np.ndarray:
        """(N, D) float32 L2-normalised embeddings of 16 kHz float32 waveforms.

        On CPU each waveform is embedded on its own, so an embedding never depends on which
        other utterances shared its batch (byte-identical reruns and resumes)."""
        out = []
        for w in waves:
            e = np.asarray(self._embed_one(np.asarray(w, dtype=np.float32)), dtype=np.float32).reshape(-1)
            self.forward_calls += 1
            if not np.isfinite(e).all():
                raise EncoderError(f"{self.label}: produced a non-finite embedding")
            norm = float(np.linalg.norm(e))
            if norm == 0.0:
                raise EncoderError(f"{self.label}: produced an all-zero embedding")
            out.append(e / norm)
        return np.stack(out).astype(np.float32)

    def _embed_one(self, wave: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def provenance(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "family": self.family,
            "backend": self.card.backend,
            "source": self.source,
            "checkpoint_sha256": self.checkpoint_sha256,
            "fingerprint": self.fingerprint,
            "embedding_dim": self.card.embedding_dim,
            "config": self.config,
            "trained_on": list(self.card.trained_on),
        }


def load_encoder(label: str, *, device: str = "cpu", options: dict[str, Any] | None = None) -> Encoder:
    """Build the encoder registered as ``label`` (exact name) on ``device``."""
    card = ENCODERS.get(label)
    if card.factory is None:  # pragma: no cover - every registered card has a factory
        raise EncoderError(f"{label}: no loader")
    return card.factory(card, device=device, **(options or {}))


def restore_threads(n: int | None = None) -> None:
    """Some imports (silero-vad) call ``torch.set_num_threads(1)``; put the count back."""
    import torch

    torch.set_num_threads(n or int(os.environ.get("INTERBIAS_THREADS", 0)) or (os.cpu_count() or 1))


from interbias.encoders import campplus as _campplus  # noqa: E402,F401
from interbias.encoders import mfcc_stats as _mfcc_stats  # noqa: E402,F401
