"""Where and how an encoder runs: the inference runtime (eager or onnxruntime), the
intra-op thread count, the device check, and optional backend imports that must not
change torch's thread count or leave broken modules behind."""

from __future__ import annotations

import importlib
import os
import sys
import warnings
from typing import TYPE_CHECKING, Any

from interbias.utils.errors import EncoderError
from interbias.utils.paths import threads

if TYPE_CHECKING:
    from interbias.encoders.base import Encoder

#: Inference runtimes: ``eager`` PyTorch, or ``onnxruntime`` on a graph exported from the
#: loaded checkpoint (:mod:`interbias.encoders.ort_runtime`); ``auto`` is the card's measured choice.
RUNTIMES = ("auto", "eager", "onnxruntime")


def optional_import(module: str, label: str, hint: str) -> Any:
    """Import an optional backend package, restoring torch's thread count afterwards.

    A missing or broken package is an :class:`EncoderError` naming the label and the package."""
    import torch

    threads = torch.get_num_threads()
    try:
        return importlib.import_module(module)
    except Exception as exc:
        raise EncoderError(f"{label}: {hint} is not usable here ({type(exc).__name__}: {exc})") from exc
    finally:
        drop_unloadable_lazy_modules()
        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)


def drop_unloadable_lazy_modules() -> list[str]:
    """Remove from ``sys.modules`` speechbrain's lazy proxy modules whose import fails.

    speechbrain registers proxies for optional integrations (k2, flair, ...) whose attribute
    access raises ImportError rather than AttributeError, so anything that walks
    ``sys.modules`` (``inspect.getmodule``, hypothesis) crashes once speechbrain is loaded.
    Returns the names removed."""
    utils = sys.modules.get("speechbrain.utils.importutils")
    lazy = getattr(utils, "LazyModule", None)
    if lazy is None:
        return []
    dropped = []
    with warnings.catch_warnings():  # deprecated-path redirects warn when resolved
        warnings.simplefilter("ignore")
        for name, module in list(sys.modules.items()):
            if isinstance(module, lazy):
                try:
                    getattr(module, "__file__", None)
                except ImportError:
                    del sys.modules[name]
                    dropped.append(name)
    return dropped


def requested_runtime(options: dict[str, Any], default: str | None = None) -> tuple[str, bool]:
    """(runtime, strict): the ``runtime`` option (strict: an encoder without it fails), else
    ``default`` (``interbias run --runtime``), else ``$INTERBIAS_RUNTIME`` (both apply where
    offered), else ``auto``. Pops the option."""
    explicit = options.pop("runtime", None)
    runtime = str(explicit or default or os.environ.get("INTERBIAS_RUNTIME") or "auto")
    if runtime not in RUNTIMES:
        source = "runtime option" if explicit else "--runtime" if default else "INTERBIAS_RUNTIME"
        raise EncoderError(f"{source} {runtime!r}: use {', '.join(RUNTIMES)}")
    return runtime, explicit is not None


def apply_runtime(encoder: Encoder, runtime: str, strict: bool) -> None:
    """Switch ``encoder`` to ``runtime`` (``auto``: the card's CPU choice where offered, else eager)."""
    offered = encoder.device == "cpu" and encoder.onnx_spec() is not None
    if runtime == "auto":
        runtime = encoder.card.cpu_runtime if offered else "eager"
    elif runtime == "onnxruntime" and not offered and not strict:
        runtime = "eager"  # INTERBIAS_RUNTIME applies where offered; provenance says which ran
    if runtime == "onnxruntime":
        from interbias.encoders.ort_runtime import use_onnxruntime

        use_onnxruntime(encoder, default_threads())


def default_threads() -> int:
    """Intra-op threads per process: ``$INTERBIAS_THREADS`` (a positive integer, else one error
    line), else 1. Cores are used by worker processes (``interbias run --jobs``), not threads:
    measured on 2 cores, a second thread per process buys little or loses outright, and CAM++'s
    embeddings change in the last bits with the thread count, so one count everywhere keeps a
    run's bytes independent of the machine's cores and of ``--jobs``."""
    try:
        env = threads()
    except ValueError as exc:
        raise EncoderError(str(exc)) from None
    return env or 1


def restore_threads(n: int | None = None) -> None:
    """Some imports (silero-vad) call ``torch.set_num_threads(1)``; put the count back."""
    import torch

    torch.set_num_threads(n or default_threads())


def check_device(device: str) -> None:
    """Refuse a device this machine cannot give: ``cpu``, or ``cuda[:N]`` with CUDA available."""
    if device == "cpu":
        return
    import torch

    if device.startswith("cuda") and not torch.cuda.is_available():
        raise EncoderError(f"--device {device} requested but CUDA is not available on this machine")
    if not device.startswith("cuda"):
        raise EncoderError(f"--device {device!r}: use cpu or cuda[:N]")
