"""Worker processes for the local executor (``--jobs N``): units of work mapped over a process
pool, results handed back in submission order, a crashed worker's units retried.

- **spawn** processes (no forked torch or onnxruntime state), each set up once by an
  ``initializer`` (the local executor loads the encoders there);
- at most ``in_flight`` units submitted at a time, results yielded in unit order, so the caller
  commits them in the same order as one process would;
- a worker that dies (killed, ``os._exit``, out of memory) breaks the pool: every unit that was
  submitted and not yet returned goes back in the queue and the rest runs on a fresh pool; a unit
  caught in more than ``retries`` broken pools ends in :class:`interbias.utils.errors.ExecutorError`
  naming it. A unit is either returned or named in that error, never dropped.

Nothing here touches the cache or the run directory: the caller (on the driver) writes.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from interbias.utils.errors import ExecutorError

#: Broken pools a unit may be caught in before the run stops.
RETRIES = 2

U = TypeVar("U")
R = TypeVar("R")


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity where the OS tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


#: Most worker processes per usable core: each holds its own copy of the encoders (hundreds of MB),
#: and more than two per core only wait for the cores.
JOBS_PER_CORE = 2


def max_jobs() -> int:
    """The most worker processes ``--jobs`` starts: :data:`JOBS_PER_CORE` per usable core."""
    return JOBS_PER_CORE * usable_cores()


def jobs_note(asked: int | None) -> str | None:
    """The note a ``--jobs`` above :func:`max_jobs` gets (``None`` when within it)."""
    if asked is None or asked <= max_jobs():
        return None
    return (
        f"note: --jobs {asked:,} is more than {JOBS_PER_CORE} per usable core ({usable_cores()} here): "
        f"using at most {max_jobs()} worker(s), each with its own copy of the encoders"
    )


@dataclass
class PoolSpec(Generic[U, R]):
    """How to run units: ``fn(unit)`` in ``jobs`` processes set up by ``initializer(*initargs)``;
    ``name(unit)`` says what a unit holds in an error message."""

    fn: Callable[[U], R]
    jobs: int
    initializer: Callable[..., None]
    initargs: tuple[Any, ...] = ()
    in_flight: int = 0
    retries: int = RETRIES
    name: Callable[[U], str] = str
    #: Fresh pools started after a crash (for the caller's record).
    restarts: int = field(default=0, init=False)


#: Seconds between a worker's checks that its driver is still alive.
WATCH_S = 1.0


def watch_driver(driver: int, initializer: Callable[..., None], *initargs: Any) -> None:
    """A worker's first act: a daemon thread that ends the worker once its driver (process
    ``driver``) is gone — a driver killed with SIGKILL cannot shut its pool down, and orphaned
    workers would hold the run's stdout open and hundreds of MB each — then ``initializer``."""
    import threading

    def watch() -> None:
        while os.getppid() == driver:
            time.sleep(WATCH_S)
        os._exit(1)

    threading.Thread(target=watch, name="driver-watch", daemon=True).start()
    initializer(*initargs)


def ordered_map(spec: PoolSpec[U, R], units: Sequence[U]) -> Iterator[R]:
    """``map(spec.fn, units)`` in worker processes, in order (see the module doc)."""
    queue = deque(range(len(units)))
    caught = [0] * len(units)
    done: dict[int, R] = {}
    head = 0
    while head < len(units):
        lost: list[int] = []
        for _ in pool_round(spec, units, queue, done, lost):
            while head in done:
                yield done.pop(head)
                head += 1
        if not lost:
            continue
        for i in lost:
            caught[i] += 1
        over = [i for i in lost if caught[i] > spec.retries]
        if over:
            names = ", ".join(spec.name(units[i]) for i in over)
            raise ExecutorError(
                f"a worker process died {caught[over[0]]} times while embedding {names} "
                "(none of their embeddings was kept; rerun with --jobs 1 to see the failure in this process)"
            )
        queue.extendleft(sorted(lost, reverse=True))
        spec.restarts += 1


def pool_round(
    spec: PoolSpec[U, R],
    units: Sequence[U],
    queue: deque[int],
    done: dict[int, R],
    lost: list[int],
) -> Iterator[None]:
    """Run queued units on one fresh pool until the queue is empty or the pool breaks. Yields
    whenever results arrived in ``done``; units lost to a broken pool are put in ``lost``.
    Units are submitted in queue order while fewer than ``in_flight`` are running or waiting in
    ``done`` for an earlier one, and always when the next queued unit is the one the caller
    needs next (earlier than everything running or done)."""
    limit = spec.in_flight or 2 * spec.jobs
    ctx = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(
        spec.jobs, mp_context=ctx, initializer=watch_driver, initargs=(os.getpid(), spec.initializer, *spec.initargs)
    )
    running: dict[Future[R], int] = {}
    try:
        while queue or running:
            while queue and (len(running) + len(done) < limit or queue[0] < min([*running.values(), *done])):
                i = queue.popleft()
                running[pool.submit(spec.fn, units[i])] = i
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for fut in finished:
                i = running.pop(fut)
                try:
                    done[i] = fut.result()
                except BrokenProcessPool:
                    lost.append(i)
            if lost:
                lost.extend(running.values())
                lost.sort()
                return
            yield
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
