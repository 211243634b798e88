"""Where an audit's vectors come from, declared once for ``audit geometry``, ``audit repair``
and ``audit blackbox prepare``: a corpus (or a manifest file of one) embedded with an encoder,
or a table of embeddings (:mod:`interbias.audits.source`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

EmbeddingsOpt = Annotated[
    Path | None,
    typer.Option(
        help="A CSV/parquet table instead of an encoder: columns e0..e{d-1} (embedding), text, voice, "
        "style and the --groups columns (constant within each voice)."
    ),
]
CorpusOpt = Annotated[str, typer.Option(help="Corpus of the audit: a factorial text × voice × style grid.")]
CorpusRootOpt = Annotated[Path | None, typer.Option(help="Root folder of the corpus on disk.")]
ManifestOpt = Annotated[
    Path | None,
    typer.Option(
        help="A manifest file (CSV/JSONL with speaker, text, style and the --groups columns) instead of --corpus."
    ),
]
SentencesOpt = Annotated[
    int | None, typer.Option(help="Use only the first N sentences (all voices and styles: still balanced).")
]
GroupsOpt = Annotated[str, typer.Option(help="Comma-separated voice-level group attributes.")]
CacheDirOpt = Annotated[Path | None, typer.Option(help="Cache folder (default $INTERBIAS_CACHE).")]
