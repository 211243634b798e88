"""The unit of embedding work and how one process does it.

The unit of work is an :class:`EmbedTask`: one utterance with every (operator chain, encoder)
pair the run still lacks for it, so each file is decoded once (:func:`prepare`) and each chain
applied once for all encoders. Executors (:class:`Executor`, registered by :func:`register`;
:mod:`interbias.embedding.local`, :mod:`interbias.embedding.ray`) turn tasks into
:class:`EmbedResult` records (a vector or a counted failure) and never touch the embedding
cache: the embedding stage (:class:`interbias.embedding.stage.Embedder`, on the driver) is its
only writer, so the cache may sit on shared storage without concurrent SQLite writers.

:func:`embed_tasks` embeds tasks in this process: the next utterances are decoded and degraded
on a loader thread (:func:`prefetched`) while the encoders run; :func:`drive` is the part that
embeds prepared waveforms, shared with preparation in worker processes
(:mod:`interbias.embedding.feed`). On CPU each waveform is embedded alone (byte-identical
whatever else is in flight); on CUDA waveforms are handed to the encoder in length-sorted
batches (:func:`ready_groups`: the encoder's network batches, a frame bucket's short last batch
held for the next flush; the first batch as soon as it is full, :func:`first_group`), each
waveform copied once into the encoder's pinned batch buffer; a
batch that runs out of device memory is halved and retried (:func:`embed_batch`), one that fails
otherwise is retried one at a time and counted.
"""

from __future__ import annotations

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
from interbias.audio.quality import wave_measures
from interbias.audio.windows import pool, too_many_windows, window_spans
from interbias.corpora.manifest import Manifest, Utterance
from interbias.embedding.device import device_scope, out_of_memory, release_memory
from interbias.encoders import Encoder
from interbias.encoders.batching import is_full
from interbias.operators import Chain, OpContext
from interbias.operators.silence import check_chain_output, input_speech_db
from interbias.utils.errors import AudioError, EncoderError, OperatorError, RunError
from interbias.utils.registry import Registry

#: Utterances decoded ahead of the encoders by the loader thread.
PREFETCH = 4
#: Waveforms gathered before length-sorting them into CUDA calls (large: little padding).
GPU_BUFFER = 2048
#: Waveforms gathered before the first CUDA flush of the buffer (the first full network batch
#: goes before, as soon as it is full).
FIRST_BUFFER = 256
#: Waveforms per ``Encoder.embed`` call on CUDA (whole network batches; the encoder cuts a call
#: into the same batches by its frame budget, :meth:`interbias.encoders.Encoder.batch_groups`).
GPU_BATCH = 512
#: Longest reason kept for a batch that fell back to one at a time.
FALLBACK_REASON_CHARS = 300

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
    #: Blind quality measures of the item (:mod:`interbias.audio.quality`): duration, snr, magnitude.
    quality: dict[str, float] | None = None


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
    #: Sample spans embedded and mean-pooled (``frontend.long_audio: window``); ``None``: the whole wave.
    windows: tuple[tuple[int, int], ...] | None = None
    #: Duration (s) and WADA-SNR (dB) of ``wave`` (:func:`interbias.audio.quality.wave_measures`).
    quality: dict[str, float] = field(default_factory=dict)


@dataclass
class ExecStats:
    """Wall seconds inside ``Encoder.embed`` per encoder label, CPU seconds of the calling
    thread there (all of the forward pass when torch uses one thread), both summed over
    workers, the forward passes run by remote workers (local ones are counted on the
    driver's encoders), the samples embedded per label (each waveform once per encoder, at
    the front end's rate), the out-of-memory halvings (:func:`embed_batch`) with the batch
    size each label was cut to, and the batches that failed for another reason and were embedded
    one at a time (``batch_fallbacks``; the first reason per label in ``fallback_reasons``)."""

    forward_s: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    forward_cpu_s: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    remote_calls: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    samples: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    oom_retries: int = 0
    batch_cap: dict[str, int] = field(default_factory=dict)
    batch_fallbacks: int = 0
    fallback_reasons: dict[str, str] = field(default_factory=dict)
    workers: int = 1

    def merge(self, other: ExecStats) -> None:
        for k, v in other.forward_s.items():
            self.forward_s[k] += v
        for k, v in other.forward_cpu_s.items():
            self.forward_cpu_s[k] += v
        for k, n in other.remote_calls.items():
            self.remote_calls[k] += n
        for k, n in other.samples.items():
            self.samples[k] += n
        self.oom_retries += other.oom_retries
        self.batch_fallbacks += other.batch_fallbacks
        for k, why in other.fallback_reasons.items():
            self.fallback_reasons.setdefault(k, why)
        for k, n in other.batch_cap.items():
            self.batch_cap[k] = min(n, self.batch_cap.get(k, n))


