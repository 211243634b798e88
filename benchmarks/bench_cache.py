"""The embedding cache at scale: SQLite insert and lookup throughput and file size as it grows.

One cache file (:class:`interbias.embedding.cache.EmbeddingCache`) is filled in steps with
192-dimensional unit float32 vectors under realistic keys (a sha256 per utterance, a chain key,
an encoder fingerprint, the realised-operations record), in batches of the embedding stage's
``CACHE_BATCH``; after each step, the rate of that step's inserts, the rate of looking up
20,000 random stored keys (cold: a fresh connection), and bytes per vector on disk. Then the
writers question: ``W`` processes writing disjoint keys into the one file at once (WAL, one
writer at a time by SQLite's lock) against one process writing them all, which is how a Ray run
writes (vectors return to the driver, which alone writes).

Usage: ``python benchmarks/bench_cache.py [--quick] [--max N] [--workdir DIR]`` (refuses to start
without ~1.1 kB × N free disk; deletes its files at the end).
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing as mp
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import machine, table  # noqa: E402

from interbias.embedding.cache import EmbeddingCache  # noqa: E402
from interbias.embedding.stage import CACHE_BATCH  # noqa: E402

DIM = 192
BYTES_PER_VECTOR = 1100  # measured: ~1,030 B on disk per 192-d vector with its record
RECORD = [{"op": "noise", "kind": "gaussian", "snr_db": 15.0, "achieved_snr_db": 15.02}]
ENCODER = hashlib.sha256(b"bench-encoder").hexdigest()[:16]
CHAINS = [hashlib.sha256(f"chain{i}".encode()).hexdigest()[:16] + "@fe0123abcd" for i in range(7)]


def key(i: int) -> tuple[str, str, str]:
    """The i-th key: utterance i // 7 under chain i % 7."""
    return hashlib.sha256(f"utt{i // 7}".encode()).hexdigest(), CHAINS[i % 7], ENCODER


def vectors(n: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal((n, DIM))
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def fill(path: Path, lo: int, hi: int) -> tuple[float, float]:
    """Insert keys lo..hi-1 in CACHE_BATCH transactions; (wall, CPU) seconds."""
    db = EmbeddingCache(path)
    pool = vectors(4096, lo)
    t, c = time.perf_counter(), time.process_time()
    for a in range(lo, hi, CACHE_BATCH):
        db.put_many((key(i), pool[i % len(pool)], RECORD) for i in range(a, min(hi, a + CACHE_BATCH)))
    seconds = time.perf_counter() - t, time.process_time() - c
    db.close()
    return seconds


def lookup(path: Path, n_stored: int, n: int = 20_000) -> tuple[float, float]:
    """(wall, CPU) seconds to get ``n`` random stored keys through a fresh connection."""
    picks = np.random.default_rng(n_stored).choice(n_stored, size=min(n, n_stored), replace=False)
    keys = [key(int(i)) for i in picks]
    db = EmbeddingCache(path)
    t, c = time.perf_counter(), time.process_time()
    got = db.get_many(keys, dims={ENCODER: DIM})
    seconds = time.perf_counter() - t, time.process_time() - c
    db.close()
    assert len(got) == len(keys), "stored vectors missing"
    return seconds


def size_of(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def growth(folder: Path, steps: list[int]) -> str:
    path = folder / "grow" / "embeddings.sqlite"
    path.parent.mkdir(parents=True)
    rows, done = [], 0
    for n in steps:
        (ins, ins_cpu), (look, look_cpu) = fill(path, done, n), lookup(path, n)
        m = min(n, 20_000)
        rows.append(
            [
                f"{n:,}",
                f"{(n - done) / ins:,.0f}/s ({(n - done) / ins_cpu:,.0f})",
                f"{m / look:,.0f}/s ({m / look_cpu:,.0f})",
                f"{size_of(path) / n:,.0f}",
            ]
        )
        print(f"  {n:,} vectors: insert {(n - done) / ins:,.0f}/s", file=sys.stderr, flush=True)
        done = n
    return table(
        f"Embedding cache growth: one SQLite file, {DIM}-d float32 vectors, batches of {CACHE_BATCH} ({machine()})",
        [
            "vectors stored",
            "insert rate, this step (per CPU s)",
            "lookup rate, 20k random keys (per CPU s)",
            "bytes/vector on disk",
        ],
        rows,
    )


def _writer(args: tuple[Path, int, int]) -> float:
    return fill(*args)[0]


def writers(folder: Path, n: int, counts: list[int]) -> str:
    rows = []
    for w in counts:
        path = folder / f"writers{w}" / "embeddings.sqlite"
        path.parent.mkdir(parents=True)
        EmbeddingCache(path).close()  # the schema exists before the writers start
        parts = [(path, n * i // w, n * (i + 1) // w) for i in range(w)]
        t = time.perf_counter()
        if w == 1:
            _writer(parts[0])
        else:
            with mp.get_context("spawn").Pool(w) as pool:
                pool.map(_writer, parts)
        seconds = time.perf_counter() - t
        rows.append([w, f"{n:,}", f"{seconds:.1f} s", f"{n / seconds:,.0f}/s"])
        shutil.rmtree(path.parent)
    return table(
        "Writers into one cache file at once (disjoint keys; WAL, SQLite's one-writer lock)",
        ["writer processes", "vectors", "wall", "vectors/s"],
        rows,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="grow to 200,000 vectors (default 2,000,000)")
    ap.add_argument("--max", type=int, help="grow to this many vectors")
    ap.add_argument("--workdir", type=Path, help="where the cache files go (default: a temporary folder)")
    args = ap.parse_args(argv)
    top = args.max or (200_000 if args.quick else 2_000_000)
    steps = sorted({s for s in (10_000, 100_000, 300_000, 1_000_000, 3_000_000, 10_000_000) if s < top} | {top})
    base = args.workdir or Path(tempfile.gettempdir())
    base.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="bench-cache-", dir=base))
    need = top * BYTES_PER_VECTOR * 1.2 / 1e9
    free = shutil.disk_usage(folder).free / 1e9
    print(f"cache benchmark in {folder}: needs ~{need:.2f} GB disk and ~0.3 GB memory; {free:.1f} GB free")
    if need > 0.9 * free:
        shutil.rmtree(folder)
        raise SystemExit("bench_cache: not enough free disk: not started (pass --max or --workdir)")
    try:
        print(growth(folder, steps))
        print(writers(folder, min(top, 200_000), [1, 2, 4]))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
