"""Which inputs share one network call: masked batches cut by a frame budget, padded batches of
similar length, or unpadded batches of equal frame count (by default only off the CPU; the CPU
embeds one waveform at a time)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

#: Default bucket limits for padded batches on CUDA (items, padded samples per batch).
MAX_BATCH_ITEMS = 32
MAX_BATCH_SAMPLES = 32 * 16000 * 10
#: Longest / shortest waveform allowed in one padded batch.
MAX_LENGTH_RATIO = 1.2
#: Masked batches: most ``items × padded frame count`` per call (32 rows of 10 s at 100 frames/s).
MAX_BATCH_FRAMES = 32 * 1000
#: Masked batches: most items per call; the frame budget decides below it (rows of 2 s: 160).
MAX_MASKED_ITEMS = 256
#: Masked batches are padded to a frame bucket: a multiple of FRAME_STEP, each bucket at least
#: BUCKET_RATIO × the one below, so a run meets few (items, frames) shapes (device kernels and
#: plans are reused) at a padding of at most ~(BUCKET_RATIO − 1) per row.
FRAME_STEP = 16
BUCKET_RATIO = 1.08
#: An encoder's ``batch`` option: ``auto`` (batch off the CPU), ``always`` (the CPU too), ``never``.
BATCH_MODES = ("auto", "always", "never")


def _greedy_batches(
    order: Sequence[int], lengths: Sequence[int], max_items: int, max_samples: int, joins: Callable[[int, int], bool]
) -> list[list[int]]:
    """``order`` (lengths ascending within a batch) cut greedily: a batch is filled while
    ``items ≤ max_items``, ``items × longest ≤ max_samples`` and ``joins(first, i)``."""
    batches: list[list[int]] = []
    current: list[int] = []
    for i in order:
        if current and (
            len(current) + 1 > max_items or (len(current) + 1) * lengths[i] > max_samples or not joins(current[0], i)
        ):
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches


def length_buckets(
    lengths: Sequence[int], max_items: int, max_samples: int, max_ratio: float = MAX_LENGTH_RATIO
) -> list[list[int]]:
    """Indices grouped into batches of similar length: sorted by (length, index), a batch is
    filled while ``items ≤ max_items``, ``items × longest ≤ max_samples`` and
    ``longest ≤ max_ratio × shortest`` (an over-long item goes alone)."""
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    return _greedy_batches(
        order, lengths, max_items, max_samples, lambda first, i: lengths[i] <= max_ratio * lengths[first]
    )


def equal_frame_batches(
    frames: Sequence[int], lengths: Sequence[int], max_items: int, max_samples: int
) -> list[list[int]]:
    """Indices grouped into batches of equal frame count, in (frames, length, index) order, with
    the limits of :func:`length_buckets`; nothing is padded or cropped, so a batch's rows are
    what each input gives alone."""
    order = sorted(range(len(frames)), key=lambda i: (frames[i], lengths[i], i))
    return _greedy_batches(order, lengths, max_items, max_samples, lambda first, i: frames[i] == frames[first])


def frame_budget_batches(frames: Sequence[int], max_items: int, max_frames: int) -> list[list[int]]:
    """Indices sorted by (frames, index) and cut greedily: a batch is filled while
    ``items ≤ max_items`` and ``items × longest ≤ max_frames`` (an over-long item goes alone).
    Sorting the whole call's inputs by length keeps the padding of masked batches low."""
    order = sorted(range(len(frames)), key=lambda i: (frames[i], i))
    return _greedy_batches(order, frames, max_items, max_frames, lambda first, i: True)


def frame_bucket(frames: int, step: int = FRAME_STEP, ratio: float = BUCKET_RATIO) -> int:
    """The smallest bucket ≥ ``frames``: buckets are ``step``, then each the larger of the one
    below + ``step`` and the one below × ``ratio``, rounded up to a multiple of ``step``."""
    bucket = step
    while bucket < frames:
        bucket = max(bucket + step, math.ceil(bucket * ratio / step) * step)
    return bucket


def bucket_items(bucket: int, max_items: int, max_frames: int) -> int:
    """Rows of ``bucket`` padded frames in one call: as many as the frame budget holds, ≤ ``max_items``."""
    return max(1, min(max_items, max_frames // bucket))


def bucketed_batches(
    frames: Sequence[int], max_items: int, max_frames: int, step: int = FRAME_STEP, ratio: float = BUCKET_RATIO
) -> list[list[int]]:
    """Indices sorted by (frames, index) cut into batches of shape (items, bucket): from the
    first item left, the smallest bucket whose row count (:func:`bucket_items`) of items all fit
    in it; each batch is that many items, padded to the bucket of its longest, so a batch's
    shape is one of a few per bucket (when the cut steps up a bucket, the rows it takes may all
    fit the bucket below: that batch is the lower bucket with the higher one's row count). The last batch
    holds what is left (fewer rows: the caller may hold it back for the next call,
    :func:`is_full`)."""
    order = sorted(range(len(frames)), key=lambda i: (frames[i], i))
    batches: list[list[int]] = []
    start = 0
    while start < len(order):
        bucket = frame_bucket(frames[order[start]], step, ratio)
        while True:
            n = bucket_items(bucket, max_items, max_frames)
            last = order[min(start + n, len(order)) - 1]
            if frames[last] <= bucket:
                break
            bucket = frame_bucket(bucket + 1, step, ratio)
        batches.append(order[start : start + n])
        start += n
    return batches


def is_full(batch_frames: Sequence[int], max_items: int, max_frames: int) -> bool:
    """Whether a batch of :func:`bucketed_batches` has its bucket's full row count."""
    return len(batch_frames) == bucket_items(frame_bucket(max(batch_frames)), max_items, max_frames)
