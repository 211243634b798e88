"""Preparation in worker processes feeding the device driver, out-of-memory halving, --precision.

No GPU here: the device path runs with device "cpu" (each waveform alone) or as a pretend
"cuda" (pinning replaced by a copy, batches cut as on CUDA) with encoders that need no device."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import tiny_experiment

from interbias.embedding import executors as X
from interbias.embedding import feed as F
from interbias.embedding import local as L
from interbias.embedding import tasks as T
from interbias.embedding.device import device_scope, out_of_memory, precision_options
from interbias.encoders import Encoder, EncoderCard
from interbias.operators import Chain, parse_chain
from interbias.utils.errors import EncoderError, ExecutorError, RunError


class StatsEncoder(Encoder):
    """Embeds by waveform statistics; records the batch sizes it is given; a batch longer than
    ``oom_above`` raises CUDA's out-of-memory error, and so does any batch holding ``poison``
    (``poison_oom``) or an EncoderError (otherwise)."""

    def __init__(self, oom_above: int = 10**9, poison: np.ndarray | None = None, poison_oom: bool = False) -> None:
        card = EncoderCard(label="stats", family="baseline", backend="test", embedding_dim=3)
        super().__init__(card, source="test", checkpoint_sha256="0" * 64)
        self.seen: list[int] = []
        self.oom_above, self.poison, self.poison_oom = oom_above, poison, poison_oom

    def embed(self, waves):  # type: ignore[override]
        self.seen.append(len(waves))
        if self.poison is not None and any(np.array_equal(w, self.poison) for w in waves):
            if self.poison_oom:
                raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
            raise EncoderError(f"{self.label}: poisoned input")
        if len(waves) > self.oom_above:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return super().embed(waves)

    def _embed_one(self, wave: np.ndarray) -> np.ndarray:
        return np.array([wave.mean(), wave.std(), len(wave)], dtype=np.float32)


def context(tiny_corpus, tmp_path: Path) -> T.EmbedContext:
    from interbias.experiments.schema import load_experiment

    return T.EmbedContext(load_experiment(tiny_experiment(tmp_path)).frontend, tiny_corpus, tmp_path)


def make_tasks(manifest, enc: Encoder, n: int, chains: tuple[Chain, ...]) -> list[T.EmbedTask]:
    return [
        T.EmbedTask(u.id, u.sha256 or u.id, frozenset(), tuple((c, (enc.fingerprint,)) for c in chains))
        for u in list(manifest.utterances)[:n]
    ]


def as_bytes(results: list[T.EmbedResult]) -> list[tuple]:
    """Everything a result carries, vectors as bytes, in the order given."""
    return [
        (r.uid, r.chain_key, r.encoder_fp, None if r.vector is None else r.vector.tobytes(), r.realised, r.error)
        for r in results
    ]


@pytest.fixture
def pretend_cuda(monkeypatch):
    """The CUDA path's batching without CUDA: pinning is a copy."""
    monkeypatch.setattr(T, "pin", lambda w, device: w.copy())
    monkeypatch.setattr(T, "GPU_BATCH", 8)
    monkeypatch.setattr(T, "GPU_BUFFER", 16)


CHAINS = (Chain(), parse_chain([{"op": "noise", "kind": "gaussian", "snr_db": 10}], where="t"))


