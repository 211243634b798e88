"""Preparation in worker processes feeding the process that drives the device (``--jobs N`` on CUDA).

Decoding, resampling, voice-activity detection and operator chains
(:func:`interbias.embedding.tasks.prepare`) run in ``jobs`` worker processes
(:mod:`interbias.embedding.jobs`: spawned, one intra-op thread each, chunks of
:data:`PREP_CHUNK` utterances, results in task order, a killed worker's chunks retried or named
in one error). A feeder thread in the driving process takes their results in order, pins the
waveforms (:func:`interbias.embedding.tasks.pin`) and puts them on a bounded queue
(:data:`QUEUE_DEPTH` chunks); the driving thread embeds from it
(:func:`interbias.embedding.tasks.drive`). Workers load no encoder: the device is driven by
this process alone.

The waveforms are those :func:`~interbias.embedding.tasks.prepare` makes in this process and
arrive in the same order whatever ``jobs``, so the vectors are the same whatever ``jobs``
(tested on CPU). A preparation that raises something other than the counted audio and operator
failures stops the run with :class:`interbias.utils.errors.ExecutorError` naming the utterance.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from interbias.embedding import tasks as T
from interbias.embedding.jobs import PoolSpec, ordered_map
from interbias.encoders import Encoder, default_threads
from interbias.utils import crashpoints
from interbias.utils.errors import ExecutorError, InterbiasError

#: Utterances per unit sent to a preparation worker.
PREP_CHUNK = 4
#: Prepared chunks waiting for the driving thread (the bounded queue between feeder and driver).
QUEUE_DEPTH = 8
#: Seconds a blocked feeder waits before checking whether the driver stopped.
POLL_S = 0.2


@dataclass
class PrepSetup:
    """What a preparation worker holds: the context and its intra-op thread count."""

    ctx: T.EmbedContext
    threads: int = 1


#: This worker process's setup (set by :func:`start_preparer`).
PREPARER: dict[str, Any] = {}


def start_preparer(setup: PrepSetup) -> None:
    """Process initializer: the driver's intra-op thread count (operators that use torch or
    OpenMP compute as they would in the driver), then the context."""
    for var in ("INTERBIAS_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(setup.threads)
    import torch

    torch.set_num_threads(setup.threads)
    PREPARER["setup"] = setup


def prepare_chunk(chunk: list[T.EmbedTask]) -> list[T.Loaded]:
    """Prepare one chunk in a worker process (see the module doc for what a raise becomes)."""
    crashpoints.reached("prepare-task")
    ctx: T.EmbedContext = PREPARER["setup"].ctx
    out = []
    for task in chunk:
        try:
            out.append(T.prepare(ctx, task))
        except InterbiasError:
            raise
        except Exception as exc:
            raise ExecutorError(
                f"{task.uid}: preparing it failed in a worker process ({type(exc).__name__}: {exc}); "
                "rerun with --jobs 1 to see the failure in this process"
            ) from None
    return out


def prepared_in_workers(
    spec: PoolSpec[list[T.EmbedTask], list[T.Loaded]], tasks: Sequence[T.EmbedTask]
) -> Iterator[T.Loaded]:
    """Each task prepared by ``spec``'s worker processes, in task order."""
    for loaded in ordered_map(spec, T.shards(tasks, PREP_CHUNK)):
        yield from loaded


def preparation_spec(ctx: T.EmbedContext, jobs: int) -> PoolSpec[list[T.EmbedTask], list[T.Loaded]]:
    """``jobs`` preparation workers with the driver's thread count, at most ``2 × jobs`` chunks in flight."""
    return PoolSpec(
        prepare_chunk,
        jobs,
        start_preparer,
        (PrepSetup(ctx, default_threads()),),
        name=lambda chunk: ", ".join(t.uid for t in chunk),
    )


def fed(items: Iterable[T.Loaded], depth: int = QUEUE_DEPTH) -> Iterator[T.Loaded]:
    """``items`` taken by a feeder thread through a queue of
    ``depth``; an exception there is raised here, and closing this iterator stops the feeder
    (which closes ``items``)."""
    box: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(entry: tuple[str, Any]) -> bool:
        while not stop.is_set():
            try:
                box.put(entry, timeout=POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def feed() -> None:
        it = iter(items)
        try:
            for ready, failed in it:
                if not put(("item", (ready, failed))):
                    return
            put(("end", None))
        except BaseException as exc:  # handed to the driver, raised there
            put(("error", exc))
        finally:
            close = getattr(it, "close", None)
            if close is not None:
                close()

    thread = threading.Thread(target=feed, name="interbias-feed", daemon=True)
    thread.start()
    try:
        while True:
            match box.get():
                case ("end", _):
                    return
                case ("error", exc):
                    raise exc
                case (_, value):
                    yield value
    finally:
        stop.set()
        thread.join()


def embed_fed(
    encoders: Sequence[Encoder],
    tasks: Sequence[T.EmbedTask],
    device: str,
    stats: T.ExecStats,
    spec: PoolSpec[list[T.EmbedTask], list[T.Loaded]],
) -> Iterator[T.EmbedResult]:
    """Results for ``tasks``: prepared by ``spec``'s workers, embedded here on ``device``."""
    return T.drive(encoders, fed(prepared_in_workers(spec, tasks)), device, stats)
