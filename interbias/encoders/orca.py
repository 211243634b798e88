"""Repaired encoders: ``LABEL+orca:REF``, a registered encoder followed by an ORCA adapter.

``REF`` is the adapter file's path, or the first 8–64 hex digits of its sha256, found in
``<cache>/adapters/<sha256>.safetensors`` (where ``interbias audit repair`` stores every adapter it
trains). The embedding is ``adapt(base(x))`` (:mod:`interbias.encoders.adapter`), L2-normalised.
However the adapter is named (relative path, absolute path, sha256 prefix), the loaded encoder's
label is ``LABEL+orca:<first 12 hex of its sha256>`` (:func:`canonical_label`): one adapter is
one encoder (one model label, fingerprint, run id and cache key), and no machine path is in the
label; ``load_label`` keeps the reference as given, for worker processes to load it again.

Refused, with one :class:`EncoderError`: a hash that matches no stored file or several, a file
whose sha256 does not start with the hash given (the file changed), a file whose tensors do not
match the ``weights_sha256`` of its own manifest (edited), an adapter trained on another
checkpoint (its manifest's base fingerprint differs from the loaded base encoder's) or of
another dimension. The fingerprint covers the base encoder's fingerprint and the adapter
file's sha256, so embeddings of another adapter never share cache keys.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from interbias.encoders import Encoder, load_encoder
from interbias.encoders.adapter import CODE_VERSION, AdapterWeights, load_adapter
from interbias.utils.errors import EncoderError
from interbias.utils.seeding import canonical_json, sha256_file

MARK = "+orca:"
HEX = re.compile(r"^[0-9a-f]{8,64}$")


def is_repaired(label: str) -> bool:
    """Whether ``label`` names a repaired encoder (contains ``+orca:``)."""
    return MARK in label


def split_label(label: str) -> tuple[str, str]:
    """(base label, adapter reference) of ``BASE+orca:REF``."""
    base, _, ref = label.rpartition(MARK)
    if not base or not ref:
        raise EncoderError(f"{label!r}: a repaired encoder is LABEL+orca:<adapter path or sha256 prefix>")
    return base, ref


def canonical_label(base_label: str, sha: str) -> str:
    """``BASE+orca:<sha256[:12]>``: the label of a repaired encoder however its adapter was named."""
    return f"{base_label}{MARK}{sha[:12]}"


def adapters_dir() -> Path:
    from interbias.utils.paths import cache_dir

    return cache_dir() / "adapters"


def resolve_adapter(ref: str, *, label: str) -> tuple[Path, str]:
    """(file, its sha256) for a path or a sha256 prefix (see the module docstring)."""
    path = Path(ref).expanduser()
    if path.is_file():
        return path, sha256_file(path)
    if not HEX.match(ref):
        raise EncoderError(f"{label}: adapter {ref!r} is neither a file nor a sha256 prefix (8-64 hex digits)")
    folder = adapters_dir()
    hits = sorted(folder.glob(f"{ref}*.safetensors")) if folder.is_dir() else []
    if not hits:
        raise EncoderError(
            f"{label}: no stored adapter {ref}* in {folder} (run `interbias audit repair`, or give its path)"
        )
    if len(hits) > 1:
        raise EncoderError(f"{label}: adapter prefix {ref} matches {len(hits)} files in {folder}; give more digits")
    sha = sha256_file(hits[0])
    if not sha.startswith(ref):
        raise EncoderError(f"{label}: adapter file {hits[0]} has sha256 {sha[:16]}…, not {ref}: the file changed")
    return hits[0], sha


class RepairedEncoder(Encoder):
    """A base encoder followed by an ORCA adapter (see the module docstring)."""

    def __init__(self, label: str, base: Encoder, adapter: AdapterWeights, path: Path, sha: str) -> None:
        card = replace(
            base.card,
            label=canonical_label(base.label, sha),
            backend=f"orca+{base.card.backend}",
            description=f"{base.card.label} + ORCA adapter {sha[:12]}",
            layouts=(),
            factory=None,
        )
        super().__init__(card, source=str(path), checkpoint_sha256=sha, device=base.device, files={path.name: sha})
        self.base = base
        self.adapter = adapter
        self.adapter_path = path
        self.given_label = label  # the reference as given: what reloads it in a worker process
        # the base's runtime: worker processes reload this label with {"runtime": self.runtime}
        self.runtime = base.runtime
        self.runtime_config = dict(base.runtime_config)
        self.runtime_graph = dict(base.runtime_graph)

    @property
    def fingerprint(self) -> str:
        """sha256 (16 hex) of the label, the base fingerprint, the adapter sha256 and code version."""
        payload = {"label": self.label, "base": self.base.fingerprint, "adapter": self.checkpoint_sha256}
        payload["code"] = CODE_VERSION
        return hashlib.sha256(canonical_json(payload).encode()).hexdigest()[:16]

    @property
    def load_label(self) -> str:
        return self.given_label

    def batches(self) -> bool:
        return False

    def _embed_one(self, wave: np.ndarray) -> np.ndarray:
        z = self.base.embed([wave])
        return self.adapter.apply(z)[0].astype(np.float32)

    def provenance(self) -> dict[str, Any]:
        out = super().provenance()
        out["base"] = self.base.provenance()
        out["adapter"] = {
            "path": str(self.adapter_path),
            "sha256": self.checkpoint_sha256,
            "manifest": {k: v for k, v in self.adapter.manifest.items() if not k.endswith("_voices")},
        }
        return out


def load_repaired(
    label: str, *, device: str = "cpu", options: dict[str, Any] | None = None, runtime: str | None = None
) -> RepairedEncoder:
    """Load ``BASE+orca:REF``: the base encoder (with ``options``), then the checked adapter."""
    base_label, ref = split_label(label)
    path, sha = resolve_adapter(ref, label=label)
    adapter = load_adapter(path)
    base = load_encoder(base_label, device=device, options=options, runtime=runtime)
    want = adapter.manifest.get("base_fingerprint")
    if want != base.fingerprint:
        raise EncoderError(
            f"{label}: adapter {path.name} was trained on {adapter.manifest.get('base_encoder')!r} with fingerprint "
            f"{want!r}; the loaded {base_label} has fingerprint {base.fingerprint!r}"
        )
    if base.card.embedding_dim not in (None, adapter.dim):
        raise EncoderError(f"{label}: adapter is {adapter.dim}-dimensional, {base_label} {base.card.embedding_dim}")
    return RepairedEncoder(label, base, adapter, path, sha)
