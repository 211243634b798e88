"""Executors: who computes the missing embeddings of a run, here or on a Ray cluster.

The unit of work is an :class:`EmbedTask`: one utterance with every (operator chain, encoder)
pair the run still lacks for it, so each file is decoded once and each chain applied once for
all encoders. Executors turn tasks into :class:`EmbedResult` records (a vector or a counted
failure) and never touch the embedding cache: the embedding stage (:class:`interbias.embedding.stage.Embedder`, on the driver) is its only writer, so
the cache may sit on shared storage without concurrent SQLite writers.

- ``local``: in this process; the next utterances are decoded and degraded on a loader thread
  while the encoders run. On CPU each waveform is embedded alone (byte-identical whatever
  else is in flight); on CUDA waveforms are handed to the encoder in length-sorted batches
  from pinned host memory. With ``jobs`` > 1 (CPU only) chunks of tasks go to that many
  worker processes (:mod:`interbias.embedding.jobs`), each with the driver's intra-op thread count (one
  by default: :func:`interbias.encoders.default_threads`) and its own copy of
  the encoders, loaded once with the driver's runtimes and checked against the driver's
  fingerprints; results come back in task order, as one process would give them.
- ``ray``: shards of tasks go to Ray actors (one per ``threads`` CPUs, or per GPU), each
  holding the encoders; vectors come back to the driver. Actors use the driver's torch
  thread count, so their CPU embeddings equal a serial run's byte for byte.
"""

from __future__ import annotations

import os
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from interbias.audio import frontend as audio
from interbias.corpora.manifest import Manifest, Utterance
from interbias.embedding.jobs import PoolSpec, ordered_map, usable_cores
from interbias.encoders import Encoder, default_threads
from interbias.operators import Chain, OpContext
from interbias.operators.silence import check_chain_output
from interbias.utils import crashpoints
from interbias.utils.errors import AudioError, EncoderError, OperatorError, RunError, see_docs
from interbias.utils.registry import Registry

#: Utterances decoded ahead of the encoders by the loader thread.
PREFETCH = 4
#: Waveforms gathered before length-sorting them into CUDA batches.
GPU_BUFFER = 256
#: Waveforms per CUDA batch.
GPU_BATCH = 32
#: Utterances per Ray shard.
RAY_SHARD = 8
#: Utterances per unit sent to a local worker process (``jobs`` > 1).
JOB_CHUNK = 8
#: Fewest utterances for which the local executor's automatic ``jobs`` starts worker
#: processes; fewer run in this process (starting a worker, importing torch and loading the
#: encoders, takes seconds: more than a small run's whole embedding).
AUTO_JOBS_MIN_TASKS = 256

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class EmbedTask:
    """One utterance and, per chain, the fingerprints of the encoders still to run on it."""

    uid: str
    sha256: str
    exclude: frozenset[str]
    chains: tuple[tuple[Chain, tuple[str, ...]], ...]

    @property
    def n_items(self) -> int:
        return sum(len(encs) for _, encs in self.chains)


@dataclass(frozen=True)
class EmbedResult:
    """A vector, or a failure covering ``n_items`` (utterance, chain, encoder) items.

    ``encoder_fp`` is empty when the failure happened before any encoder (decoding, an
    operator); ``realised`` is what the chain did, when it ran."""

    uid: str
    chain_fp: str
    chain_key: str
    encoder_fp: str = ""
    vector: np.ndarray | None = None
    realised: list[dict[str, Any]] | None = None
    error: str | None = None
    n_items: int = 1


@dataclass
class EmbedContext:
    """What a worker needs besides its encoders (picklable, sent once per worker)."""

    frontend: audio.FrontEnd
    manifest: Manifest
    cache_dir: Path
    _by_id: dict[str, Utterance] | None = field(default=None, init=False, repr=False, compare=False)

    def utterance(self, uid: str) -> Utterance:
        if self._by_id is None:
            self._by_id = self.manifest.by_id()
        return self._by_id[uid]


@dataclass
class Prepared:
    """One degraded waveform of one utterance, waiting for its encoders."""

    uid: str
    chain_fp: str
    chain_key: str
    wave: np.ndarray
    realised: list[dict[str, Any]]
    encoders: tuple[str, ...]


