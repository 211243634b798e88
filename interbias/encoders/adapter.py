"""The ORCA adapter: a residual MLP on a frozen encoder's L2-normalised embedding, and its file.

``adapt(z) = normalise(z + W₂ · gelu(W₁ z + b₁) + b₂)`` with ``W₁: h × d``, ``W₂: d × h``;
``W₂`` and ``b₂`` start at zero, so an untrained adapter is the identity on unit vectors.
Three linear heads ``P_a: k × d`` (a ∈ sem, voice, expr) feed the contrastive losses during
training only; they are stored in the file but never used to embed.

The file is safetensors: tensors ``adapter.w1, adapter.b1, adapter.w2, adapter.b2, head.sem,
head.voice, head.expr`` (float32) and metadata ``{"format": "interbias-orca", "manifest": JSON}``.
The manifest holds the base encoder (label, fingerprint), the training data hashes, the voices
on each side of the split, the seed, the hyper-parameters and ``weights_sha256`` (sha256 over
the tensors in name order: ``name\\tdtype\\tshape\\tsha256(bytes)\\n`` lines), so an edited
tensor is detected on load even when the file is read by path.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from interbias.utils.errors import EncoderError

FORMAT = "interbias-orca"
#: Bump when the adapter computation changes (enters every repaired encoder's fingerprint).
CODE_VERSION = 1
AXES = ("sem", "voice", "expr")
TENSORS = ("adapter.w1", "adapter.b1", "adapter.w2", "adapter.b2", *(f"head.{a}" for a in AXES))


@dataclass(frozen=True)
class AdapterWeights:
    """Float32 arrays of one adapter (``tensors`` keyed by :data:`TENSORS`) and its manifest."""

    tensors: dict[str, np.ndarray]
    manifest: dict[str, Any]

    @property
    def dim(self) -> int:
        return int(self.tensors["adapter.w1"].shape[1])

    def apply(self, z: np.ndarray) -> np.ndarray:
        """``adapt(z)`` for rows of ``z`` (n × d or d), in float64, L2-normalised per row."""
        x = np.atleast_2d(np.asarray(z, dtype=np.float64))
        if x.shape[1] != self.dim:
            raise EncoderError(f"ORCA adapter takes {self.dim}-dimensional embeddings; got {x.shape[1]}")
        t = {k: v.astype(np.float64) for k, v in self.tensors.items()}
        pre = x @ t["adapter.w1"].T + t["adapter.b1"]
        hidden = 0.5 * pre * (1.0 + _erf(pre / np.sqrt(2.0)))  # exact gelu, as torch's default
        out = x + hidden @ t["adapter.w2"].T + t["adapter.b2"]
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        if not np.all(norms > 0):
            raise EncoderError("ORCA adapter produced an all-zero embedding")
        return out / norms


def _erf(x: np.ndarray) -> np.ndarray:
    from scipy.special import erf

    return erf(x)


def weights_sha256(tensors: dict[str, np.ndarray]) -> str:
    """sha256 over ``name\\tdtype\\tshape\\tsha256(bytes)\\n`` lines in :data:`TENSORS` order."""
    lines = []
    for name in TENSORS:
        arr = np.ascontiguousarray(tensors[name])
        digest = hashlib.sha256(arr.tobytes()).hexdigest()
        lines.append(f"{name}\t{arr.dtype.str}\t{'x'.join(map(str, arr.shape))}\t{digest}\n")
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def save_adapter(path: Path, tensors: dict[str, np.ndarray], manifest: dict[str, Any]) -> bytes:
    """The safetensors bytes of ``tensors`` (float32) with ``manifest`` (plus ``weights_sha256``);
    written atomically to ``path``. Returns the bytes written."""
    from safetensors.numpy import save

    from interbias.utils import atomic

    arrays = {k: np.ascontiguousarray(tensors[k], dtype=np.float32) for k in TENSORS}
    full = {**manifest, "weights_sha256": weights_sha256(arrays), "code_version": CODE_VERSION}
    data = save(arrays, metadata={"format": FORMAT, "manifest": json.dumps(full, sort_keys=True)})
    atomic.write_bytes(Path(path), data)
    return data


def load_adapter(path: Path) -> AdapterWeights:
    """Read and check an adapter file: format, tensor names and shapes, ``weights_sha256``.

    Any mismatch is an :class:`EncoderError` naming the file."""
    from safetensors import SafetensorError
    from safetensors.numpy import load

    path = Path(path)
    try:
        data = path.read_bytes()
        arrays = load(data)
        header_len = int.from_bytes(data[:8], "little")
        meta = json.loads(data[8 : 8 + header_len]).get("__metadata__") or {}
    except (OSError, SafetensorError, ValueError) as exc:
        raise EncoderError(f"ORCA adapter {path}: not a readable safetensors file ({exc})") from exc
    if meta.get("format") != FORMAT or "manifest" not in meta:
        raise EncoderError(
            f"ORCA adapter {path}: not an interbias ORCA adapter (metadata format {meta.get('format')!r})"
        )
    missing = [k for k in TENSORS if k not in arrays]
    if missing:
        raise EncoderError(f"ORCA adapter {path}: missing tensor(s) {', '.join(missing)}")
    manifest = json.loads(meta["manifest"])
    if weights_sha256(arrays) != manifest.get("weights_sha256"):
        raise EncoderError(
            f"ORCA adapter {path}: its weights do not match the weights_sha256 in its manifest (the file changed)"
        )
    d = arrays["adapter.w1"].shape[1]
    if arrays["adapter.w2"].shape != (d, arrays["adapter.w1"].shape[0]):
        raise EncoderError(f"ORCA adapter {path}: adapter.w1/adapter.w2 shapes do not match")
    return AdapterWeights({k: arrays[k] for k in TENSORS}, manifest)
