"""The driver that feeds a device, as it was and as it is now, side by side in one run, on the
work of ``interbias run E14 --corpus synthetic`` (every (utterance, chain) item the run embeds,
11,296 waveforms, with its lengths from the manifest, in the run's task order; ``run_plan.py``).

Each driver runs the real embedding stage (``Embedder.run``: cache lookups, results taken in,
vectors written into a fresh SQLite cache) over the real CUDA driver (``tasks.drive``: gathering,
length sorting, CAM++'s frame buckets, calls) with CAM++'s batching and its batch buffer
(``masking.padded_waves``), but the network replaced by a stand-in of negligible cost and
preparation by views of one signal, so what is timed is the driver. No device here: the CUDA
path runs on this CPU (as the tests pretend), without page-locked memory.

- ``at the issue``: the first flush after 1,024 waveforms; each waveform copied into
  page-locked memory when prepared, then again into the batch buffer; the cache written on the
  driving thread;
- ``before change``: the first flush after 256 waveforms, one copy, the cache written on
  the driving thread;
- ``now``: the first batch as soon as it is full, then the first flush after 256; one copy; the
  cache written by a writer thread (``embedding/writer.py``).

Columns, in CPU seconds of the driving thread (``time.thread_time``: on a machine shared with
other work, wall seconds measure the queue), median of ``--reps`` after an untimed warm-up
pass: *CPU s*, the stage less preparation and the stand-in network; *cache*, of which in
writing the cache or handing batches to the writer thread and joining it; *waves*, waveforms
prepared before the first batch; *1st batch*, those at ``--prep-ms`` of preparation each
(bench_prepare.py's E14 figure) plus the driver's own CPU seconds until then; *copies*, per
waveform, counted: one into the batch buffer, plus one for each waveform that reached the
encoder in other memory than it was prepared in. The vectors of all three are checked equal
byte for byte.

    python benchmarks/bench_driver.py [--reps 3] [--prep-ms 4.43] [--quick]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from _common import machine, table
from run_plan import run_plan

from interbias.embedding import tasks as T
from interbias.embedding.cache import EmbeddingCache
from interbias.embedding.executors import EmbedContext, EmbedResult, EmbedTask, Executor
from interbias.embedding.stage import Embedder
from interbias.embedding.writer import CacheWriter, Measures, Rows
from interbias.encoders import Encoder, load_encoder
from interbias.encoders.masking import padded_waves

#: Preparation CPU ms per E14 waveform (bench_prepare.py, docs/guide/speed.md).
PREP_MS = 4.43
#: The first flush of the driver at the issue (its GPU_BUFFER then).
ISSUE_FIRST = 1024


@dataclass
class Driver:
    name: str
    first_buffer: int
    early: bool
    pin_each: bool
    inline_writes: bool


DRIVERS = (
    Driver("at the issue", ISSUE_FIRST, False, True, True),
    Driver("before change", T.FIRST_BUFFER, False, False, True),
    Driver("now", T.FIRST_BUFFER, True, False, False),
)


@dataclass
class Clock:
    """What one pass counted (seconds: CPU of the driving thread)."""

    prep_s: float = 0.0
    network_s: float = 0.0
    prepared: int = 0
    first_at: int = 0
    first_s: float = 0.0
    started: float = 0.0
    waves: int = 0
    copies: int = 0
    vectors: dict[tuple[str, str], bytes] = field(default_factory=dict)


class InlineWriter:
    """The cache written on the driving thread, as before the writer thread; ``cpu_s``: CPU
    seconds of the driving thread in it."""

    def __init__(self, cache: EmbeddingCache) -> None:
        self.cache, self.write_s, self.wait_s, self.written, self.cpu_s = cache, 0.0, 0.0, 0, 0.0

    def __enter__(self) -> InlineWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def put(self, rows: Rows, measures: Measures | None = None) -> None:
        t, c = time.perf_counter(), time.thread_time()
        self.cache.put_many(rows)
        if measures:
            self.cache.put_quality(measures)
        self.written += len(rows)
        self.write_s += time.perf_counter() - t
        self.wait_s = self.write_s
        self.cpu_s += time.thread_time() - c


class TimedWriter(CacheWriter):
    """The writer thread, with the CPU seconds the driving thread spends handing over and joining."""

    cpu_s = 0.0

    def put(self, rows: Rows, measures: Measures | None = None) -> None:
        c = time.thread_time()
        super().put(rows, measures)
        self.cpu_s += time.thread_time() - c

    def close(self) -> None:
        c = time.thread_time()
        super().close()
        self.cpu_s += time.thread_time() - c


class InlineEmbedder(Embedder):
    def writer(self) -> Any:
        self.last = InlineWriter(self.cache)
        return self.last


class ThreadEmbedder(Embedder):
    def writer(self) -> Any:
        self.last = TimedWriter(self.cache)
        return self.last


class Feeder(Executor):
    """The driver under test over views of one signal (the prepared waveforms)."""

    name = "bench"

    def __init__(self, driver: Driver, lengths: dict[tuple[str, str], int], signal: np.ndarray, clock: Clock) -> None:
        super().__init__(device="cuda")
        self.driver, self.lengths, self.signal, self.clock = driver, lengths, signal, clock

    def loaded(self, tasks: Sequence[EmbedTask]) -> Iterator[T.Loaded]:
        c = self.clock
        for n, task in enumerate(tasks):
            t = time.thread_time()
            ready = []
            for chain, fps in task.chains:
                start = (n * 7919) % 997
                wave = self.signal[start : start + self.lengths[(task.uid, chain.fingerprint)]]
                if self.driver.pin_each:  # the page-locked copy each waveform got when prepared
                    wave = wave.copy()
                ready.append(T.Prepared(task.uid, chain.fingerprint, chain.key(task.exclude), wave, [], fps))
            c.prepared += len(ready)
            c.prep_s += time.thread_time() - t
            yield ready, []

    def embed(
        self, ctx: EmbedContext, encoders: Sequence[Encoder], tasks: Sequence[EmbedTask]
    ) -> Iterator[EmbedResult]:
        d = self.driver
        return T.drive(encoders, self.loaded(tasks), "cuda", self.stats, first_buffer=d.first_buffer, early=d.early)


def stand_in(enc: Encoder, clock: Clock, signal: np.ndarray) -> None:
    """``enc``'s network replaced: the batch buffer is filled as CAM++ fills it (one copy per
    waveform), then each row's vector is its first 192 samples (negligible cost; timed apart).
    A waveform that arrives outside ``signal`` (where it was prepared) was copied on the way."""
    lo, hi = signal.ctypes.data, signal.ctypes.data + signal.nbytes

    def batch(waves: list[np.ndarray]) -> list[np.ndarray]:
        if not clock.first_at:
            clock.first_at, clock.first_s = clock.prepared, time.thread_time() - clock.started - clock.prep_s
        clock.copies += sum(not lo <= w.ctypes.data < hi for w in waves)
        x, _ = padded_waves(waves, "cpu")
        clock.waves += len(waves)
        clock.copies += len(waves)
        t = time.thread_time()
        out = [np.abs(row[:192]) + 1e-3 for row in x.numpy()]
        clock.network_s += time.thread_time() - t
        return out

    enc._embed_batch = batch  # type: ignore[method-assign]


def one_pass(
    plan: Any, driver: Driver, items: Any, lengths: Any, shas: Any, signal: np.ndarray
) -> tuple[float, Clock, float]:
    """(CPU seconds of the driving thread, what was counted, of which in cache writes) of one pass."""
    clock = Clock()
    enc = load_encoder("CAM++", device="cpu", options={"batch": "always"})
    stand_in(enc, clock, signal)
    with tempfile.TemporaryDirectory(prefix="interbias-bd-") as tmp:
        cache = EmbeddingCache(Path(tmp) / "embeddings.sqlite")
        cls = InlineEmbedder if driver.inline_writes else ThreadEmbedder
        emb = cls(plan.manifest, [enc], cache, plan.exp.frontend, exclude=plan.exclude, known_sha=shas)
        clock.started = time.thread_time()
        emb.run(items, Feeder(driver, lengths, signal, clock))
        cpu = time.thread_time() - clock.started
        n = cache.count()
        cache.close()
    if n != clock.prepared or emb.n_stored != n:
        raise SystemExit(f"bench_driver: {driver.name}: {n} vectors in the cache, {clock.prepared} prepared")
    clock.vectors = {(u, c): v.tobytes() for (u, c, _), v in emb.vectors.items()}
    return cpu - clock.prep_s - clock.network_s, clock, emb.last.cpu_s


def workload(quick: bool) -> tuple[Any, dict, dict, dict, np.ndarray]:
    plan = run_plan("E14", "synthetic")
    pairs = sorted(zip(plan.items, plan.lengths(), strict=True), key=lambda p: (p[0][0], p[0][1].fingerprint))
    if quick:  # the first 250 utterances
        keep = set(itertools.islice(dict.fromkeys(u for (u, _), _ in pairs), 250))
        pairs = [p for p in pairs if p[0][0] in keep]
    items: dict[str, tuple[Any, set[str]]] = {}
    for (uid, chain), _ in pairs:
        items.setdefault(chain.fingerprint, (chain, set()))[1].add(uid)
    lengths = {(uid, chain.fingerprint): max(n, 1600) for (uid, chain), n in pairs}
    shas = {uid: f"{i:064x}" for i, uid in enumerate(sorted({u for (u, _), _ in pairs}))}
    t = np.arange(max(lengths.values()) + 1000, dtype=np.float32)
    signal = (0.1 * np.sin(t * 0.05) + 0.05 * np.sin(t * 0.0131) + 0.2).astype(np.float32)
    return plan, items, lengths, shas, signal


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--prep-ms", type=float, default=PREP_MS)
    ap.add_argument("--quick", action="store_true", help="E14's first 250 utterances, one repetition")
    args = ap.parse_args(argv)
    reps = 1 if args.quick else args.reps
    plan, items, lengths, shas, signal = workload(args.quick)
    seconds: dict[str, list[float]] = {d.name: [] for d in DRIVERS}
    on_driver: dict[str, list[float]] = {d.name: [] for d in DRIVERS}
    clocks: dict[str, Clock] = {}
    one_pass(plan, DRIVERS[-1], items, lengths, shas, signal)  # warm-up: caches of chains, imports
    for rep in range(reps):  # interleaved, each repetition in another order: load hits them alike
        for d in DRIVERS[rep % len(DRIVERS) :] + DRIVERS[: rep % len(DRIVERS)]:
            s, clock, waited = one_pass(plan, d, items, lengths, shas, signal)
            seconds[d.name].append(s)
            on_driver[d.name].append(waited)
            clocks[d.name] = clock
    ref = clocks[DRIVERS[0].name].vectors
    if any(c.vectors != ref for c in clocks.values()):
        print("bench_driver: the drivers' vectors differ", file=sys.stderr)
        return 1
    rows = []
    base = statistics.median(seconds[DRIVERS[0].name])
    for d in DRIVERS:
        c, s = clocks[d.name], statistics.median(seconds[d.name])
        first = c.first_at * args.prep_ms / 1000 + c.first_s
        rows.append(
            [
                d.name,
                f"{s:.2f}",
                f"{s / base:.2f}",
                f"{statistics.median(on_driver[d.name]):.2f}",
                f"{c.first_at:,}",
                f"{first:.2f} s",
                f"{c.copies / max(c.waves, 1):.2f}",
            ]
        )
    n = len(lengths)
    audio = sum(lengths.values()) / 16000
    title = (
        f"Driver of E14 --corpus synthetic{' (quick: 250 utterances)' if args.quick else ''}: {n:,} waveforms, "
        f"{audio:,.0f} s of audio, CAM++'s batching, a stand-in network, median of {reps}"
    )
    headers = ["driver", "CPU s", "× issue", "cache", "waves", "1st batch", "copies"]
    print(f"machine: {machine()}\n")
    print(table(title, headers, rows))
    print(
        "CPU s: the driving thread's CPU seconds less preparation and the stand-in network;\n"
        "cache: of which writing the cache or handing it batches; waves: waveforms prepared\n"
        f"before the first batch; 1st batch: those at {args.prep_ms} ms of preparation each plus\n"
        "the driver's CPU until then; copies: per waveform on its way to the batch buffer.\n"
        "The vectors of the three are equal byte for byte."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
