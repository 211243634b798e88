"""Speaker encoders: a registry of labels, each building a frozen model from local files only.

An encoder maps 16 kHz float32 mono waveforms to L2-normalised embeddings. It proves which
model ran with the sha256 of every file it loaded and a fingerprint that keys the embedding
cache. A label never resolves to another model: missing, corrupt or mismatched files raise one
:class:`EncoderError` naming the label, the folder and the files expected. Nothing is
downloaded and nothing falls back to another checkpoint.

Where a label's files live: ``options["path"]``, else ``$INTERBIAS_MODEL_<KEY>`` (see
:func:`env_var`), else ``$INTERBIAS_MODELS/<label>/`` (:func:`interbias.utils.paths.models_dir`).

Modules: :mod:`~interbias.encoders.card` (what a label is, file lookup, hashing),
:mod:`~interbias.encoders.base` (the :class:`Encoder` base class), ``batching``, ``runtime``
(runtime, threads, device, optional imports); all their public names are re-exported here.
"""

# ruff: noqa: F401  (the names imported below are this package's public face, re-exported)
from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

from interbias.encoders.base import Encoder, freeze, load_problem, load_reason, probe_wave
from interbias.encoders.batching import (
    BATCH_MODES,
    MAX_BATCH_FRAMES,
    MAX_BATCH_ITEMS,
    MAX_BATCH_SAMPLES,
    MAX_LENGTH_RATIO,
    equal_frame_batches,
    frame_budget_batches,
    length_buckets,
)
from interbias.encoders.card import (
    EncoderCard,
    Family,
    Layout,
    Located,
    combined_sha256,
    env_var,
    hash_files,
    load_from_layouts,
    overlap_warning,
)
from interbias.encoders.precision import PRECISIONS, check_precision, precision_scope
from interbias.encoders.runtime import (
    RUNTIMES,
    apply_runtime,
    check_device,
    default_threads,
    drop_unloadable_lazy_modules,
    optional_import,
    requested_runtime,
    restore_threads,
)
from interbias.utils.errors import EncoderError, see_docs
from interbias.utils.registry import Registry
from interbias.utils.seeding import sha256_file

ENCODERS: Registry[EncoderCard] = Registry("encoder", EncoderError)


def register(card: EncoderCard) -> EncoderCard:
    ENCODERS.register(card.label)(card)
    return card


def load_encoder(
    label: str, *, device: str = "cpu", options: dict[str, Any] | None = None, runtime: str | None = None
) -> Encoder:
    """Build the encoder registered as ``label`` (exact name) on ``device``, switch it to its
    runtime (:func:`requested_runtime`, ``runtime`` its default) and check its dimension.
    ``LABEL+orca:REF`` is a repaired encoder (:mod:`interbias.encoders.orca`).

    Options every encoder takes: ``batch`` (``auto``: batch off the CPU, ``always``, ``never``;
    :attr:`Encoder.batch_mode`) and ``precision`` (``fp32``, ``tf32``, ``bf16``;
    :mod:`~interbias.encoders.precision`; other than fp32 it runs the eager module)."""
    if "+orca:" in label:
        from interbias.encoders.orca import load_repaired

        return load_repaired(label, device=device, options=options, runtime=runtime)
    card = ENCODERS.get(label)
    factory = card.factory or load_from_layouts
    options = dict(options or {})
    batch = str(options.pop("batch", "auto"))
    precision = check_precision(str(options.pop("precision", "fp32")))
    runtime, strict = requested_runtime(options, runtime)
    if precision != "fp32" and runtime != "eager":
        if strict and runtime == "onnxruntime":
            raise EncoderError(f"{label}: precision {precision} needs the eager runtime (onnxruntime runs float32)")
        runtime = "eager"
    params = inspect.signature(factory).parameters
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        valid = [n for n, p in params.items() if p.kind is inspect.Parameter.KEYWORD_ONLY and n != "device"]
        unknown = sorted(set(options) - set(valid))
        if unknown:
            raise EncoderError(
                f"{label}: unknown option(s) {', '.join(unknown)}; valid: {', '.join(valid) or '(none)'}"
            )
    encoder = factory(card, device=device, **options)
    encoder.set_batching(batch)
    encoder.precision = precision
    apply_runtime(encoder, runtime, strict)
    encoder.check_dimension()
    return encoder


def load_encoders(
    labels: Sequence[str],
    device: str,
    options: dict[str, dict[str, Any]] | None = None,
    runtime: str | None = None,
) -> list[Encoder]:
    """Load every requested encoder (with its ``options``; ``runtime``: the runtime where an
    encoder offers it and its options name none), or fail listing every one that is unavailable."""
    check_device(device)
    encoders, problems = [], []
    for label in labels:
        try:
            encoders.append(load_encoder(label, device=device, options=(options or {}).get(label), runtime=runtime))
        except EncoderError as exc:
            problems.append(str(exc))
    restore_threads()
    if problems:
        raise EncoderError("unavailable encoder(s): " + "; ".join(problems) + f"; {see_docs('encoders')}")
    seen: dict[str, str] = {}
    for given, e in zip(labels, encoders, strict=True):
        if e.label in seen:  # a repaired encoder's adapter named two ways is one encoder
            raise EncoderError(f"encoder {e.label} is listed twice ({seen[e.label]!r} and {given!r})")
        seen[e.label] = given
    return encoders


from interbias.encoders import campplus as _campplus  # noqa: E402
from interbias.encoders import ge2e as _ge2e  # noqa: E402
from interbias.encoders import mfcc_stats as _mfcc_stats  # noqa: E402
from interbias.encoders import registered as _registered  # noqa: E402
