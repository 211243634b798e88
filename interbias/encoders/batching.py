"""Which inputs share one network call: masked batches cut by a frame budget, padded batches of
similar length, or unpadded batches of equal frame count (by default only off the CPU; the CPU
embeds one waveform at a time)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

#: Default bucket limits for padded batches on CUDA (items, padded samples per batch).
MAX_BATCH_ITEMS = 32
MAX_BATCH_SAMPLES = 32 * 16000 * 10
#: Longest / shortest waveform allowed in one padded batch.
MAX_LENGTH_RATIO = 1.2
#: Masked batches: most ``items × longest frame count`` per call (32 rows of 10 s at 100 frames/s).
MAX_BATCH_FRAMES = 32 * 1000
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