def prepare(ctx: EmbedContext, task: EmbedTask) -> tuple[list[Prepared], list[EmbedResult]]:
    """Decode the utterance once and apply each chain: waveforms, or counted failures."""
    u = ctx.utterance(task.uid)
    try:
        loaded = audio.load(ctx.manifest.resolve(u), ctx.frontend, vad=True, span=u.span)
    except AudioError as exc:
        return [], [
            EmbedResult(task.uid, c.fingerprint, c.key(task.exclude), error=str(exc), n_items=len(encs))
            for c, encs in task.chains
        ]
    front = loaded.record()
    ready: list[Prepared] = []
    failed: list[EmbedResult] = []
    speech_db: float | None = None  # the input's level, for every chain's near-silence check
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
                if speech_db is None:
                    speech_db = input_speech_db(loaded.samples, loaded.sample_rate_hz)
                check_chain_output(loaded.samples, wave, loaded.sample_rate_hz, speech_db=speech_db)
        except OperatorError as exc:
            failed.append(EmbedResult(task.uid, chain.fingerprint, ckey, error=f"{task.uid}: {exc}", n_items=len(encs)))
            continue
        spans = None
        if ctx.frontend.long_audio == "window":
            fe = ctx.frontend
            if why := too_many_windows(len(wave), loaded.sample_rate_hz, fe.window_s, fe.hop_s):
                failed.append(
                    EmbedResult(task.uid, chain.fingerprint, ckey, error=f"{task.uid}: {why}", n_items=len(encs))
                )
                continue
            spans = tuple(window_spans(len(wave), loaded.sample_rate_hz, fe.window_s, fe.hop_s))
            front = {**front, "windows": len(spans)}
        measures = wave_measures(wave, loaded.sample_rate_hz)
        ready.append(
            Prepared(task.uid, chain.fingerprint, ckey, wave, [{"frontend": front}, *ops], encs, spans, measures)
        )
    return ready, failed


def embed_batch(enc: Encoder, items: Sequence[Prepared], stats: ExecStats) -> list[EmbedResult]:
    """Embed ``items`` in one call. A call that runs out of device memory
    (``torch.cuda.OutOfMemoryError``) is halved and each half retried (counted in
    ``stats.oom_retries``; later batches of that encoder are cut to the half); any other
    failure, or out of memory on one item, retries each item alone, so one failing utterance
    fails alone with the message it gives on CPU (failures counted, nothing dropped); a batch
    retried so is counted in ``stats.batch_fallbacks`` with its reason (a broken batched path
    would otherwise quietly run one at a time)."""
    fp = enc.fingerprint  # a hash: computed once per batch
    t, c = time.perf_counter(), time.thread_time()
    try:
        vecs = windowed_embed(enc, items)
        stats.forward_s[enc.label] += time.perf_counter() - t
        stats.forward_cpu_s[enc.label] += time.thread_time() - c
        stats.samples[enc.label] += sum(len(p.wave) for p in items)
        mags = item_magnitudes(items, getattr(enc, "last_norms", []))
        return [
            EmbedResult(p.uid, p.chain_fp, p.chain_key, fp, vecs[i], p.realised, quality={**p.quality, "magnitude": m})
            for i, (p, m) in enumerate(zip(items, mags, strict=True))
        ]
    except Exception as exc:
        stats.forward_s[enc.label] += time.perf_counter() - t
        stats.forward_cpu_s[enc.label] += time.thread_time() - c
        if len(items) > 1 and out_of_memory(exc):
            release_memory(enc.device)
            half = (len(items) + 1) // 2
            stats.oom_retries += 1
            stats.batch_cap[enc.label] = min(half, stats.batch_cap.get(enc.label, half))
            return embed_batch(enc, items[:half], stats) + embed_batch(enc, items[half:], stats)
        if len(items) > 1:
            stats.batch_fallbacks += 1
            stats.fallback_reasons.setdefault(enc.label, f"{type(exc).__name__}: {exc}"[:FALLBACK_REASON_CHARS])
            return [r for p in items for r in embed_batch(enc, [p], stats)]
        p = items[0]
        msg = str(exc) if isinstance(exc, EncoderError) else f"{enc.label} failed ({type(exc).__name__}: {exc})"
        return [EmbedResult(p.uid, p.chain_fp, p.chain_key, fp, None, p.realised, f"{p.uid}: {msg}")]


