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

Jobs (``--jobs``, default 1 and the machine's cores): the same utterances through the local executor as a run embeds them
(decoding included), in this process (1) or in N worker processes of one thread each. Aggregate
× real time = audio seconds / wall seconds, with the workers' start-up (spawn, imports, encoder
loading) counted; "after start-up" counts from the first result on.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch
from _common import fmt_s, machine, table

from interbias.audio import frontend as audio
from interbias.corpora.manifest import Manifest
from interbias.corpora.synthetic import SyntheticSpec, build
from interbias.embedding.executors import EmbedContext, EmbedTask, LocalExecutor
from interbias.encoders import ENCODERS, Encoder, load_encoder, load_encoders
from interbias.operators import Chain

TINY = {"accents": ["us", "wi"], "age_bands": ["adult"], "voices_per_cell": 3, "styles": ["neutral"], "n_sentences": 5}


def corpus_waves(limit: int) -> list[np.ndarray]:
    with tempfile.TemporaryDirectory(prefix="interbias-tp-") as tmp:
        manifest, _ = build(SyntheticSpec.from_options(dict(TINY)), Path(tmp))
        utts = sorted(manifest, key=lambda u: u.id)[:limit]
        return [audio.load(manifest.resolve(u)).samples for u in utts]


def run_jobs(ctx: EmbedContext, encoders: list[Encoder], tasks: list[EmbedTask], jobs: int) -> tuple[float, float]:
    """(wall seconds, seconds until the first result) of embedding ``tasks`` with ``jobs`` processes."""
    t = time.perf_counter()
    first = 0.0
    for _ in LocalExecutor(jobs=jobs).embed(ctx, encoders, tasks):
        first = first or time.perf_counter() - t
    return time.perf_counter() - t, first


@contextmanager
def threads_env(n: int) -> Iterator[None]:
    """``INTERBIAS_THREADS=n`` while the block runs, then as it was (callers in a test process
    must not leak a thread count into later runs)."""
    before = os.environ.get("INTERBIAS_THREADS")
    os.environ["INTERBIAS_THREADS"] = str(n)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("INTERBIAS_THREADS", None)
        else:
            os.environ["INTERBIAS_THREADS"] = before


def measure_jobs(labels: list[str], jobs: list[int], n_tasks: int) -> list[list[Any]]:
    """Rows of the jobs table: each encoder (runtime auto) alone, every job count, one after
    another, on ``n_tasks`` utterances (the tiny corpus's, cycled: start-up is amortised as in a run)."""
    rows = []
    with threads_env(1), tempfile.TemporaryDirectory(prefix="interbias-tj-") as tmp:
        built, _ = build(SyntheticSpec.from_options(dict(TINY)), Path(tmp))
        ordered = sorted(built, key=lambda u: u.id)
        utts = [ordered[i % len(ordered)] for i in range(n_tasks)]
        manifest = Manifest(built.name, built.root, built.utterances)
        seconds = sum(audio.load(manifest.resolve(u)).samples.size for u in utts) / 16000
        ctx = EmbedContext(audio.FrontEnd(), manifest, Path(tmp))
        for label in labels:
            encoders = load_encoders([label], "cpu")
            fps = (encoders[0].fingerprint,)
            tasks = [EmbedTask(u.id, u.sha256 or u.id, frozenset(), ((Chain(), fps),)) for u in utts]
            base = 0.0
            for n in jobs:
                wall, first = run_jobs(ctx, encoders, tasks, n)
                base = base or wall
                share = (len(tasks) - min(len(tasks), 8)) / len(tasks)  # audio after the first chunk, roughly
                after = f"{seconds * share / (wall - first):.1f}×" if n > 1 and wall > first else "—"
                rows.append(
                    [label, encoders[0].runtime, n, fmt_s(wall), f"{seconds / wall:.1f}×", after, f"{base / wall:.2f}×"]
                )
    return rows


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
                with threads_env(n):  # onnxruntime sessions take it at load
                    configs.append((label, runtime, n, load_encoder(label, options={"runtime": runtime})))
    walls: dict[int, list[float]] = {i: [] for i in range(len(configs))}
    cpus: dict[int, list[float]] = {i: [] for i in range(len(configs))}
    torch_before = torch.get_num_threads()
    try:
        for rep in range(reps + 1):
            for i, (_, _, n, enc) in enumerate(configs):
                torch.set_num_threads(n)
                t, c = time.perf_counter(), time.process_time()
                enc.embed(waves)
                if rep:  # the first round warms up
                    walls[i].append(time.perf_counter() - t)
                    cpus[i].append(time.process_time() - c)
    finally:
        torch.set_num_threads(torch_before)  # a test process goes on with its own count
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
    cores = os.cpu_count() or 1
    ap.add_argument(
        "--jobs",
        default="1" if cores == 1 else f"1,{cores}",
        help="worker-process counts to compare (default 1 and the cores; empty: no jobs table)",
    )
    ap.add_argument("--job-utterances", type=int, default=240, help="utterances of the jobs table (cycled)")
    ap.add_argument("--utterances", type=int, default=30)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="10 utterances, 1 repetition")
    args = ap.parse_args(argv)
    if args.quick:
        args.utterances, args.reps, args.job_utterances = 10, 1, 48
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
    jobs = [int(n) for n in args.jobs.split(",") if n]
    if jobs:
        rows = measure_jobs(labels, jobs, args.job_utterances)
        title = f"Embedding with worker processes (--jobs): {args.job_utterances} utterances, one thread per process"
        headers = ["encoder", "runtime", "jobs", "wall", "aggregate × real time", "after start-up", "vs first row"]
        print("\n" + table(title, headers, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
