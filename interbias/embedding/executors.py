"""Executors: who computes the missing embeddings of a run, here or on a Ray cluster.

- ``local`` (:mod:`interbias.embedding.local`): this process, or worker processes on CPU;
- ``ray`` (:mod:`interbias.embedding.ray`): shards of tasks on Ray actors.

The unit of work, the base class and the in-process embedding are in
:mod:`interbias.embedding.tasks`; this module picks an executor by name (:func:`make_executor`)
and re-exports the names callers use.
"""

from __future__ import annotations

from interbias.embedding.local import (
    AUTO_JOBS_MIN_TASKS,
    JOB_CHUNK,
    ChunkResult,
    LocalExecutor,
    WorkerSetup,
    check_worker,
    run_chunk,
    start_worker,
)
from interbias.embedding.ray import RAY_SHARD, RayExecutor, RayWorker, import_ray
from interbias.embedding.tasks import (
    EXECUTORS,
    GPU_BATCH,
    GPU_BUFFER,
    PREFETCH,
    EmbedContext,
    EmbedResult,
    EmbedTask,
    ExecStats,
    Executor,
    Prepared,
    embed_batch,
    embed_tasks,
    length_batches,
    pin,
    prefetched,
    prepare,
    register,
    shards,
)

__all__ = [
    "AUTO_JOBS_MIN_TASKS",
    "EXECUTORS",
    "GPU_BATCH",
    "GPU_BUFFER",
    "JOB_CHUNK",
    "PREFETCH",
    "RAY_SHARD",
    "ChunkResult",
    "EmbedContext",
    "EmbedResult",
    "EmbedTask",
    "ExecStats",
    "Executor",
    "LocalExecutor",
    "Prepared",
    "RayExecutor",
    "RayWorker",
    "WorkerSetup",
    "check_worker",
    "embed_batch",
    "embed_tasks",
    "import_ray",
    "length_batches",
    "make_executor",
    "pin",
    "prefetched",
    "prepare",
    "register",
    "run_chunk",
    "shards",
    "start_worker",
]


def make_executor(name: str, *, device: str = "cpu", address: str | None = None, jobs: int | None = None) -> Executor:
    """The executor registered as ``name`` (``local``, ``ray``); ``jobs`` (worker processes) is for ``local`` only."""
    return EXECUTORS.get(name)(device=device, address=address, jobs=jobs)