def test_preparation_in_1_or_2_workers_equals_this_process_byte_for_byte(tiny_corpus, tmp_path, pretend_cuda) -> None:
    ctx = context(tiny_corpus, tmp_path)
    enc = StatsEncoder()
    tasks = make_tasks(tiny_corpus, enc, 10, CHAINS)
    here_stats = T.ExecStats()
    here = list(T.embed_tasks(ctx, [enc], tasks, "cpu", here_stats))
    assert len(here) == 20 and all(r.vector is not None for r in here)
    for jobs in (1, 2):
        spec = F.preparation_spec(ctx, jobs)
        stats = T.ExecStats()
        got = list(F.embed_fed([enc], tasks, "cpu", stats, spec))
        assert as_bytes(got) == as_bytes(here), jobs  # same vectors, realised records, order
        assert spec.restarts == 0 and stats.samples == here_stats.samples and here_stats.samples["stats"] > 0
    # the device path (batches of 8 sorted by length) with --jobs 2 (the local executor's 2
    # preparation workers) gives what it gives fed in process
    batched_here = list(T.embed_tasks(ctx, [enc], tasks, "cuda", T.ExecStats()))
    executor = X.LocalExecutor(device="cuda", jobs=2)
    batched_fed = list(executor.embed(ctx, [enc], tasks))
    assert as_bytes(batched_fed) == as_bytes(batched_here)
    info = executor.describe()
    assert (info["jobs"], info["jobs_work"], info["worker_restarts"], executor.stats.workers) == (2, "prepare", 0, 2)
    key = lambda r: (r.uid, r.chain_key)  # noqa: E731
    assert as_bytes(sorted(batched_fed, key=key)) == as_bytes(sorted(here, key=key))


def test_a_dying_or_failing_preparation_worker_is_one_error_not_a_hang(tiny_corpus, tmp_path, monkeypatch) -> None:
    ctx = context(tiny_corpus, tmp_path)
    enc = StatsEncoder()
    tasks = make_tasks(tiny_corpus, enc, 3, (Chain(),))
    unknown = T.EmbedTask("no-such-utterance", "x", frozenset(), ((Chain(), (enc.fingerprint,)),))
    with pytest.raises(ExecutorError, match=r"no-such-utterance: preparing it failed in a worker process \(KeyError"):
        list(F.embed_fed([enc], [*tasks, unknown], "cpu", T.ExecStats(), F.preparation_spec(ctx, 1)))
    monkeypatch.setenv("INTERBIAS_CRASH_AT", "prepare-task")  # every worker dies on its first chunk
    spec = F.preparation_spec(ctx, 1)
    spec.retries = 0
    with pytest.raises(ExecutorError, match=r"a worker process died 1 times while embedding u"):
        list(F.embed_fed([enc], tasks, "cpu", T.ExecStats(), spec))


def test_the_feeder_passes_errors_on_and_stops_when_the_driver_stops() -> None:
    def boom():
        yield [], []
        raise ValueError("decoder broke")

    it = F.fed(boom(), depth=1)
    assert next(it) == ([], [])
    with pytest.raises(ValueError, match="decoder broke"):
        next(it)

    closed = threading.Event()

    def endless():
        try:
            while True:
                yield [], []
        finally:
            closed.set()

    it = F.fed(endless(), depth=2)
    next(it)
    it.close()  # the driver stops early: the feeder stops and closes its source
    assert closed.wait(5)
    assert not any(t.name == "interbias-feed" for t in threading.enumerate())


def test_out_of_memory_halves_the_batch_counts_it_and_loses_nothing(
    tiny_corpus, tmp_path, pretend_cuda, monkeypatch
) -> None:
    monkeypatch.setattr(T, "GPU_BUFFER", 8)
    ctx = context(tiny_corpus, tmp_path)
    ref = StatsEncoder()
    tasks = make_tasks(tiny_corpus, ref, 12, (Chain(),))
    cpu = {r.uid: r.vector.tobytes() for r in T.embed_tasks(ctx, [ref], tasks, "cpu", T.ExecStats())}
    enc = StatsEncoder(oom_above=3)
    stats = T.ExecStats()
    got = list(T.embed_tasks(ctx, [enc], tasks, "cuda", stats))
    assert {r.uid: r.vector.tobytes() for r in got} == cpu  # every vector, none dropped
    # first buffer: 8 → OOM → 4 → OOM → 2, 2 (twice); the last 4 are cut to 2 from the start
    assert enc.seen == [8, 4, 2, 2, 4, 2, 2, 2, 2]
    assert stats.oom_retries == 3 and stats.batch_cap == {"stats": 2}
    merged = T.ExecStats()
    merged.merge(stats)
    merged.merge(stats)
    assert merged.oom_retries == 6 and merged.batch_cap == {"stats": 2} and merged.samples["stats"] > 0


