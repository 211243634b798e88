"""What ``interbias data build`` and ``interbias data prepare`` do, as library calls."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from interbias.corpora.manifest import Manifest
from interbias.utils.errors import CorpusError
from interbias.utils.progress import Reporter


def build_corpus(
    name: str,
    options: dict[str, Any],
    *,
    speakers: int | None = None,
    cache: Path | None = None,
    workers: int | None = None,
    reporter: Reporter | None = None,
) -> tuple[Any, Manifest, float]:
    """Build the embedded corpus ``name`` (only ``synthetic``) from spec ``options`` and
    ``speakers`` voices into ``cache`` (default ``$INTERBIAS_CACHE``): (spec, manifest, seconds
    spent building; 0 when an earlier build was reused)."""
    from interbias.corpora.synthetic import SyntheticSpec
    from interbias.corpora.synthetic import build as build_synthetic
    from interbias.utils.paths import cache_dir as default_cache

    if name != "synthetic":
        raise CorpusError(
            f"'synthetic' and 'same-text' are built; a corpus on disk is prepared: "
            f"interbias data prepare {name} --root DIR"
        )
    spec = SyntheticSpec.from_options(options)
    if speakers is not None:
        spec = spec.with_speakers(speakers)
    manifest, seconds = build_synthetic(spec, cache or default_cache(), workers=workers, reporter=reporter)
    return spec, manifest, seconds


def prepare_corpus(name: str, root: Path, options: dict[str, Any], *, cache: Path | None = None) -> Manifest:
    """The manifest of corpus ``name`` read from ``root`` in its published layout by its adapter
    (with adapter ``options``), every audio path made absolute."""
    from interbias.corpora import CORPORA
    from interbias.utils.paths import cache_dir as default_cache

    adapter = CORPORA.get(name)
    if not adapter.needs_root:
        raise CorpusError(f"{name!r} is built, not prepared: interbias data build {name}")
    if not root.is_dir():
        raise CorpusError(f"{name}: corpus root {root} is not a folder (expected {adapter.expects})")
    manifest = adapter.prepare(root, cache or default_cache(), options)
    return Manifest(
        manifest.name,
        manifest.root,
        tuple(dataclasses.replace(u, path=str(manifest.resolve(u))) for u in manifest),
    )
