"""The geometry audit end to end: collect a grid of embeddings, audit it, write the outputs.

Two sources of embeddings:

- an encoder on a corpus (``--encoder LABEL --corpus synthetic``, or ``--manifest FILE``):
  every utterance of the corpus (or of its first N sentences, ``--sentences N``) through the *clean* chain, embedded
  once per encoder fingerprint and read back from the embedding cache keyed by (utterance
  sha256, ``Chain().fingerprint``, encoder fingerprint) — the same keys ``interbias run`` uses;
- a table (``--embeddings FILE``, CSV or parquet): columns ``e0 … e{d−1}`` (the embedding,
  numbers), ``text``, ``voice``, ``style`` (the grid labels) and one column per group attribute
  (``--groups``, default gender, age_band, accent; constant within each voice). Other columns
  are ignored.

Outputs in ``--out`` (default ``results/geometry``): ``geometry.csv`` (one table for every audit
written there; a rerun of the same encoder/layer/source/subset replaces its rows),
``geometry.json`` (provenance per audit), ``geometry.png`` (a figure of every audit in the table;
also as ``geometry.pdf`` and ``geometry.svg``)
and, with ``--save-embeddings``, ``embeddings-<slug>.parquet`` in the ``--embeddings`` format
(``<slug>``: :func:`interbias.utils.paths.slug` of ``<encoder>[-layerN]-<subset>``).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from interbias.analysis import geometry as geo
from interbias.analysis.geometry.figure import geometry_figure
from interbias.analysis.geometry.noise import collect_noise, noise_frame
from interbias.analysis.reporting.plots import png, vectors
from interbias.audits.source import (
    embed_clean,
    encoder_options,
    grid_from_manifest,
    grid_from_table,
    grid_to_table,
    load_manifest,
    read_table,
    select_sentences,
)
from interbias.utils import atomic
from interbias.utils.errors import AnalysisError
from interbias.utils.paths import slug
from interbias.utils.progress import Reporter
from interbias.utils.seeding import derive_seed


@dataclass(frozen=True)
class GeometryOptions:
    encoder: str | None = None
    embeddings: Path | None = None
    corpus: str = "synthetic"
    corpus_root: Path | None = None
    manifest: Path | None = None
    layer: int | None = None
    sentences: int | None = None
    groups: tuple[str, ...] = geo.DEFAULT_ATTRIBUTES
    out: Path = Path("results/geometry")
    cache_dir: Path | None = None
    device: str = "cpu"
    n_perm: int = 200
    jackknife: bool = True
    m: int | None = None
    tau_rel: float = geo.TAU_REL
    label: str | None = None
    save_embeddings: bool = False
    #: Also audit the replicate cells' rendering noise (:mod:`interbias.analysis.geometry.noise`).
    noise_floor: bool = False
    quiet: bool = False
    command: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class GeometryOutcome:
    out_dir: Path
    frame: pd.DataFrame
    summary: pd.DataFrame
    n_embedded: int
    n_cached: int
    n_failed: int
    decomposition_note: str
    #: The audited grid and the audit's subspace rank (for the across-encoder bootstrap).
    grid: geo.EmbeddingGrid | None = None
    m: int = 0


# ---- the run ------------------------------------------------------------------------------------


def run_geometry(options: GeometryOptions, reporter: Reporter | None = None) -> GeometryOutcome:
    """Collect the grid (encoder on corpus, or a table), audit it, write the outputs."""
    reporter = reporter or Reporter(quiet=options.quiet)
    if (options.encoder is None) == (options.embeddings is None):
        raise AnalysisError("give exactly one of --encoder LABEL or --embeddings FILE")
    if options.n_perm < 1:
        raise AnalysisError(f"--permutations must be >= 1; got {options.n_perm}")
    t0 = time.perf_counter()
    provenance: dict[str, Any] = {"command": options.command, "groups": list(options.groups)}
    n_embedded = n_cached = 0
    failures: dict[str, str] = {}
    noise = None
    if options.noise_floor and (
        options.encoder is None or options.manifest is not None or options.corpus != "synthetic"
    ):
        raise AnalysisError("--noise-floor needs --encoder on the synthetic corpus (its replicate cells)")
    if options.encoder is not None:
        got = _collect(options.encoder, options, reporter)
        grid, meta, failures, noise = got.grid, dict(got.meta), got.failures, got.noise
        n_embedded, n_cached = got.n_embedded, got.n_cached
        provenance.update(got.provenance)
    elif options.embeddings is not None:
        if options.layer is not None or options.sentences is not None:
            raise AnalysisError("--layer and --sentences apply to --encoder runs, not to --embeddings tables")
        table = read_table(options.embeddings)
        grid = grid_from_table(table, options.groups, where=str(options.embeddings))
        meta = {
            "encoder": options.label or options.embeddings.stem,
            "encoder_fingerprint": "",
            "source": options.embeddings.name,
            "subset": "full",
            "layer": "",
        }
    meta["n_failed"] = len(failures)
    seed = derive_seed(
        "geometry", meta["encoder"], meta["encoder_fingerprint"], meta["source"], meta["subset"], meta["layer"]
    )
    provenance["timings"] = {"collect_s": round(time.perf_counter() - t0, 3)}
    t = time.perf_counter()
    units = geo.work_units(grid, options.groups, options.n_perm, options.jackknife)
    with reporter.task("geometry audit (permutations + jackknife)", units) as advance:
        result = geo.audit(
            grid,
            attributes=options.groups,
            m=options.m,
            tau_rel=options.tau_rel,
            n_perm=options.n_perm,
            jackknife=options.jackknife,
            seed=seed,
            advance=advance,
        )
    provenance["timings"]["audit_s"] = round(time.perf_counter() - t, 3)
    frame = geo.to_frame(result, meta)
    if noise is not None:
        frame = pd.concat([frame, noise_frame(noise, result.m, frame, options.tau_rel)], ignore_index=True)
    out = Path(options.out)
    out.mkdir(parents=True, exist_ok=True)
    csv_path = out / "geometry.csv"
    table_all = geo.merge(geo.read_geometry(csv_path) if csv_path.is_file() else None, frame)
    atomic.write_csv(csv_path, table_all)
    _write_provenance(out / "geometry.json", meta, result, options, provenance, failures)
    figure = geometry_figure(table_all)
    atomic.write_bytes(out / "geometry.png", png(figure))
    for fmt, data in vectors(figure).items():
        atomic.write_bytes(out / f"geometry.{fmt}", data)
    if options.save_embeddings:
        layer = f"-layer{meta['layer']}" if meta["layer"] != "" else ""
        name = slug(f"{meta['encoder']}{layer}-{meta['subset']}")
        atomic.write_parquet(out / f"embeddings-{name}.parquet", grid_to_table(grid))
    return GeometryOutcome(
        out, frame, geo.summary(frame), n_embedded, n_cached, len(failures), result.decomposition_note, grid, result.m
    )


@dataclass(frozen=True)
class Collected:
    """A grid embedded by one encoder: the grid, its geometry.csv identity (``meta``), embedding
    counts, failures by utterance id, and the provenance entries for geometry.json."""

    grid: geo.EmbeddingGrid
    meta: dict[str, Any]
    n_embedded: int
    n_cached: int
    failures: dict[str, str]
    provenance: dict[str, Any]
    noise: geo.EmbeddingGrid | None = None


def _collect(label: str, options: GeometryOptions, reporter: Reporter) -> Collected:
    """Embed the corpus's clean grid with encoder ``label`` (nothing passed in is modified)."""
    from interbias.encoders import check_device, load_encoder, restore_threads
    from interbias.utils.paths import cache_dir as default_cache_dir

    check_device(options.device)
    cache = Path(options.cache_dir) if options.cache_dir else default_cache_dir()
    encoder = load_encoder(label, device=options.device, options=encoder_options(label, options.layer))
    restore_threads()
    reporter.info(
        f"manifest {options.manifest}" if options.manifest else f"corpus {options.corpus}: preparing manifest"
    )
    manifest = load_manifest(options.corpus, options.corpus_root, options.manifest, cache, reporter)
    manifest, subset = select_sentences(manifest, options.sentences)
    reporter.info(f"{label}: {len(manifest)} utterances ({subset}), clean chain")
    vectors, failures, n_embedded, n_cached = embed_clean(manifest, encoder, cache, reporter)
    if failures:
        reporter.info(f"{len(failures)} utterance(s) failed and are left out; first: {next(iter(failures.values()))}")
    grid = grid_from_manifest(manifest, vectors, options.groups)
    noise = None
    if options.noise_floor:
        noise = collect_noise(
            vectors, lambda m: embed_clean(m, encoder, cache, reporter), cache, options.groups, reporter
        )
    provenance = {
        "encoder": encoder.provenance(),
        "corpus": options.corpus,
        "manifest": str(options.manifest or ""),
        "manifest_sha256": manifest.sha256(),
        "n_utterances": len(manifest),
        "n_embedded": n_embedded,
        "n_cached": n_cached,
    }
    meta = {
        "encoder": encoder.label,
        "encoder_fingerprint": encoder.fingerprint,
        "source": options.manifest.name if options.manifest else options.corpus,
        "subset": subset,
        "layer": "" if options.layer is None else str(options.layer),
    }
    return Collected(grid, meta, n_embedded, n_cached, failures, provenance, noise)