@dataclass
class ExecStats:
    """Wall seconds inside ``Encoder.embed`` per encoder label, CPU seconds of the calling
    thread there (all of the forward pass when torch uses one thread), both summed over
    workers, and the forward passes run by remote workers (local ones are counted on the
    driver's encoders)."""

    forward_s: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    forward_cpu_s: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    remote_calls: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    workers: int = 1

    def merge(self, other: ExecStats) -> None:
        for k, v in other.forward_s.items():
            self.forward_s[k] += v
        for k, v in other.forward_cpu_s.items():
            self.forward_cpu_s[k] += v
        for k, n in other.remote_calls.items():
            self.remote_calls[k] += n


def prepare(ctx: EmbedContext, task: EmbedTask) -> tuple[list[Prepared], list[EmbedResult]]:
    """Decode the utterance once and apply each chain: waveforms, or counted failures."""
    u = ctx.utterance(task.uid)
    try:
        loaded = audio.load(ctx.manifest.resolve(u), ctx.frontend)
    except AudioError as exc:
        return [], [
            EmbedResult(task.uid, c.fingerprint, c.key(task.exclude), error=str(exc), n_items=len(encs))
            for c, encs in task.chains
        ]
    front = {"source_rate_hz": loaded.source_rate_hz, "channels": loaded.source_channels, "truncated": loaded.truncated}
    ready: list[Prepared] = []
    failed: list[EmbedResult] = []
    for chain, encs in task.chains:
        ckey = chain.key(task.exclude)
        try:
            wave, ops = chain.apply(
                loaded.samples,
                utterance_sha256=task.sha256,
                key=ckey,
                make_ctx=lambda rng, u=u: OpContext(
                    sample_rate_hz=loaded.sample_rate_hz,
                    utterance_id=u.id,
                    speaker=u.speaker,
                    rng=rng,
                    corpus=ctx.manifest,
                    exclude_speakers=task.exclude | {u.speaker},
                    frontend=ctx.frontend,
                    cache_dir=ctx.cache_dir,
                ),
            )
            if chain.effective:
                check_chain_output(loaded.samples, wave, loaded.sample_rate_hz)
        except OperatorError as exc:
            failed.append(EmbedResult(task.uid, chain.fingerprint, ckey, error=f"{task.uid}: {exc}", n_items=len(encs)))
            continue
        ready.append(Prepared(task.uid, chain.fingerprint, ckey, wave, [{"frontend": front}, *ops], encs))
    return ready, failed


def _embed_batch(enc: Encoder, items: Sequence[Prepared], stats: ExecStats) -> list[EmbedResult]:
    """Embed ``items`` in one call; if the call fails, each item alone (failures counted)."""
    fp = enc.fingerprint  # a hash: computed once per batch
    t, c = time.perf_counter(), time.thread_time()
    try:
        vecs = enc.embed([p.wave for p in items])
        stats.forward_s[enc.label] += time.perf_counter() - t
        stats.forward_cpu_s[enc.label] += time.thread_time() - c
        return [EmbedResult(p.uid, p.chain_fp, p.chain_key, fp, vecs[i], p.realised) for i, p in enumerate(items)]
    except Exception as exc:
        stats.forward_s[enc.label] += time.perf_counter() - t
        stats.forward_cpu_s[enc.label] += time.thread_time() - c
        if len(items) > 1:
            return [r for p in items for r in _embed_batch(enc, [p], stats)]
        p = items[0]
        msg = str(exc) if isinstance(exc, EncoderError) else f"{enc.label} failed ({type(exc).__name__}: {exc})"
        return [EmbedResult(p.uid, p.chain_fp, p.chain_key, fp, None, p.realised, f"{p.uid}: {msg}")]


def length_batches(items: Sequence[Prepared], size: int) -> list[list[Prepared]]:
    """Items sorted by waveform length (ties by utterance and chain) cut into batches of ``size``."""
    order = sorted(items, key=lambda p: (len(p.wave), p.uid, p.chain_key))
    return [order[i : i + size] for i in range(0, len(order), size)]


def pin(wave: np.ndarray, device: str) -> np.ndarray:
    """On CUDA, a copy of ``wave`` in page-locked host memory (fast, asynchronous copies to
    the GPU); on CPU the array itself."""
    if not device.startswith("cuda"):
        return wave
    import torch

    buf = torch.empty(len(wave), dtype=torch.float32, pin_memory=True)
    out = buf.numpy()
    out[:] = wave
    return out


