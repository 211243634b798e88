"""An encoder's arithmetic precision (``precision`` option): ``fp32`` (default: IEEE float32
matmuls and convolutions, TF32 off), ``tf32`` (float32 tensors, TensorFloat-32 matmuls and
cuDNN convolutions/RNNs on GPUs that have it; no effect on CPU), ``bf16`` (autocast to
bfloat16 on the encoder's device type). Applied around each network call and restored after,
so other code in the process keeps its settings. A precision other than fp32 enters the
encoder fingerprint (its own cache keys) and runs the eager module (onnxruntime has no such
setting)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

from interbias.utils.errors import EncoderError

PRECISIONS = ("fp32", "tf32", "bf16")


def check_precision(precision: str) -> str:
    if precision not in PRECISIONS:
        raise EncoderError(f"precision {precision!r}: use {', '.join(PRECISIONS)}")
    return precision


def _backends() -> list[object]:
    """The float32-precision switches a network call reads (cuBLAS matmul, cuDNN conv and RNN)."""
    return [torch.backends.cuda.matmul, torch.backends.cudnn.conv, torch.backends.cudnn.rnn]


@contextmanager
def precision_scope(precision: str, device: str) -> Iterator[None]:
    """Run the block at ``precision`` on ``device`` (``cpu``, ``cuda[:N]``); restores the
    process's TF32 switches afterwards."""
    switches = _backends()
    saved = [s.fp32_precision for s in switches]  # type: ignore[attr-defined]
    mode = "tf32" if precision == "tf32" else "ieee"
    for s in switches:
        s.fp32_precision = mode  # type: ignore[attr-defined]
    try:
        if precision == "bf16":
            with torch.autocast(device_type=device.split(":")[0], dtype=torch.bfloat16):
                yield
        else:
            yield
    finally:
        for s, value in zip(switches, saved, strict=True):
            s.fp32_precision = value  # type: ignore[attr-defined]
