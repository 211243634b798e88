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
        mroot = root or (Path(spec.root) if spec.root else None)
        return Manifest.read(Path(spec.manifest), root=mroot)
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


from interbias.corpora import synthetic as _synthetic  # noqa: E402,F401
