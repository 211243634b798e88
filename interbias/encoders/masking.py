"""Length masks for mixed-length batches: rows padded at the end to the longest, each with its
own count of valid frames along the last axis. Every reduction here runs over a row's valid
frames only, so a row's result equals what the row alone (unpadded) gives, float rounding aside.
Reductions accumulate in float32 at least (bfloat16 inputs under autocast: frame counts and
sums beyond 256 are not exact in bfloat16)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch


def length_mask(lengths: torch.Tensor, frames: int) -> torch.Tensor:
    """(N, frames) bool: ``mask[i, t] = t < lengths[i]``."""
    return torch.arange(frames, device=lengths.device).unsqueeze(0) < lengths.unsqueeze(1)


def pad_rows(rows: Sequence[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """(N, T_max, …) zero-padded stack of (T_i, …) tensors and the (N,) int64 lengths T_i."""
    lengths = torch.tensor([r.shape[0] for r in rows], dtype=torch.int64, device=rows[0].device)
    return torch.nn.utils.rnn.pad_sequence(list(rows), batch_first=True), lengths


def wide(x: torch.Tensor) -> torch.Tensor:
    """``x`` in float32 when it is in a narrower float type, else as it is."""
    return x.float() if x.dtype in (torch.bfloat16, torch.float16) else x


def masked_mean(x: torch.Tensor, mask: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Mean over the last axis of (N, …, T) ``x`` over each row's valid frames: Σ_valid x / L_i."""
    x = wide(x)
    shape = (-1,) + (1,) * (x.dim() - 2)
    weights = mask.to(x.dtype).view(mask.shape[0], *([1] * (x.dim() - 2)), mask.shape[1])
    return (x * weights).sum(-1) / lengths.to(x.dtype).view(shape)


def masked_std(
    x: torch.Tensor, mask: torch.Tensor, lengths: torch.Tensor, mean: torch.Tensor, *, unbiased: bool
) -> torch.Tensor:
    """Standard deviation over the last axis, valid frames only, two-pass:
    √(Σ_valid (x − mean)² / (L_i − 1)) with ``unbiased``, else / L_i. NaN where L_i − 1 = 0."""
    x = wide(x)
    shape = (-1,) + (1,) * (x.dim() - 2)
    weights = mask.to(x.dtype).view(mask.shape[0], *([1] * (x.dim() - 2)), mask.shape[1])
    dev = (x - mean.unsqueeze(-1)) * weights
    denom = lengths.to(x.dtype) - (1 if unbiased else 0)
    return ((dev * dev).sum(-1) / denom.view(shape)).sqrt()


def segment_means(x: torch.Tensor, lengths: torch.Tensor, segment: int) -> torch.Tensor:
    """(N, C, S) means of (N, C, T) ``x`` over consecutive ``segment``-frame segments, each over
    its valid frames (a row's last partial segment over its own frames, as ``avg_pool1d`` with
    ``ceil_mode=True`` averages an unpadded row); S = ⌈T / segment⌉, segments past a row's end 0.
    ``x`` must be zero at padded frames."""
    x = wide(x)
    n, c, t = x.shape
    s = -(-t // segment)
    sums = torch.nn.functional.pad(x, (0, s * segment - t)).view(n, c, s, segment).sum(-1)
    starts = torch.arange(s, device=x.device).unsqueeze(0) * segment
    counts = (lengths.unsqueeze(1) - starts).clamp(min=0, max=segment)  # (N, S)
    return sums / counts.clamp(min=1).to(x.dtype).unsqueeze(1)


@dataclass(frozen=True)
class FrameMasks:
    """One batch's masks at one frame rate, computed once and passed to every layer:
    ``weights`` (N, 1, T) 1.0 at valid frames, 0.0 at padding; ``lengths`` (N,) valid frames;
    ``context`` (N, T, S) the matrix whose product with (N, C, T) ``x`` zeroed at padding is
    the valid-frame mean of each row plus the mean of each ``segment``-frame segment over its
    valid frames (a row's last partial segment over its own frames, segments past its end 0:
    :func:`masked_mean` + :func:`segment_means` as one matrix product); ``index`` (T,) the
    segment of each frame."""

    weights: torch.Tensor
    lengths: torch.Tensor
    context: torch.Tensor
    index: torch.Tensor

    @classmethod
    def of(cls, lengths: torch.Tensor, frames: int, segment: int, dtype: torch.dtype) -> FrameMasks:
        device = lengths.device
        t = torch.arange(frames, device=device)
        valid = (t.unsqueeze(0) < lengths.unsqueeze(1)).to(torch.float32)  # (N, T)
        index = torch.div(t, segment, rounding_mode="floor")
        s = -(-frames // segment)
        starts = torch.arange(s, device=device).unsqueeze(0) * segment
        counts = (lengths.unsqueeze(1) - starts).clamp(min=0, max=segment).clamp(min=1)  # (N, S)
        member = (index.unsqueeze(1) == torch.arange(s, device=device).unsqueeze(0)).to(torch.float32)  # (T, S)
        per_row = valid.unsqueeze(2) * member.unsqueeze(0) / counts.unsqueeze(1).to(torch.float32)
        context = per_row + (valid / lengths.clamp(min=1).unsqueeze(1).to(torch.float32)).unsqueeze(2)
        return cls(valid.unsqueeze(1).to(dtype), lengths, context, index)

    def mean_and_segments(self, x: torch.Tensor) -> torch.Tensor:
        """(N, C, S) valid-frame mean + segment mean of (N, C, T) ``x`` zeroed at padding, in
        float32 (outside autocast: frame counts beyond 256 are not exact in bfloat16)."""
        with torch.autocast(x.device.type, enabled=False):
            return torch.bmm(wide(x), self.context)


def padded_waves(waves: Sequence[np.ndarray], device: str) -> tuple[torch.Tensor, list[int]]:
    """(N, T_max) float32 zero-padded waveforms on ``device`` (built in page-locked host memory
    and copied asynchronously when ``device`` is CUDA) and their lengths in samples."""
    lengths = [int(w.size) for w in waves]
    host = torch.zeros(len(waves), max(lengths), dtype=torch.float32, pin_memory=device.startswith("cuda"))
    for i, w in enumerate(waves):
        host[i, : w.size] = torch.from_numpy(np.asarray(w, dtype=np.float32))
    return host.to(device, non_blocking=True), lengths
