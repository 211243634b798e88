"""Embedding throughput per encoder × runtime × threads, side by side in one process.

Audio: the utterances of a small embedded (synthetic) corpus, built once into a temporary
cache with the tests' tiny grid (2 accents × 2 genders × 3 voices × 5 sentences, 16 kHz). Every
configuration embeds the same utterances one at a time (as a CPU run does) through
``Encoder.embed``, so feature extraction, VAD and normalisation are counted, not just the network.
Configurations are interleaved within each repetition (so load on a shared machine hits them
alike) and the median repetition is reported.

× real time per core = audio seconds / (wall seconds × threads). CPU × real time = audio
seconds / CPU seconds of this process (all its threads), which does not depend on what else the
machine runs. ``runtime auto`` is what a run uses by default (``EncoderCard.cpu_runtime``).
Jobs (worker processes) are not measured yet.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from _common import fmt_s, machine, table

from interbias import audio
from interbias.corpora.synthetic import SyntheticSpec, build
from interbias.encoders import ENCODERS, load_encoder

TINY = {"accents": ["us", "wi"], "age_bands": ["adult"], "voices_per_cell": 3, "styles": ["neutral"], "n_sentences": 5}


def corpus_waves(limit: int) -> list[np.ndarray]:
    with tempfile.TemporaryDirectory(prefix="interbias-tp-") as tmp:
        manifest, _ = build(SyntheticSpec.from_options(dict(TINY)), Path(tmp))
        utts = sorted(manifest, key=lambda u: u.id)[:limit]
        return [audio.load(manifest.resolve(u)).samples for u in utts]


def measure(
    labels: list[str], runtimes: list[str], threads: list[int], waves: list[np.ndarray], reps: int
) -> list[list[Any]]:
    seconds = sum(w.size for w in waves) / 16000
    configs: list[tuple[str, str, int, Any]] = []
    for label in labels:
        # an encoder without the onnxruntime runtime is measured eager only
        offered = load_encoder(label, options={"runtime": "eager"}).onnx_spec() is not None
        for runtime in runtimes if offered else ["eager"]:
            for n in threads:
                os.environ["INTERBIAS_THREADS"] = str(n)  # onnxruntime sessions take it at load
                configs.append((label, runtime, n, load_encoder(label, options={"runtime": runtime})))
    walls: dict[int, list[float]] = {i: [] for i in range(len(configs))}
    cpus: dict[int, list[float]] = {i: [] for i in range(len(configs))}
    for rep in range(reps + 1):
        for i, (_, _, n, enc) in enumerate(configs):
            torch.set_num_threads(n)
            t, c = time.perf_counter(), time.process_time()
            enc.embed(waves)
            if rep:  # the first round warms up
                walls[i].append(time.perf_counter() - t)
                cpus[i].append(time.process_time() - c)
    rows = []
    for i, (label, runtime, n, enc) in enumerate(configs):
        wall, cpu = statistics.median(walls[i]), statistics.median(cpus[i])
        ran = enc.runtime + (" (auto)" if runtime == "auto" else "")
        rows.append([label, ran, n, fmt_s(wall), f"{seconds / wall / n:.1f}×", f"{seconds / cpu:.1f}×"])
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--encoders", default="CAM++,GE2E,mfcc-stats")
    ap.add_argument("--runtimes", default="eager,onnxruntime,auto")
    ap.add_argument("--threads", default="1", help="intra-op thread counts per process, e.g. 1,2")
    ap.add_argument("--utterances", type=int, default=30)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="10 utterances, 1 repetition")
    args = ap.parse_args(argv)
    if args.quick:
        args.utterances, args.reps = 10, 1
    labels = [e for e in args.encoders.split(",") if e]
    for label in labels:
        ENCODERS.get(label)
    waves = corpus_waves(args.utterances)
    seconds = sum(w.size for w in waves) / 16000
    runtimes = [r for r in args.runtimes.split(",") if r]
    threads = [int(n) for n in args.threads.split(",") if n]
    rows = measure(labels, runtimes, threads, waves, args.reps)
    print(f"machine: {machine()}\n")
    title = (
        f"Embedding throughput: {len(waves)} embedded-corpus utterances ({seconds:.0f} s of audio), "
        f"one at a time, median of {args.reps} interleaved repetitions"
    )
    headers = ["encoder", "runtime", "threads", "wall", "× real time per core", "× real time per CPU second"]
    print(table(title, headers, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