class FlakyBatchEncoder(StatsEncoder):
    """A batched path that raises once (on the first call given more than one waveform)."""

    def __init__(self) -> None:
        super().__init__()
        self.broken = True

    def embed(self, waves):  # type: ignore[override]
        if len(waves) > 1 and self.broken:
            self.broken = False
            raise RuntimeError("masked path broke")
        return super().embed(waves)


def test_a_batch_that_fails_is_retried_one_at_a_time_counted_and_printed(tiny_corpus, tmp_path, pretend_cuda) -> None:
    from interbias.cli.run import embedding_lines

    ctx = context(tiny_corpus, tmp_path)
    tasks = make_tasks(tiny_corpus, StatsEncoder(), 8, (Chain(),))
    cpu = {r.uid: r.vector.tobytes() for r in T.embed_tasks(ctx, [StatsEncoder()], tasks, "cpu", T.ExecStats())}
    enc, stats = FlakyBatchEncoder(), T.ExecStats()
    got = list(T.embed_tasks(ctx, [enc], tasks, "cuda", stats))
    assert {r.uid: r.vector.tobytes() for r in got} == cpu  # nothing lost: each item alone
    assert enc.seen == [1] * 8  # after the failed batch of 8: eight calls of one
    assert stats.batch_fallbacks == 1 and stats.oom_retries == 0
    assert stats.fallback_reasons == {"stats": "RuntimeError: masked path broke"}
    merged = T.ExecStats()
    merged.merge(stats)
    merged.merge(T.ExecStats())
    assert merged.batch_fallbacks == 1 and merged.fallback_reasons == stats.fallback_reasons
    info = {"embedded": 8, "from_cache": 0, "cells_reused": 0, "oom_retries": 0}
    lines = embedding_lines({**info, "batch_fallbacks": 1, "batch_fallback_reasons": stats.fallback_reasons})
    assert "batch fallbacks 1, OOM halvings 0" in lines[0]
    assert lines[1].startswith("warning: 1 network batch(es) failed and were embedded one at a time")
    assert lines[1].endswith("first reason: stats: RuntimeError: masked path broke")
    assert len(embedding_lines({**info, "batch_fallbacks": 0, "batch_fallback_reasons": {}})) == 1


class BucketStats(StatsEncoder):
    """Masked batches in frame buckets (10 frames per second), each network batch's frame counts recorded."""

    supports_masks = True
    frame_buckets = True

    def __init__(self) -> None:
        super().__init__()
        self.set_batching("always")
        self.max_batch_frames = 64
        self.batches_seen: list[list[int]] = []

    def frame_count(self, n_samples: int) -> int:
        return n_samples // 1600

    def _embed_batch(self, waves):  # type: ignore[override]
        self.batches_seen.append([self.frame_count(w.size) for w in waves])
        return [self._embed_one(w) for w in waves]