def prefetched(fn: Callable[[T], R], items: Iterable[T], depth: int = PREFETCH) -> Iterator[R]:
    """``map(fn, items)`` in order, computed up to ``depth`` items ahead on one thread."""
    it = iter(items)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="interbias-load") as pool:
        queue = deque(pool.submit(fn, x) for x in islice(it, depth))
        while queue:
            head = queue.popleft()
            for x in islice(it, 1):
                queue.append(pool.submit(fn, x))
            yield head.result()


def embed_tasks(
    ctx: EmbedContext, encoders: Sequence[Encoder], tasks: Iterable[EmbedTask], device: str, stats: ExecStats
) -> Iterator[EmbedResult]:
    """Results for ``tasks`` in this process (see the module doc for CPU and CUDA)."""
    by_fp = {e.fingerprint: e for e in encoders}
    cuda = device.startswith("cuda")
    buffer: list[Prepared] = []

    def flush() -> Iterator[EmbedResult]:
        for fp, enc in by_fp.items():
            mine = [p for p in buffer if fp in p.encoders]
            for batch in length_batches(mine, GPU_BATCH):
                yield from _embed_batch(enc, batch, stats)
        buffer.clear()

    def load(task: EmbedTask) -> tuple[list[Prepared], list[EmbedResult]]:
        ready, failed = prepare(ctx, task)
        for p in ready:
            p.wave = pin(p.wave, device)  # on the loader thread too
        return ready, failed

    for ready, failed in prefetched(load, tasks):
        yield from failed
        for p in ready:
            if cuda:
                buffer.append(p)
                continue
            for fp in p.encoders:
                yield from _embed_batch(by_fp[fp], [p], stats)
        if len(buffer) >= GPU_BUFFER:
            yield from flush()
    yield from flush()


class Executor:
    """Computes :class:`EmbedResult` records for tasks; ``stats`` holds forward times."""

    name = ""

    def __init__(self, *, device: str = "cpu", address: str | None = None, jobs: int | None = None) -> None:
        self.device = device
        self.address = address
        self.stats = ExecStats()
        if jobs is not None and self.name != "local":
            raise RunError("--jobs is only used with --executor local")

    def embed(
        self, ctx: EmbedContext, encoders: Sequence[Encoder], tasks: Sequence[EmbedTask]
    ) -> Iterator[EmbedResult]:
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "address": self.address, "workers": self.stats.workers}


EXECUTORS: Registry[type[Executor]] = Registry("executor", RunError)


def register(name: str) -> Callable[[type[Executor]], type[Executor]]:
    def deco(cls: type[Executor]) -> type[Executor]:
        cls.name = name
        return EXECUTORS.register(name)(cls)

    return deco


