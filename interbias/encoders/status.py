"""What ``interbias encoders list`` lists (every label, whether its files are here) and what
``interbias encoders embed`` computes (one encoder over a few files)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


def encoder_entries() -> list[dict[str, Any]]:
    """Every registered label: family, backend, dimension, status, source, files expected."""
    from interbias.encoders import ENCODERS

    out = []
    for label, card in ENCODERS.items():
        ok, why, source = card.status()
        out.append(
            {
                "label": label,
                "family": card.family,
                "backend": card.backend,
                "embedding_dim": card.embedding_dim,
                "sample_rate_hz": card.sample_rate_hz,
                "features": card.features,
                "status": "available" if ok else f"missing: {why}",
                "source": source,
                "folder": str(card.folder()) if card.layouts else "",
                "env_var": card.env_var if card.layouts else "",
                "expects": card.expected(),
                "checkpoint": card.checkpoint,
                "trained_on": list(card.trained_on),
            }
        )
    return out


def embed_files(
    wavs: list[Path], label: str, *, device: str = "cpu", model_dir: Path | None = None, layer: int | None = None
) -> tuple[Any, list[Any], np.ndarray]:
    """Load encoder ``label`` (its folder ``model_dir`` and hidden ``layer`` when given) and
    embed each file through the front end: (encoder, loaded audio, (N, D) embeddings)."""
    from interbias.audio import frontend as audio
    from interbias.encoders import load_encoders

    options: dict[str, Any] = {}
    if model_dir is not None:
        options["path"] = str(model_dir)
    if layer is not None:
        options["layer"] = layer
    enc = load_encoders([label], device, {label: options})[0]
    loaded = [audio.load(p, vad=True) for p in wavs]  # utterances to embed: the input rules of a run
    return enc, loaded, enc.embed([a.samples for a in loaded])
