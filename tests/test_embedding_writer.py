"""The embedding cache's writer thread (interbias.embedding.writer): every vector of a run is
committed, in the order computed, before ``Embedder.run`` returns; a failing write stops the run
with a count, never silently; the thread is joined on every exit; a process killed mid-write
leaves no half-written entry. An executor of hashed vectors stands in for the encoders (no audio
is decoded)."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from interbias.audio.frontend import FrontEnd
from interbias.embedding import stage as S
from interbias.embedding.cache import EmbeddingCache
from interbias.embedding.executors import EmbedContext, EmbedResult, EmbedTask, Executor
from interbias.embedding.writer import CacheWriter
from interbias.encoders import Encoder, EncoderCard
from interbias.operators import Chain, parse_chain
from interbias.utils.errors import RunError

ROOT = Path(__file__).resolve().parent.parent


class Hashed(Encoder):
    def __init__(self) -> None:
        super().__init__(
            EncoderCard(label="hashed", family="baseline", backend="test", embedding_dim=4),
            source="test",
            checkpoint_sha256="0" * 64,
        )


def unit(text: str) -> np.ndarray:
    """A unit vector from the sha256 of ``text`` (no random generator)."""
    v = np.frombuffer(hashlib.sha256(text.encode()).digest()[:16], dtype=np.uint32).astype(np.float64) + 1.0
    return (v / np.linalg.norm(v)).astype(np.float32)


class HashExecutor(Executor):
    """Yields one hashed vector per (utterance, chain, encoder); raises ``stop`` after ``stop_after``."""

    def __init__(self, stop_after: int | None = None, stop: BaseException | None = None) -> None:
        super().__init__()
        self.stop_after, self.stop = stop_after, stop
        self.order: list[tuple[str, str]] = []

    def embed(
        self, ctx: EmbedContext, encoders: Sequence[Encoder], tasks: Sequence[EmbedTask]
    ) -> Iterator[EmbedResult]:
        for t in tasks:
            for chain, fps in t.chains:
                for fp in fps:
                    if self.stop is not None and len(self.order) == self.stop_after:
                        raise self.stop
                    self.order.append((t.uid, chain.fingerprint))
                    key = chain.key(t.exclude)
                    yield EmbedResult(t.uid, chain.fingerprint, key, fp, unit(t.uid + key), [{"frontend": {}}])


CHAINS = (Chain(), parse_chain([{"op": "gain", "gain_db": -6}], where="test"))


def items(manifest) -> dict:
    ids = {u.id for u in manifest.utterances}
    return {c.fingerprint: (c, set(ids)) for c in CHAINS}


def writer_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "interbias-cache-writer"]


@pytest.fixture
def small_batches(monkeypatch):
    monkeypatch.setattr(S, "CACHE_BATCH", 8)


def test_every_write_is_committed_in_order_before_run_returns(tiny_corpus, tmp_path, small_batches, monkeypatch):
    written: list[tuple] = []
    real = EmbeddingCache.put_many
    driver = threading.get_ident()

    def slow(self, rows):  # a slow disk, on the writer's thread
        assert threading.get_ident() != driver
        rows = list(rows)
        threading.Event().wait(0.02)
        written.extend(k for k, _, _ in rows)
        real(self, rows)

    monkeypatch.setattr(EmbeddingCache, "put_many", slow)
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    emb = S.Embedder(tiny_corpus, [Hashed()], cache, FrontEnd())
    ex = HashExecutor()
    emb.run(items(tiny_corpus), ex)
    n = 2 * len(tiny_corpus.utterances)
    assert emb.n_embedded == emb.n_stored == n and cache.count() == n  # all there when run returns
    assert not writer_threads()
    # the order the executor gave, batch after batch
    fp = Hashed().fingerprint
    assert written == [(emb.sha[u], emb.cache_keys[(u, c)], fp) for u, c in ex.order]
    assert emb.cache_write_s >= 0.02 * (n // 8)
    # a second run serves every vector from the cache, byte for byte
    again = S.Embedder(tiny_corpus, [Hashed()], cache, FrontEnd())
    again.run(items(tiny_corpus), HashExecutor())
    assert again.n_cached == n and again.n_embedded == 0
    assert {k: v.tobytes() for k, v in again.vectors.items()} == {k: v.tobytes() for k, v in emb.vectors.items()}


def test_a_failing_write_stops_the_run_with_a_count(tiny_corpus, tmp_path, small_batches, monkeypatch):
    real = EmbeddingCache.put_many
    calls = []

    def full(self, rows):
        calls.append(1)
        if len(calls) == 2:
            raise RunError(f"cannot write the embedding cache {self.path} (database or disk is full)")
        real(self, rows)

    monkeypatch.setattr(EmbeddingCache, "put_many", full)
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    emb = S.Embedder(tiny_corpus, [Hashed()], cache, FrontEnd())
    with pytest.raises(RunError) as info:
        emb.run(items(tiny_corpus), HashExecutor())
    msg = str(info.value)
    assert msg.startswith(f"cannot write the embedding cache {tmp_path / 'e.sqlite'} (database or disk is full); ")
    stored = cache.count()
    assert stored == emb.n_stored == 8  # the first batch, committed
    lost = int(msg.split("; ")[1].split()[0])
    assert msg.endswith(f"{lost} computed embedding(s) were not stored (8 were)")
    assert 8 <= lost and stored + lost <= emb.n_embedded  # the failed batch and those after it
    assert not writer_threads()


@pytest.mark.parametrize("stop", [KeyboardInterrupt(), ValueError("executor broke")])
def test_the_writer_is_joined_and_flushed_when_the_driver_stops(tiny_corpus, tmp_path, small_batches, stop):
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    emb = S.Embedder(tiny_corpus, [Hashed()], cache, FrontEnd())
    with pytest.raises(type(stop)):
        emb.run(items(tiny_corpus), HashExecutor(stop_after=27, stop=stop))
    assert not writer_threads()
    assert cache.count() == emb.n_stored == 24  # every batch handed over is written; the 3 in hand are not


def test_a_failed_write_is_noted_on_another_exception(tmp_path):
    class Broken(EmbeddingCache):
        def put_many(self, items):
            raise OSError("no space left")

    writer = CacheWriter(Broken(tmp_path / "e.sqlite"))
    with pytest.raises(KeyError) as info, writer:
        writer.put([(("a" * 64, "c", "e"), unit("x"), [])])
        writer.thread.join(timeout=0)  # the writer may or may not have failed yet
        raise KeyError("driver")
    assert writer.not_stored == 1 and writer.written == 0 and not writer.thread.is_alive()
    assert info.value.__notes__ == [
        f"also: writing the embedding cache {tmp_path / 'e.sqlite'} failed (OSError: no space left); "
        "1 computed embedding(s) were not stored (0 were)"
    ]


KILLED = """
import numpy as np
from interbias.embedding.cache import EmbeddingCache
from interbias.embedding.writer import CacheWriter
cache = EmbeddingCache({path!r})
v = np.full(4, 0.5, dtype=np.float32)
with CacheWriter(cache) as w:
    for b in range(3):
        w.put([((f"{{b:02d}}{{i:062d}}", "c", "e"), v, []) for i in range(64)])
"""


def test_a_process_killed_mid_write_leaves_no_half_written_entry(tmp_path):
    path = tmp_path / "e.sqlite"
    env = {**os.environ, "INTERBIAS_CRASH_AT": "cache-write@2", "PYTHONPATH": str(ROOT)}
    child = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(KILLED.format(path=str(path)))], env=env, capture_output=True, text=True
    )
    assert child.returncode == -signal.SIGKILL, child.stderr[-2000:]
    cache = EmbeddingCache(path)  # reopened: the open transaction was rolled back
    keys = [(f"{b:02d}{i:062d}", "c", "e") for b in range(3) for i in range(64)]
    assert cache.count() == 64
    found = cache.get_many(keys)  # every row that is there reads as a whole, valid entry
    assert sorted(found) == keys[:64]
    assert all(np.array_equal(e.vector, np.full(4, 0.5, dtype=np.float32)) for e in found.values())
