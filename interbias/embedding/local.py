"""The ``local`` executor: this process, or worker processes (embedding on CPU, preparing on a device).

In this process :func:`interbias.embedding.tasks.embed_tasks` does the work. On a device
(CUDA) with ``jobs`` > 1, that many worker processes decode and degrade the audio and this
process drives the device (:mod:`interbias.embedding.feed`). On CPU with ``jobs`` > 1
chunks of tasks go to that many worker processes (:mod:`interbias.embedding.jobs`,
:func:`start_worker` and :func:`run_chunk` in each), each with the driver's intra-op thread count
(one by default: :func:`interbias.encoders.default_threads`) and its own copy of the encoders,
loaded once with the driver's runtimes and checked against the driver's fingerprints
(:func:`check_worker`); results come back in task order, as one process would give them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from interbias.embedding.feed import PREP_CHUNK, embed_fed, preparation_spec
from interbias.embedding.jobs import PoolSpec, max_jobs, ordered_map, usable_cores
from interbias.embedding.tasks import (
    EmbedContext,
    EmbedResult,
    EmbedTask,
    ExecStats,
    Executor,
    embed_tasks,
    register,
    shards,
)
from interbias.encoders import Encoder, default_threads
from interbias.utils import crashpoints
from interbias.utils.errors import EncoderError, RunError

#: Utterances per unit sent to a local worker process (``jobs`` > 1).
JOB_CHUNK = 8
#: Fewest utterances for which the local executor's automatic ``jobs`` starts worker
#: processes; fewer run in this process (starting a worker, importing torch and loading the
#: encoders, takes seconds: more than a small run's whole embedding).
AUTO_JOBS_MIN_TASKS = 256


@register("local")
class LocalExecutor(Executor):
    """This process, or ``jobs`` worker processes: embedding on CPU, preparing the audio for this
    process on a device (``None``: when there are at least :data:`AUTO_JOBS_MIN_TASKS`
    utterances to embed, the usable cores on CPU and all but one on a device; else this process)."""

    def __init__(self, *, device: str = "cpu", address: str | None = None, jobs: int | None = None) -> None:
        if address:
            raise RunError("--address is only used with --executor ray")
        if jobs is not None and jobs < 1:
            raise RunError(f"--jobs must be at least 1, got {jobs}")
        super().__init__(device=device, jobs=jobs)
        self.jobs_asked = jobs
        self.jobs = 1
        self.restarts = 0

    def resolve_jobs(self, n_tasks: int) -> int:
        """Processes to use for ``n_tasks`` utterances (1: this process)."""
        cpu = self.device == "cpu"
        if self.jobs_asked is None:
            wanted = (usable_cores() if cpu else usable_cores() - 1) if n_tasks >= AUTO_JOBS_MIN_TASKS else 1
        else:
            wanted = min(self.jobs_asked, max_jobs())  # the run's console said so (jobs_note)
        return max(1, min(wanted, -(-n_tasks // (JOB_CHUNK if cpu else PREP_CHUNK))))

    def embed(
        self, ctx: EmbedContext, encoders: Sequence[Encoder], tasks: Sequence[EmbedTask]
    ) -> Iterator[EmbedResult]:
        self.jobs = self.resolve_jobs(len(tasks))
        self.stats.workers = self.jobs
        if self.jobs == 1:
            return embed_tasks(ctx, encoders, tasks, self.device, self.stats)
        if self.device != "cpu":
            return self.prepare_in_workers(ctx, encoders, tasks)
        return self.embed_in_workers(ctx, encoders, tasks)

    def prepare_in_workers(
        self, ctx: EmbedContext, encoders: Sequence[Encoder], tasks: Sequence[EmbedTask]
    ) -> Iterator[EmbedResult]:
        spec = preparation_spec(ctx, self.jobs)
        try:
            yield from embed_fed(encoders, tasks, self.device, self.stats, spec)
        finally:
            self.restarts = spec.restarts

    def embed_in_workers(
        self, ctx: EmbedContext, encoders: Sequence[Encoder], tasks: Sequence[EmbedTask]
    ) -> Iterator[EmbedResult]:
        setup = WorkerSetup(
            ctx,
            [e.load_label for e in encoders],
            {e.load_label: {"runtime": e.runtime, **self.encoder_options} for e in encoders},
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
            **({"jobs_work": "prepare" if self.device != "cpu" else "prepare and embed"} if self.jobs > 1 else {}),
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