def windowed_embed(enc: Encoder, items: Sequence[Prepared]) -> list[np.ndarray]:
    """``enc``'s vector of each item: of its whole wave, or the mean pool of its windows'
    vectors (:func:`interbias.audio.windows.pool`), all windows embedded in one call."""
    if all(p.windows is None for p in items):
        return list(enc.embed([p.wave for p in items]))
    waves, owner = [], []
    for i, p in enumerate(items):
        for a, b in p.windows or ((0, len(p.wave)),):
            waves.append(p.wave[a:b])
            owner.append(i)
    flat = enc.embed(waves)
    out = []
    for i, p in enumerate(items):
        mine = [flat[j] for j, o in enumerate(owner) if o == i]
        out.append(pool(mine) if p.windows is not None and len(p.windows) > 1 else mine[0])
    return out


def item_magnitudes(items: Sequence[Prepared], norms: Sequence[float]) -> list[float]:
    """Each item's embedding magnitude before normalisation from the last ``embed`` call's
    ``norms`` (one per wave, windows in item order): the mean over an item's windows."""
    counts = [len(p.windows) if p.windows is not None else 1 for p in items]
    if len(norms) != sum(counts):
        return [float("nan")] * len(items)
    ends = np.cumsum(counts)
    return [float(np.mean(norms[e - n : e])) for n, e in zip(counts, ends, strict=True)]


def length_batches(items: Sequence[Prepared], size: int) -> list[list[Prepared]]:
    """Items sorted by waveform length (ties by utterance and chain) cut into batches of ``size``."""
    order = sorted(items, key=lambda p: (len(p.wave), p.uid, p.chain_key))
    return [order[i : i + size] for i in range(0, len(order), size)]


def pin(wave: np.ndarray, device: str) -> np.ndarray:
    """On CUDA, a copy of ``wave`` in page-locked host memory (fast, asynchronous copies to
    the GPU); on CPU the array itself. The driver does not pin waveforms one by one (a masked
    encoder copies each once into its pinned batch buffer); benchmarks feeding ``embed``
    directly do."""
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


#: What preparing one task gives: its waveforms, and its counted failures.
Loaded = tuple[list[Prepared], list[EmbedResult]]


def embed_tasks(
    ctx: EmbedContext, encoders: Sequence[Encoder], tasks: Iterable[EmbedTask], device: str, stats: ExecStats
) -> Iterator[EmbedResult]:
    """Results for ``tasks`` in this process (see the module doc for CPU and CUDA)."""

    # no per-waveform pinning: on CUDA each waveform is copied once, into the encoder's pinned
    # batch buffer (interbias.encoders.masking.padded_waves)
    return drive(encoders, prefetched(lambda task: prepare(ctx, task), tasks), device, stats)


def ready_groups(enc: Encoder, lengths: Sequence[int], *, final: bool) -> tuple[list[list[int]], list[int]]:
    """(the network batches to run now, the indices held back) for waveforms of ``lengths``
    given to ``enc`` at one flush: the encoder's batches (:meth:`Encoder.batch_groups`); with
    frame buckets (:func:`interbias.encoders.batching.bucketed_batches`) a last batch short of
    its bucket's rows is held for the next flush unless ``final``, so a run meets the same few
    shapes whatever its flushes. One group per waveform when the encoder does not batch."""
    if not enc.batches():
        return [[i] for i in range(len(lengths))], []
    if not lengths:
        return [], []
    groups = enc.batch_groups(lengths)
    if final or not enc.frame_buckets:
        return groups, []
    frames = [enc.frame_count(lengths[i]) for i in groups[-1]]
    if is_full(frames, enc.max_batch_items, enc.max_batch_frames):
        return groups, []
    return groups[:-1], groups[-1]


def call_chunks(groups: Sequence[list[int]], size: int) -> list[list[int]]:
    """Consecutive network batches joined into ``embed`` calls of at most ``size`` waveforms (a
    batch is split only when it alone is larger, after an out-of-memory halving; otherwise the
    encoder cuts each call into the same batches)."""
    calls: list[list[int]] = []
    current: list[int] = []
    pieces = [g[i : i + size] for g in groups for i in range(0, len(g), size)]
    for g in pieces:
        if current and len(current) + len(g) > size:
            calls.append(current)
            current = []
        current = current + g
    if current:
        calls.append(current)
    return calls


