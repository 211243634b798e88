"""The device side of embedding: cuDNN settings while a device is driven, out-of-memory errors,
and the numeric precision a run asks its encoders for.

- :func:`device_scope`: on CUDA, cuDNN autotuning (``torch.backends.cudnn.benchmark``) is off
  while the driver embeds: batches come in ever-changing shapes, and autotuning would time every
  new shape's kernels again. The earlier setting is restored afterwards.
- :func:`out_of_memory`: whether an exception is ``torch.cuda.OutOfMemoryError`` (without
  importing torch when nothing loaded it).
- :func:`precision_options`: ``--precision fp32|tf32|bf16`` checked and turned into the encoder
  options :func:`interbias.encoders.load_encoders` takes (none for fp32, the default, so an fp32
  run loads its encoders exactly as before).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from interbias.utils.errors import RunError

#: Precisions an encoder may be asked to run in; ``fp32`` is the default.
PRECISIONS = ("fp32", "tf32", "bf16")
DEFAULT_PRECISION = "fp32"


@contextmanager
def device_scope(device: str) -> Iterator[None]:
    """cuDNN autotuning off on CUDA for the duration (restored after); nothing on CPU."""
    if not device.startswith("cuda"):
        yield
        return
    import torch

    before = torch.backends.cudnn.benchmark
    torch.backends.cudnn.benchmark = False
    try:
        yield
    finally:
        torch.backends.cudnn.benchmark = before


def out_of_memory(exc: BaseException) -> bool:
    """True for ``torch.cuda.OutOfMemoryError`` (a device allocation that failed)."""
    torch = sys.modules.get("torch")
    oom = getattr(getattr(torch, "cuda", None), "OutOfMemoryError", None)
    return isinstance(oom, type) and isinstance(exc, oom)


def release_memory(device: str) -> None:
    """Return the cached blocks of torch's CUDA allocator after an out-of-memory error."""
    torch = sys.modules.get("torch")
    if device.startswith("cuda") and torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


def precision_options(
    precision: str, device: str, labels: Sequence[str], executor: str = "local"
) -> dict[str, dict[str, Any]]:
    """Per-label encoder options for ``precision`` (empty for fp32); a value outside
    :data:`PRECISIONS`, tf32 off CUDA, or another precision with an executor that does not
    pass options to its workers is an error (one line)."""
    if precision not in PRECISIONS:
        raise RunError(f"--precision {precision!r}: use {', '.join(PRECISIONS)}")
    if precision == DEFAULT_PRECISION:
        return {}
    if precision == "tf32" and not device.startswith("cuda"):
        raise RunError(f"--precision tf32 is a CUDA mode (TensorFloat-32 matrix units); on {device} use fp32 or bf16")
    if executor != "local":
        raise RunError(f"--precision {precision} is used with --executor local; --executor {executor} embeds in fp32")
    return {label: {"precision": precision} for label in labels}