@register("local")
class LocalExecutor(Executor):
    """This process, or ``jobs`` worker processes on CPU (``None``: the usable cores when there
    are at least :data:`AUTO_JOBS_MIN_TASKS` utterances to embed, else this process)."""

    def __init__(self, *, device: str = "cpu", address: str | None = None, jobs: int | None = None) -> None:
        if address:
            raise RunError("--address is only used with --executor ray")
        if jobs is not None and jobs < 1:
            raise RunError(f"--jobs must be at least 1, got {jobs}")
        if jobs is not None and jobs > 1 and device != "cpu":
            raise RunError(f"--jobs {jobs}: worker processes embed on CPU; on {device} one process drives the GPU")
        super().__init__(device=device, jobs=jobs)
        self.jobs_asked = jobs
        self.jobs = 1
        self.restarts = 0

    def resolve_jobs(self, n_tasks: int) -> int:
        """Processes to use for ``n_tasks`` utterances (1: this process)."""
        if self.device != "cpu":
            return 1
        if self.jobs_asked is None:
            wanted = usable_cores() if n_tasks >= AUTO_JOBS_MIN_TASKS else 1
        else:
            wanted = self.jobs_asked
        return max(1, min(wanted, -(-n_tasks // JOB_CHUNK)))

    def embed(
        self, ctx: EmbedContext, encoders: Sequence[Encoder], tasks: Sequence[EmbedTask]
    ) -> Iterator[EmbedResult]:
        self.jobs = self.resolve_jobs(len(tasks))
        self.stats.workers = self.jobs
        if self.jobs == 1:
            return embed_tasks(ctx, encoders, tasks, self.device, self.stats)
        return self.embed_in_workers(ctx, encoders, tasks)

    def embed_in_workers(
        self, ctx: EmbedContext, encoders: Sequence[Encoder], tasks: Sequence[EmbedTask]
    ) -> Iterator[EmbedResult]:
        setup = WorkerSetup(
            ctx,
            [e.label for e in encoders],
            {e.label: {"runtime": e.runtime} for e in encoders},
            self.device,
            default_threads(),
        )
        spec: PoolSpec[list[EmbedTask], ChunkResult] = PoolSpec(
            run_chunk, self.jobs, start_worker, (setup,), name=lambda chunk: ", ".join(t.uid for t in chunk)
        )
        expected = {e.label: e.fingerprint for e in encoders}
        try:
            for out in ordered_map(spec, shards(tasks, JOB_CHUNK)):
                check_worker(out, expected)
                self.stats.merge(out.stats)
                yield from out.results
        finally:
            self.restarts = spec.restarts

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "jobs": self.jobs,
            "jobs_requested": self.jobs_asked if self.jobs_asked is not None else "auto",
            **({"threads_per_job": default_threads(), "worker_restarts": self.restarts} if self.jobs > 1 else {}),
        }


@dataclass
class WorkerSetup:
    """What a local worker process loads once: the context and the driver's encoders (labels
    and per-label options that pin the runtime the driver ended up with)."""

    ctx: EmbedContext
    labels: list[str]
    options: dict[str, dict[str, Any]]
    device: str
    threads: int


@dataclass
class ChunkResult:
    """A worker's results for one chunk, its forward times, its encoders' fingerprints (or why
    it has none) and its process id."""

    results: list[EmbedResult]
    stats: ExecStats
    encoders: dict[str, str]
    problem: str
    pid: int


#: This worker process's setup and encoders (set by :func:`start_worker`).
WORKER: dict[str, Any] = {}


def start_worker(setup: WorkerSetup) -> None:
    """Process initializer: the driver's intra-op thread count (torch, onnxruntime, OpenMP; 1
    unless ``$INTERBIAS_THREADS`` says otherwise, so CPU embeddings equal the driver's byte for
    byte), then the encoders (a failure is kept and reported with the first chunk)."""
    for var in ("INTERBIAS_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(setup.threads)
    import torch

    torch.set_num_threads(setup.threads)
    WORKER.update(setup=setup, encoders=[], problem="")
    try:
        from interbias.encoders import load_encoders

        WORKER["encoders"] = load_encoders(setup.labels, setup.device, setup.options)
    except Exception as exc:
        WORKER["problem"] = f"{type(exc).__name__}: {exc}"


def run_chunk(tasks: list[EmbedTask]) -> ChunkResult:
    """Embed one chunk in a worker process (see :func:`start_worker`)."""
    crashpoints.reached("worker-task")
    setup: WorkerSetup = WORKER["setup"]
    encoders: list[Encoder] = WORKER["encoders"]
    stats = ExecStats()
    if WORKER["problem"]:
        return ChunkResult([], stats, {}, WORKER["problem"], os.getpid())
    before = {e.label: e.forward_calls for e in encoders}
    out = list(embed_tasks(setup.ctx, encoders, tasks, setup.device, stats))
    for e in encoders:
        stats.remote_calls[e.label] = e.forward_calls - before[e.label]
    return ChunkResult(out, stats, {e.label: e.fingerprint for e in encoders}, "", os.getpid())


def check_worker(out: ChunkResult, expected: dict[str, str]) -> None:
    """A worker that could not load the driver's encoders, or loaded others, stops the run."""
    if out.problem:
        raise EncoderError(f"worker process {out.pid}: {out.problem}")
    if out.encoders != expected:
        raise EncoderError(f"worker process {out.pid} loaded encoders {out.encoders}, this process {expected}")


def import_ray() -> Any:
    """The ``ray`` module, or a :class:`RunError` saying why it is unavailable."""
    try:
        import ray
    except Exception as exc:
        raise RunError(
            f"--executor ray: unavailable: {type(exc).__name__}: {exc} (install with: pip install 'interbias[ray]'; "
            f"{see_docs('scaling')})"
        ) from None
    return ray


class RayWorker:
    """A Ray actor: loads the encoders once, then embeds shards of tasks."""

    def __init__(self, ctx: EmbedContext, labels: list[str], device: str, threads: int) -> None:
        self.ctx, self.device, self.problem = ctx, device, ""
        self.encoders: list[Encoder] = []
        try:
            from interbias.encoders import load_encoders

            self.encoders = load_encoders(labels, device)
        except Exception as exc:
            self.problem = f"{type(exc).__name__}: {exc}"
        import torch

        torch.set_num_threads(threads)

    def fingerprints(self) -> dict[str, Any]:
        import socket

        return {
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "problem": self.problem,
            "encoders": {e.label: e.fingerprint for e in self.encoders},
        }

    def run(self, tasks: list[EmbedTask]) -> tuple[list[EmbedResult], ExecStats]:
        stats = ExecStats()
        before = {e.label: e.forward_calls for e in self.encoders}
        out = list(embed_tasks(self.ctx, self.encoders, tasks, self.device, stats))
        for e in self.encoders:
            stats.remote_calls[e.label] = e.forward_calls - before[e.label]
        return out, stats


def shards(tasks: Sequence[EmbedTask], size: int) -> list[list[EmbedTask]]:
    return [list(tasks[i : i + size]) for i in range(0, len(tasks), size)]


@register("ray")
class RayExecutor(Executor):
    """Shards of tasks on Ray actors. ``address``: as ``ray.init`` takes it (``auto``,
    ``HOST:6379``, ``ray://HOST:10001``); none starts a local Ray instance on this machine
    (or joins the one this process already started)."""

    def __init__(self, *, device: str = "cpu", address: str | None = None, jobs: int | None = None) -> None:
        super().__init__(device=device, address=address, jobs=jobs)
        import_ray()  # unavailable is an error before any work

    def embed(
        self, ctx: EmbedContext, encoders: Sequence[Encoder], tasks: Sequence[EmbedTask]
    ) -> Iterator[EmbedResult]:
        ray = import_ray()
        import torch
        from ray.util import ActorPool

        started = False
        if not ray.is_initialized():
            ray.init(address=self.address, include_dashboard=False, log_to_driver=False)
            started = True
        threads = torch.get_num_threads()
        cuda = self.device.startswith("cuda")
        work = shards(tasks, RAY_SHARD)
        capacity = ray.cluster_resources().get("GPU" if cuda else "CPU", 0)
        n = max(1, min(len(work), int(capacity // (1 if cuda else threads))))
        env = {k: v for k, v in os.environ.items() if k.startswith("INTERBIAS_")}
        actor_cls = ray.remote(num_cpus=0 if cuda else threads, num_gpus=1 if cuda else 0)(RayWorker)
        ctx_ref = ray.put(ctx)
        actors = [
            actor_cls.options(runtime_env={"env_vars": env}).remote(
                ctx_ref, [e.label for e in encoders], self.device, threads
            )
            for _ in range(n)
        ]
        try:
            expected = {e.label: e.fingerprint for e in encoders}
            for info in ray.get([a.fingerprints.remote() for a in actors]):
                if info["problem"]:
                    raise EncoderError(f"ray worker on {info['host']}: {info['problem']}")
                if info["encoders"] != expected:
                    raise EncoderError(
                        f"ray worker on {info['host']} loaded encoders {info['encoders']}, the driver {expected}: "
                        "install the same interbias and checkpoints on every node"
                    )
            self.stats.workers = n
            pool = ActorPool(actors)
            for results, stats in pool.map_unordered(lambda a, shard: a.run.remote(shard), work):
                self.stats.merge(stats)
                yield from results
        except ray.exceptions.RayError as exc:
            raise RunError(f"ray: a worker failed ({type(exc).__name__}: {str(exc).strip().splitlines()[-1]})") from exc
        finally:
            for a in actors:
                ray.kill(a)
            if started:
                ray.shutdown()


def make_executor(name: str, *, device: str = "cpu", address: str | None = None, jobs: int | None = None) -> Executor:
    """The executor registered as ``name``; ``jobs`` (worker processes) is for ``local`` only."""
    return EXECUTORS.get(name)(device=device, address=address, jobs=jobs)