def first_group(enc: Encoder, lengths: Sequence[int]) -> tuple[list[list[int]], list[int]]:
    """(the first network batch among waveforms of ``lengths`` if it is full, the indices held),
    for the driver's first batch (:func:`drive`): a bucketed encoder's first batch unless it is
    a short last one (:func:`ready_groups`), another batching encoder's first batch of its full
    row count (``max_batch_items``); none for an encoder that does not batch (its waveforms wait
    for the buffer and go in calls of :data:`GPU_BATCH`)."""
    everything = list(range(len(lengths)))
    if not enc.batches() or not lengths:
        return [], everything
    groups, _ = ready_groups(enc, lengths, final=False)
    full = [g for g in groups if enc.frame_buckets or len(g) >= enc.max_batch_items][:1]
    taken = {i for g in full for i in g}
    return full, [i for i in everything if i not in taken]


def drive(
    encoders: Sequence[Encoder],
    loaded: Iterable[Loaded],
    device: str,
    stats: ExecStats,
    *,
    first_buffer: int | None = None,
    early: bool = True,
) -> Iterator[EmbedResult]:
    """Embed prepared tasks in the order they come: on CPU each waveform alone as it comes; on
    CUDA gathered, sorted by length and cut into the encoder's network batches. The first batch
    goes to the encoder as soon as it is full (:func:`first_group`; with ``early=False`` only
    with the first buffer); once ``first_buffer`` waveforms (default :data:`FIRST_BUFFER`)
    wait, and then whenever :data:`GPU_BUFFER` wait, everything goes but a bucket's short last
    batch (:func:`ready_groups`), in calls of about :data:`GPU_BATCH` (or the smaller size an
    out-of-memory halving left), with cuDNN autotuning off
    (:func:`interbias.embedding.device.device_scope`). Failures are passed on in place."""
    by_fp = {e.fingerprint: e for e in encoders}
    cuda = device.startswith("cuda")
    pending: dict[str, list[Prepared]] = {fp: [] for fp in by_fp}
    # waveforms waiting; the count that flushes the buffer; whether a first batch still waits
    size = {"buffered": 0, "limit": min(FIRST_BUFFER if first_buffer is None else first_buffer, GPU_BUFFER)}
    waiting = {fp: early and cuda and enc.batches() for fp, enc in by_fp.items()}

    def flush(mode: str) -> Iterator[EmbedResult]:
        for fp, enc in by_fp.items():
            if mode == "first" and not waiting[fp]:
                continue
            mine = sorted(pending[fp], key=lambda p: (len(p.wave), p.uid, p.chain_key))
            lengths = [len(p.wave) for p in mine]
            if mode == "first":
                groups, held = first_group(enc, lengths)
            else:
                groups, held = ready_groups(enc, lengths, final=mode == "final")
            waiting[fp] = waiting[fp] and not groups and mode == "first"
            pending[fp] = [mine[i] for i in held]
            cap = min(GPU_BATCH, stats.batch_cap.get(enc.label, GPU_BATCH))
            for call in call_chunks(groups, cap):
                yield from embed_batch(enc, [mine[i] for i in call], stats)
        size["buffered"] = sum(len(v) for v in pending.values())

    with device_scope(device):
        for ready, failed in loaded:
            yield from failed
            for p in ready:
                if not cuda:
                    for fp in p.encoders:
                        yield from embed_batch(by_fp[fp], [p], stats)
                    continue
                for fp in p.encoders:
                    pending[fp].append(p)
                size["buffered"] += 1
            if size["buffered"] >= size["limit"]:
                yield from flush("buffer")
                size["limit"] = GPU_BUFFER
            elif any(waiting.values()):
                yield from flush("first")
        yield from flush("final")


class Executor:
    """Computes :class:`EmbedResult` records for tasks; ``stats`` holds forward times."""

    name = ""

    def __init__(self, *, device: str = "cpu", address: str | None = None, jobs: int | None = None) -> None:
        self.device = device
        self.address = address
        self.stats = ExecStats()
        #: Options every encoder a worker loads gets besides its runtime (e.g. ``{"precision": "bf16"}``).
        self.encoder_options: dict[str, Any] = {}
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


def shards(tasks: Sequence[EmbedTask], size: int) -> list[list[EmbedTask]]:
    """``tasks`` cut into consecutive lists of ``size`` (the last may be shorter)."""
    return [list(tasks[i : i + size]) for i in range(0, len(tasks), size)]
