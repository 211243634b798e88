"""Corpus adapters: one module per corpus, each turning a corpus on disk into a Manifest.

Adapters are registered by exact name. ``prepare(root, cache)`` reads the corpus's published
layout and metadata; the embedded ``synthetic`` corpus needs no root and builds itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from interbias.errors import CorpusError
from interbias.manifest import Manifest
from interbias.registry import Registry


@dataclass(frozen=True)
class CorpusAdapter:
    name: str
    description: str
    #: ``prepare(root, cache_dir, options) -> Manifest``
    prepare: Callable[[Path | None, Path, dict[str, Any]], Manifest]
    needs_root: bool = True
    #: What the user must provide, shown when the root is missing.
    expects: str = ""


CORPORA: Registry[CorpusAdapter] = Registry("corpus", CorpusError)


def register(adapter: CorpusAdapter) -> CorpusAdapter:
    CORPORA.register(adapter.name)(adapter)
    return adapter


def load_corpus(spec: Any, *, root: Path | None = None, cache: Path) -> Manifest:
    """The manifest of an experiment's corpus (a ``CorpusSpec``).

    A ``manifest`` file is read directly; otherwise the named adapter prepares it from
    ``root`` (argument, then the spec's ``root``, then ``$INTERBIAS_CORPORA/<name>``).
    """
    from interbias.paths import corpora_dir

    if spec.manifest:
        mroot = root or (Path(spec.root).expanduser() if spec.root else None)
        return read_manifest(Path(spec.manifest).expanduser(), root=mroot)
    adapter = CORPORA.get(spec.name)
    corpus_root: Path | None = None
    if adapter.needs_root:
        corpus_root = root or (Path(spec.root).expanduser() if spec.root else corpora_dir() / spec.name)
        if not corpus_root.is_dir():
            raise CorpusError(
                f"corpus {spec.name!r} not found at {corpus_root}: pass --corpus-root DIR or set "
                f"INTERBIAS_CORPORA (expected {adapter.expects or 'the published layout'})"
            )
    return adapter.prepare(corpus_root, cache, dict(spec.options))


def read_manifest(path: Path, *, root: Path | None = None) -> Manifest:
    """A user's manifest: CSV or JSONL (``path``, ``speaker``, any attributes), or a Lhotse
    recordings + supervisions pair (either file, or the folder holding both). Every audio
    path must be a readable file; relative paths resolve against ``root`` or the file's folder."""
    from interbias.corpora import lhotse

    if path.is_dir() or lhotse.is_lhotse_file(path):
        return lhotse.read_lhotse(*lhotse.find_pair(path), root=root, name=path.name if path.is_dir() else None)
    return Manifest.read(path, root=root, check_files=True)


from interbias.corpora import synthetic as _synthetic  # noqa: E402,F401