def test_the_driver_holds_a_short_last_batch_for_the_next_flush(tiny_corpus, tmp_path, pretend_cuda) -> None:
    from interbias.encoders.batching import frame_bucket, is_full

    ctx = context(tiny_corpus, tmp_path)
    tasks = make_tasks(tiny_corpus, StatsEncoder(), 24, (Chain(),))
    cpu = {r.uid: r.vector.tobytes() for r in T.embed_tasks(ctx, [StatsEncoder()], tasks, "cpu", T.ExecStats())}
    enc, stats = BucketStats(), T.ExecStats()
    mine = make_tasks(tiny_corpus, enc, 24, (Chain(),))  # its own fingerprint (batched keys)
    got = {r.uid: r.vector.tobytes() for r in T.embed_tasks(ctx, [enc], mine, "cuda", stats)}
    assert got == cpu and stats.batch_fallbacks == 0
    seen = enc.batches_seen
    assert sum(len(b) for b in seen) == 24 and len(seen) > 3
    # every batch but the very last holds a bucket's full row count: its own bucket's, or a
    # larger bucket's when its longest row made the cut step up (bucketed_batches)
    ladder = [frame_bucket(f) for f in range(1, 65)]
    for b in seen[:-1]:
        assert is_full(b, enc.max_batch_items, 64) or len(b) in {64 // k for k in ladder if k >= max(b)}
    shapes = {(len(b), frame_bucket(max(b))) for b in seen}
    assert all(n * f <= 64 for n, f in shapes)
    assert T.call_chunks([[0, 1, 2], [3], [4, 5]], 4) == [[0, 1, 2, 3], [4, 5]]
    assert T.call_chunks([[0, 1, 2, 3, 4]], 2) == [[0, 1], [2, 3], [4]]  # after a halving: split


def test_the_first_batch_goes_as_soon_as_it_is_full(tiny_corpus, tmp_path, pretend_cuda, monkeypatch) -> None:
    """While the first buffer fills, a full network batch goes at once (not when the buffer is
    full); the vectors are the same either way, and the same as one at a time."""
    monkeypatch.setattr(T, "FIRST_BUFFER", 16)
    ctx = context(tiny_corpus, tmp_path)
    cpu_tasks = make_tasks(tiny_corpus, StatsEncoder(), 24, (Chain(),))
    cpu = {r.uid: r.vector.tobytes() for r in T.embed_tasks(ctx, [StatsEncoder()], cpu_tasks, "cpu", T.ExecStats())}
    loaded = [T.prepare(ctx, t) for t in make_tasks(tiny_corpus, BucketStats(), 24, (Chain(),))]

    def counted(came: list[int]):
        for item in loaded:
            came.append(came[-1] + len(item[0]))
            yield item

    firsts = {}
    for early in (True, False):
        enc, came = BucketStats(), [0]
        arrivals: list[int] = []
        enc._embed_batch = lambda waves, enc=enc, came=came, arrivals=arrivals: (  # type: ignore[method-assign]
            arrivals.append(came[-1]) or BucketStats._embed_batch(enc, waves)
        )
        got = list(T.drive([enc], counted(came), "cuda", T.ExecStats(), early=early))
        assert {r.uid: r.vector.tobytes() for r in got} == cpu
        firsts[early] = arrivals[0]
        assert all(is_full_batch(enc, b) for b in enc.batches_seen[: len(arrivals) - 1])
    assert firsts[False] == 16  # the first buffer, then the batches
    assert firsts[True] < 16  # the first full batch, as soon as its waveforms were there


def is_full_batch(enc: BucketStats, frames: list[int]) -> bool:
    from interbias.encoders.batching import bucket_items, frame_bucket

    rows = {bucket_items(frame_bucket(f), enc.max_batch_items, enc.max_batch_frames) for f in range(max(frames), 65)}
    return len(frames) in rows


@pytest.mark.parametrize("poison_oom", [False, True])
def test_one_failing_utterance_fails_alone_with_its_cpu_message(
    tiny_corpus, tmp_path, pretend_cuda, poison_oom
) -> None:
    from interbias.audio import frontend as audio

    ctx = context(tiny_corpus, tmp_path)
    victim = tiny_corpus.utterances[3]
    poison = audio.load(tiny_corpus.resolve(victim), ctx.frontend, vad=True).samples
    tasks = make_tasks(tiny_corpus, StatsEncoder(), 8, (Chain(),))
    runs = {}
    for device in ("cpu", "cuda"):
        stats = T.ExecStats()
        runs[device] = (
            list(T.embed_tasks(ctx, [StatsEncoder(poison=poison, poison_oom=poison_oom)], tasks, device, stats)),
            stats,
        )
    (cpu, _), (dev, stats) = runs["cpu"], runs["cuda"]
    bad = [r for r in dev if r.error]
    assert [r.uid for r in bad] == [victim.id] and sum(r.vector is not None for r in dev) == 7
    assert bad[0].error == next(r.error for r in cpu if r.error)  # the same message as on CPU
    expected = "stats failed (OutOfMemoryError: CUDA out of memory." if poison_oom else "stats: poisoned input"
    assert bad[0].error.startswith(f"{victim.id}: {expected}")
    assert stats.oom_retries == (3 if poison_oom else 0)  # 8 → 4 → 2 → 1: halvings down to the culprit


def test_out_of_memory_is_recognised_and_cudnn_autotuning_is_off_while_driving() -> None:
    assert out_of_memory(torch.cuda.OutOfMemoryError("CUDA out of memory"))
    assert not out_of_memory(RuntimeError("CUDA out of memory")) and not out_of_memory(MemoryError())
    before = torch.backends.cudnn.benchmark
    torch.backends.cudnn.benchmark = True
    try:
        with device_scope("cuda:0"):
            assert torch.backends.cudnn.benchmark is False
        assert torch.backends.cudnn.benchmark is True
        with device_scope("cpu"):
            assert torch.backends.cudnn.benchmark is True
    finally:
        torch.backends.cudnn.benchmark = before


def test_jobs_on_a_device_are_preparation_workers(monkeypatch) -> None:
    monkeypatch.setattr(L, "usable_cores", lambda: 16)
    assert X.LocalExecutor(device="cuda", jobs=2).resolve_jobs(1000) == 2
    assert X.LocalExecutor(device="cuda").resolve_jobs(1000) == 15  # all cores but one
    assert X.LocalExecutor(device="cuda").resolve_jobs(X.AUTO_JOBS_MIN_TASKS - 1) == 1
    assert X.LocalExecutor(device="cuda", jobs=8).resolve_jobs(9) == 3  # no more workers than chunks of 4
    assert X.LocalExecutor().resolve_jobs(1000) == 16  # CPU: unchanged
    ex = X.LocalExecutor(device="cuda", jobs=2)
    ex.jobs = 2
    assert ex.describe()["jobs_work"] == "prepare"


def test_precision_is_checked_and_passed_to_the_encoders() -> None:
    assert precision_options("fp32", "cpu", ["CAM++"]) == {}  # the default loads encoders as before
    assert precision_options("bf16", "cuda:0", ["CAM++", "GE2E"]) == {
        "CAM++": {"precision": "bf16"},
        "GE2E": {"precision": "bf16"},
    }
    assert precision_options("tf32", "cuda", ["CAM++"]) == {"CAM++": {"precision": "tf32"}}
    with pytest.raises(RunError, match=r"^--precision 'fp16': use fp32, tf32, bf16$"):
        precision_options("fp16", "cuda", ["CAM++"])
    with pytest.raises(RunError, match="tf32 is a CUDA mode"):
        precision_options("tf32", "cpu", ["CAM++"])
    with pytest.raises(RunError, match="--executor ray embeds in fp32"):
        precision_options("bf16", "cuda", ["CAM++"], "ray")


def test_cli_precision_reaches_load_encoders_and_a_bad_one_is_one_line(tmp_path: Path, monkeypatch) -> None:
    from typer.testing import CliRunner

    from interbias.cli import app
    from interbias.run import conductor

    seen = {}

    def fake_load(labels, device, options=None, runtime=None):
        seen.update(labels=labels, device=device, options=options)
        raise EncoderError("stop here")

    monkeypatch.setattr(conductor, "load_encoders", fake_load)
    exp = tiny_experiment(tmp_path, name="T18")
    out = ["--out", str(tmp_path / "r"), "--encoders", "mfcc-stats"]
    res = CliRunner().invoke(app, ["run", str(exp), "--precision", "fp16", *out])
    assert res.exit_code == 1 and "error: --precision 'fp16': use fp32, tf32, bf16" in res.output
    assert "Traceback" not in res.output and not seen
    res = CliRunner().invoke(app, ["run", str(exp), "--precision", "bf16", *out])
    assert res.exit_code == 1 and "stop here" in res.output
    assert seen == {"labels": ["mfcc-stats"], "device": "cpu", "options": {"mfcc-stats": {"precision": "bf16"}}}


def test_precision_other_than_fp32_is_refused_where_it_would_be_ignored() -> None:
    from types import SimpleNamespace

    from interbias.cli.run import check_precision_used

    verification, countermeasure = SimpleNamespace(kind="verification"), SimpleNamespace(kind="countermeasure")
    check_precision_used("bf16", verification)
    check_precision_used("fp32", countermeasure)
    with pytest.raises(RunError, match="--precision bf16 applies to speaker-verification experiments"):
        check_precision_used("bf16", countermeasure)
