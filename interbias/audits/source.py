"""Where an audit's vectors come from (the geometry audit, the repair and the black-box audit):
a corpus or manifest (:func:`load_manifest`), its first N sentences (:func:`select_sentences`),
every utterance through the *clean* chain embedded by the run's embedding stage and cache
(:func:`embed_clean`, the same cache keys ``interbias run`` uses), labelled as a text × voice ×
style grid (:func:`grid_from_manifest`); or an ``--embeddings`` table (CSV or parquet; columns
``e0 … e{d−1}``, ``text``, ``voice``, ``style`` and one per group attribute) read by
:func:`read_table` and :func:`grid_from_table` and written by :func:`grid_to_table`.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from interbias.analysis import geometry as geo
from interbias.analysis.geometry.noise import text_label
from interbias.audio.frontend import FrontEnd
from interbias.corpora.manifest import Manifest
from interbias.utils.errors import AnalysisError, EncoderError
from interbias.utils.progress import Reporter

#: Embedding columns of an ``--embeddings`` table.
EMBEDDING_COLUMN = re.compile(r"^e(\d+)$")


def load_manifest(
    corpus: str, corpus_root: Path | None, manifest: Path | None, cache: Path | None, reporter: Reporter | None = None
) -> Manifest:
    """The manifest of ``corpus`` (built under ``corpus_root``) or of the ``manifest`` file;
    ``cache``: the cache folder (None: ``$INTERBIAS_CACHE``)."""
    from interbias.corpora import load_corpus
    from interbias.experiments.schema import CorpusSpec
    from interbias.utils.paths import cache_dir

    spec = CorpusSpec(
        corpus, root=str(corpus_root) if corpus_root else None, manifest=str(manifest) if manifest else None
    )
    folder = Path(cache) if cache else cache_dir()
    return load_corpus(spec, root=corpus_root, cache=folder, reporter=reporter or Reporter(quiet=True))


# ---- grids from a manifest or a table --------------------------------------------------------


def select_sentences(manifest: Manifest, n: int | None) -> tuple[Manifest, str]:
    """The utterances of the first ``n`` sentence labels in sorted order (all voices and styles:
    still a full factorial grid) and a subset name (``full`` or ``sentences=N``)."""
    labels = sorted({text_label(u) or "" for u in manifest})
    if n is None:
        return manifest, "full"
    if not 2 <= n <= len(labels):
        raise AnalysisError(f"--sentences must be in 2..{len(labels)} (the corpus has {len(labels)} sentences)")
    keep = set(labels[:n])
    return manifest.filter(text_label(u) in keep for u in manifest), f"sentences={n}"


def grid_from_manifest(
    manifest: Manifest, vectors: dict[str, np.ndarray], groups: tuple[str, ...]
) -> geo.EmbeddingGrid:
    """Rows for the utterances that have a vector, labelled text/voice (= speaker)/style/groups."""
    utts = [u for u in manifest if u.id in vectors]
    if not utts:
        raise AnalysisError("no utterance has an embedding")
    for name, get in (("text", text_label), ("style", lambda u: u.style)):
        missing = [u.id for u in utts if not get(u)]
        if missing:
            raise AnalysisError(f"{len(missing)} utterance(s) have no {name} label; first: {missing[0]!r}")
    cols: dict[str, list[str]] = {}
    for attr in groups:
        values = [u.get(attr) for u in utts]
        if any(v is None for v in values):
            raise AnalysisError(f"group attribute {attr!r} is missing from the manifest for some utterances")
        cols[attr] = [str(v) for v in values]
    x = np.stack([vectors[u.id] for u in utts]).astype(np.float64)
    return geo.EmbeddingGrid.build(
        x, [text_label(u) for u in utts], [u.speaker for u in utts], [u.style for u in utts], cols
    )


def read_table(path: Path) -> pd.DataFrame:
    path = Path(path)
    if not path.is_file():
        raise AnalysisError(f"embeddings file {path} does not exist")
    try:
        if path.suffix == ".parquet":
            return pd.read_parquet(path)
        if path.suffix == ".csv":
            return pd.read_csv(path)
    except Exception as exc:  # pyarrow/pandas raise many types for unreadable files
        raise AnalysisError(f"{path}: cannot read the table ({type(exc).__name__}: {exc})") from exc
    raise AnalysisError(f"{path}: embeddings tables end in .csv or .parquet")


def grid_from_table(frame: pd.DataFrame, groups: tuple[str, ...], *, where: str) -> geo.EmbeddingGrid:
    """A grid from an ``--embeddings`` table (see the module docstring for its columns)."""
    emb = sorted(
        ((int(m.group(1)), c) for c in frame.columns if (m := EMBEDDING_COLUMN.match(str(c)))), key=lambda t: t[0]
    )
    if not emb:
        raise AnalysisError(f"{where}: no embedding columns (named e0, e1, …)")
    if [i for i, _ in emb] != list(range(len(emb))):
        raise AnalysisError(f"{where}: embedding columns must be e0..e{len(emb) - 1} without gaps")
    need = ["text", "voice", "style", *groups]
    missing = [c for c in need if c not in frame.columns]
    if missing:
        raise AnalysisError(
            f"{where}: missing column(s) {', '.join(missing)}; found: {', '.join(map(str, frame.columns))}"
        )
    empty = [c for c in need if frame[c].isna().any() or (frame[c].astype(str).str.strip() == "").any()]
    if empty:
        raise AnalysisError(f"{where}: column(s) {', '.join(empty)} have empty values")
    try:
        x = frame[[c for _, c in emb]].to_numpy(dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise AnalysisError(f"{where}: embedding columns must be numeric ({exc})") from exc
    return geo.EmbeddingGrid.build(
        x,
        frame["text"].astype(str),
        frame["voice"].astype(str),
        frame["style"].astype(str),
        {g: frame[g].astype(str) for g in groups},
    )


def grid_to_table(grid: geo.EmbeddingGrid) -> pd.DataFrame:
    cols = {f"e{i}": grid.x[:, i] for i in range(grid.x.shape[1])}
    labels = {"text": grid.text, "voice": grid.voice, "style": grid.style, **grid.groups}
    return pd.DataFrame({**{k: list(v) for k, v in labels.items()}, **cols})


# ---- embedding the clean grid ----------------------------------------------------------------


def encoder_options(label: str, layer: int | None) -> dict[str, Any]:
    """``{"layer": N}`` for encoders whose loader (factory or file layout) takes a layer; an error
    for the others."""
    if layer is None:
        return {}
    from interbias.encoders import ENCODERS

    card = ENCODERS.get(label)
    if card.factory:
        params = set(inspect.signature(card.factory).parameters)
    else:  # loaded through its file layouts (hf_ssl): the layouts' options
        params = {o for layout in card.layouts for o in layout.options}
    if "layer" not in params:
        raise EncoderError(f"{label}: takes no --layer option (only encoders with selectable layers do)")
    return {"layer": int(layer)}


def embed_clean(
    manifest: Manifest, encoder: Any, cache_dir: Path, reporter: Reporter
) -> tuple[dict[str, np.ndarray], dict[str, str], int, int]:
    """Clean-chain embeddings of every utterance: (vectors by id, failures by id, embedded, cached).

    Uses the run's embedding stage (same front end, cache keys and failure accounting)."""
    from interbias.embedding.cache import EmbeddingCache
    from interbias.embedding.stage import Embedder
    from interbias.operators import Chain

    chain = Chain()
    db = EmbeddingCache(cache_dir / "embeddings.sqlite")
    try:
        emb = Embedder(manifest, [encoder], db, FrontEnd(), reporter)
        emb.run({chain.fingerprint: (chain, {u.id for u in manifest})})
    finally:
        db.close()
    vectors = {uid: vec for (uid, _fp, _enc), vec in emb.vectors.items()}
    failures = {
        u.id: emb.failed(u.id, chain.fingerprint) or "no embedding returned" for u in manifest if u.id not in vectors
    }
    return vectors, failures, emb.n_embedded, emb.n_cached
