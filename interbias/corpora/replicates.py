"""Replicate cells of the synthetic corpus: the synthesis noise floor (TRIAD's replicates).

A replicate re-renders one cell (text × voice × style) of a built synthetic corpus with
everything its original had — voice file, style, espeak pitch, range and rate, the session's
channel — except the synthesis seed: the seed (espeak-ng's and libc's) and the channel's
background draw derive from the replicate's own id ``<original id>#r1``. The difference between a
replicate and its original is therefore rendering noise alone.

Opt-in and separate: the replicates live in their own folder beside the corpus
(``synthetic-v<V>-<key>-replicates-<hash>``, its own ``manifest.jsonl``); the corpus, its manifest
and its utterance ids are untouched. Each replicate row carries ``attrs['replicate'] = '1'``
and ``attrs['replicate_of']`` (the original's id). By default the replicated voices are the
first voice of every gender × accent cell in the ``adult`` age band (8 voices of the default
corpus), every sentence and style: 8 × 20 × 7 = 1,120 replicate cells.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import asdict
from pathlib import Path
from typing import Any

from interbias.corpora.manifest import Manifest, Utterance
from interbias.corpora.synthetic import (
    VERSION,
    SyntheticSpec,
    build,
    corpus_folder,
    corpus_rooms,
    espeak_data_dir,
    make_voices,
    render_chunks,
    voice_jobs,
)
from interbias.utils.errors import CorpusError
from interbias.utils.progress import Reporter
from interbias.utils.seeding import canonical_json

#: The suffix of a replicate's id.
SUFFIX = "#r1"


def default_voices(spec: SyntheticSpec) -> list[str]:
    """The first voice of each gender × accent cell in the middle age band (``adult`` when present)."""
    band = "adult" if "adult" in spec.age_bands else spec.age_bands[0]
    return [v.id for v in make_voices(spec) if v.age_band == band and v.id.endswith("-1")]


def replicate_folder(spec: SyntheticSpec, cache: Path, voices: list[str]) -> Path:
    """The replicates' folder beside the corpus (named by the corpus and the replicated voices)."""
    key = hashlib.sha256(canonical_json(sorted(voices)).encode()).hexdigest()[:8]
    base = corpus_folder(spec, cache)
    return base.with_name(f"{base.name}-replicates-{key}")


def build_replicates(
    spec: SyntheticSpec, cache: Path, voices: list[str] | None = None, reporter: Reporter | None = None
) -> tuple[Manifest, Manifest]:
    """Build (or reuse) the corpus and the replicates of ``voices`` (default :func:`default_voices`);
    returns (corpus manifest, replicate manifest)."""
    corpus, _ = build(spec, cache, reporter=reporter)
    voices = default_voices(spec) if voices is None else list(voices)
    known = {v.id: v for v in make_voices(spec)}
    unknown = sorted(set(voices) - set(known))
    if unknown or not voices:
        raise CorpusError(f"synthetic replicates: unknown voice(s) {', '.join(unknown) or '(none given)'}")
    final = replicate_folder(spec, cache, voices)
    if (final / "manifest.jsonl").is_file():
        return corpus, Manifest.read(final / "manifest.jsonl", name="synthetic-replicates")
    work = final.with_name(final.name + f".partial-{os.getpid()}")
    if work.exists():
        shutil.rmtree(work)
    data_dir = espeak_data_dir(work)
    rooms = corpus_rooms(cache) if spec.channel else []
    chunks, rows = [], []
    for vid in voices:
        jobs, voice_rows = voice_jobs(spec, known[vid], data_dir, work, len(rooms))
        chunks.append([_replicate_job(job) for job in jobs])
        rows += [_replicate_row(row) for row in voice_rows]
    done, _ = render_chunks(data_dir, chunks, None, rooms, reporter)
    for row in rows:
        row.update(duration_s=round(done[row["id"]]["duration_s"], 6), sha256=done[row["id"]]["sha256"])
        row["attrs"].update(done[row["id"]]["attrs"])
    manifest = Manifest("synthetic-replicates", work, tuple(Utterance.from_dict(r) for r in rows))
    manifest.write(work / "manifest.jsonl")
    shutil.rmtree(data_dir)
    record = {"version": VERSION, "spec": asdict(spec), "voices": voices, "n": len(rows)}
    (work / "build.json").write_text(canonical_json(record) + "\n", encoding="utf-8")
    if final.exists():
        shutil.rmtree(work)
    else:
        work.rename(final)
    return corpus, Manifest.read(final / "manifest.jsonl", name="synthetic-replicates")


def _replicate_job(job: dict[str, Any]) -> dict[str, Any]:
    path = Path(job["path"])
    return {**job, "id": job["id"] + SUFFIX, "path": str(path.with_name(path.stem + "-r1" + path.suffix))}


def _replicate_row(row: dict[str, Any]) -> dict[str, Any]:
    path = Path(row["path"])
    attrs = {**row["attrs"], "replicate": "1", "replicate_of": row["id"]}
    return {
        **row,
        "id": row["id"] + SUFFIX,
        "path": str(path.with_name(path.stem + "-r1" + path.suffix)),
        "attrs": attrs,
    }
