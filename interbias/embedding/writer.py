"""The embedding cache's writer thread: the driver hands over batches of vectors and goes on.

:class:`CacheWriter` takes batches (:meth:`CacheWriter.put`) on a bounded queue
(:data:`WRITE_QUEUE` batches) and writes them, in the order given, on one thread
(``interbias-cache-writer``), each batch one transaction (:meth:`EmbeddingCache.put_many`,
then its quality measures), so the thread that drives the encoders never waits on the disk
unless the queue is full. It is a context manager: leaving the block, however (normally, by an
exception, by ``KeyboardInterrupt``), writes what is queued and joins the thread, so when
:meth:`Embedder.run <interbias.embedding.stage.Embedder.run>` returns every vector it computed
is committed.

A batch that fails to write is never lost silently: the first failure is kept with the count of
vectors not stored (the failing batch and every batch after it, which are not attempted), the
driver's next :meth:`CacheWriter.put` raises it, and so does leaving the block normally
(:class:`interbias.utils.errors.RunError`, the cache's own one-line message plus the count);
leaving by another exception adds it to that exception as a note. A process killed mid-write
loses at most the open transaction: SQLite rolls it back, so no half-written entry is ever read.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Mapping
from types import TracebackType
from typing import Any

import numpy as np

from interbias.embedding.cache import EmbeddingCache, Key
from interbias.utils.errors import RunError

#: Batches waiting for the writer thread before :meth:`CacheWriter.put` blocks (bounded memory).
WRITE_QUEUE = 16

#: One batch: (key, vector, what the chain did) rows and (key, quality measures) rows.
Rows = list[tuple[Key, np.ndarray, list[dict[str, Any]]]]
Measures = list[tuple[Key, Mapping[str, float]]]


class CacheWriter:
    """Writes batches of embeddings into ``cache`` on its own thread (see the module doc)."""

    def __init__(self, cache: EmbeddingCache, depth: int = WRITE_QUEUE) -> None:
        self.cache = cache
        self.box: queue.Queue[tuple[Rows, Measures] | None] = queue.Queue(maxsize=depth)
        #: Vectors committed; vectors not stored after a failure; seconds the thread spent writing.
        self.written = 0
        self.not_stored = 0
        self.write_s = 0.0
        #: Seconds the caller waited: for room on the queue, and for the last writes when leaving.
        self.wait_s = 0.0
        self.error: BaseException | None = None
        self.reported = False
        self.thread = threading.Thread(target=self._work, name="interbias-cache-writer", daemon=True)

    def __enter__(self) -> CacheWriter:
        self.thread.start()
        return self

    def put(self, rows: Rows, measures: Measures | None = None) -> None:
        """Queue one batch (written as one transaction); raises the writer's failure, if any."""
        self.raise_failure()
        t = time.perf_counter()
        self.box.put((list(rows), list(measures or [])))
        self.wait_s += time.perf_counter() - t

    def _work(self) -> None:
        while (batch := self.box.get()) is not None:
            rows, measures = batch
            if self.error is not None:  # after a failure nothing more is attempted; counted
                self.not_stored += len(rows)
                continue
            t = time.perf_counter()
            try:
                self.cache.put_many(rows)
                if measures:
                    self.cache.put_quality(measures)
                self.written += len(rows)
            except BaseException as exc:  # kept, raised on the driver's thread
                self.error = exc
                self.not_stored += len(rows)
            self.write_s += time.perf_counter() - t

    def close(self) -> None:
        """Write what is queued and join the thread (idempotent)."""
        if not self.thread.is_alive():
            return
        t = time.perf_counter()
        self.box.put(None)
        self.thread.join()
        self.wait_s += time.perf_counter() - t

    def failure(self) -> RunError | None:
        """The first failed write as one line with what it cost, or ``None``."""
        if self.error is None:
            return None
        lost = f"{self.not_stored} computed embedding(s) were not stored ({self.written} were)"
        if isinstance(self.error, RunError):
            return RunError(f"{self.error}; {lost}")
        return RunError(
            f"writing the embedding cache {self.cache.path} failed ({type(self.error).__name__}: {self.error}); {lost}"
        )

    def raise_failure(self) -> None:
        problem = self.failure()
        if problem is not None:
            self.reported = True
            raise problem from self.error

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
        if exc is None:
            self.raise_failure()
        elif not self.reported and (problem := self.failure()) is not None:
            exc.add_note(f"also: {problem}")
