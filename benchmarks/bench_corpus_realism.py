"""Does the embedded corpus rank speaker encoders the way real speech does?

On the clean grid of the synthetic corpus (neutral style, no operator applied) every encoder
embeds every selected utterance once; per gender, all same-gender pairs are scored by cosine
(same speaker = target) and the EER is computed. The within/between speaker variance ratio is
the mean squared distance of a speaker's L2-normalised embeddings to their centroid, divided by
the spread of the speaker centroids around their mean (both traces): lower separates speakers
better. On real speech the order is CAM++ < GE2E < mfcc-stats; the corpus targets (each gender)
are that order, mfcc-stats' EER at least 2× CAM++'s, and CAM++'s EER within 1–10 %.

Usage: ``python benchmarks/bench_corpus_realism.py [--speakers N] [--sentences K] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from _common import machine, table

from interbias.corpora.manifest import Manifest
from interbias.corpora.synthetic import SyntheticSpec, build, build_info
from interbias.metrics.verification import eer
from interbias.utils.paths import cache_dir

ENCODERS = ("CAM++", "GE2E", "mfcc-stats")


@dataclass(frozen=True)
class Realism:
    """One encoder × gender row of the table."""

    encoder: str
    gender: str
    eer: float
    variance_ratio: float
    n_utterances: int
    n_speakers: int


def select(manifest: Manifest, *, style: str = "neutral", sentences: int | None = None) -> list[Any]:
    """The clean grid: utterances of ``style``, the first ``sentences`` sentences of each voice."""
    keep = []
    for u in manifest:
        if u.style != style:
            continue
        if sentences is not None and int(str(u.get("sentence"))[1:]) > sentences:
            continue
        keep.append(u)
    return sorted(keep, key=lambda u: u.id)


def pair_eer(emb: np.ndarray, speakers: list[str]) -> float:
    """EER of cosine scores over all pairs (i < j) of ``emb`` (rows L2-normalised)."""
    i, j = np.triu_indices(len(speakers), k=1)
    scores = np.einsum("ij,ij->i", emb[i], emb[j]).astype(np.float64)
    spk = np.asarray(speakers)
    return float(eer(scores, (spk[i] == spk[j]).astype(np.int8)))


def variance_ratio(emb: np.ndarray, speakers: list[str]) -> float:
    """Within-speaker over between-speaker variance (traces) of the embeddings."""
    spk = np.asarray(speakers)
    names = sorted(set(speakers))
    centroids = np.stack([emb[spk == s].mean(axis=0) for s in names])
    within = np.mean([np.sum((emb[spk == s] - centroids[k]) ** 2, axis=1).mean() for k, s in enumerate(names)])
    between = np.sum((centroids - centroids.mean(axis=0)) ** 2, axis=1).mean()
    return float(within / between)


def embed_all(manifest: Manifest, utts: list[Any], encoder_label: str) -> tuple[np.ndarray, float]:
    """(embeddings, seconds) of ``utts`` by the registered encoder ``encoder_label``."""
    import soundfile as sf

    from interbias.encoders import load_encoder

    encoder = load_encoder(encoder_label)
    waves = [sf.read(str(manifest.resolve(u)), dtype="float32")[0] for u in utts]
    t0 = time.perf_counter()
    emb = encoder.embed(waves)
    return emb, time.perf_counter() - t0


def realism(manifest: Manifest, utts: list[Any], encoders: tuple[str, ...] = ENCODERS) -> list[Realism]:
    rows = []
    for label in encoders:
        emb, _ = embed_all(manifest, utts, label)
        for gender in ("female", "male"):
            idx = [k for k, u in enumerate(utts) if u.gender == gender]
            spk = [utts[k].speaker for k in idx]
            sub = emb[idx]
            rows.append(Realism(label, gender, pair_eer(sub, spk), variance_ratio(sub, spk), len(idx), len(set(spk))))
    return rows


def targets_met(rows: list[Realism]) -> dict[str, bool]:
    """Per gender: CAM++ < GE2E < mfcc-stats, mfcc-stats ≥ 2× CAM++, 1 % ≤ CAM++ ≤ 10 %."""
    out = {}
    for gender in sorted({r.gender for r in rows}):
        e = {r.encoder: r.eer for r in rows if r.gender == gender}
        if not set(ENCODERS) <= set(e):
            continue
        cam, ge2e, mfcc = e["CAM++"], e["GE2E"], e["mfcc-stats"]
        out[gender] = cam < ge2e < mfcc and mfcc >= 2 * cam and 0.01 <= cam <= 0.10
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--speakers", type=int, default=None, help="corpus size (default: the default corpus)")
    ap.add_argument("--sentences", type=int, default=None, help="first K sentences of each voice (default all)")
    ap.add_argument("--encoders", default=",".join(ENCODERS))
    ap.add_argument("--cache-dir", type=Path, default=None)
    ap.add_argument("--quick", action="store_true", help="8 sentences per voice")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    spec = SyntheticSpec() if args.speakers is None else SyntheticSpec().with_speakers(args.speakers)
    manifest, seconds = build(spec, args.cache_dir or cache_dir())
    sentences = 8 if args.quick and args.sentences is None else args.sentences
    utts = select(manifest, sentences=sentences)
    rows = realism(manifest, utts, tuple(args.encoders.split(",")))
    met = targets_met(rows)
    if args.json:
        print(json.dumps({"rows": [r.__dict__ for r in rows], "targets_met": met}, indent=2))
        return 0
    n_spk = len({u.speaker for u in utts})
    title = (
        f"Corpus realism: synthetic v{manifest.utterances[0].get('corpus_version')}, {n_spk} speakers, "
        f"{len(utts)} clean neutral utterances, all same-gender pairs ({machine()})"
    )
    body = [[r.encoder, r.gender, f"{100 * r.eer:.2f} %", f"{r.variance_ratio:.3f}", r.n_speakers] for r in rows]
    print(table(title, ["encoder", "gender", "EER", "within/between variance", "speakers"], body))
    print("targets (CAM++ < GE2E < mfcc-stats, mfcc-stats ≥ 2× CAM++, CAM++ 1–10 %): ", end="")
    print(", ".join(f"{g} {'met' if ok else 'NOT met'}" for g, ok in met.items()) or "need all three encoders")
    info = build_info(manifest)
    when = "now" if seconds else "earlier (reused)"
    print(
        f"corpus build ({when}): {info.get('build_seconds')} s wall with {info.get('workers')} worker(s), "
        f"{info.get('cpu_seconds')} CPU seconds, {len(manifest)} utterances"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