def _write_provenance(
    path: Path,
    meta: dict[str, Any],
    result: geo.Audit,
    options: GeometryOptions,
    provenance: dict[str, Any],
    failures: dict[str, str],
) -> None:
    from interbias.run.results import package_versions, revision

    try:
        existing = json.loads(path.read_text()) if path.is_file() else {}
    except json.JSONDecodeError:
        existing = {}
    key = "|".join(str(meta[k]) for k in geo.AUDIT_KEY)
    existing[key] = {
        **provenance,
        **{k: meta[k] for k in ("encoder", "encoder_fingerprint", "source", "subset", "layer")},
        "revision": revision(),
        "packages": package_versions(),
        "seed": result.seed,
        "seed_parts": [
            "geometry",
            meta["encoder"],
            meta["encoder_fingerprint"],
            meta["source"],
            meta["subset"],
            meta["layer"],
        ],
        "n_perm": options.n_perm,
        "ci_method": geo.CI_METHOD if options.jackknife else "none",
        "m": result.m,
        "tau_rel": options.tau_rel,
        "shape": result.shape,
        "decomposition": result.decomposition_note,
        "n_failed": len(failures),
        "failures": dict(list(failures.items())[:50]),
    }
    atomic.write_text(path, json.dumps(existing, indent=2, sort_keys=True, default=str) + "\n")
