"""Speaker encoders: a registry of labels, each building a frozen model from local files only.

An encoder maps 16 kHz float32 mono waveforms to L2-normalised embeddings. It proves which
model ran with the sha256 of every file it loaded and a fingerprint that keys the embedding
cache. A label never resolves to another model: missing, corrupt or mismatched files raise one
:class:`EncoderError` naming the label, the folder and the files expected. Nothing is
downloaded and nothing falls back to another checkpoint.

Where a label's files live: ``options["path"]``, else ``$INTERBIAS_MODEL_<KEY>`` (see
:func:`env_var`), else ``$INTERBIAS_MODELS/<label>/`` (:func:`interbias.paths.models_dir`).

``checkpoint_sha256``: the file's sha256 for a one-file checkpoint; for several files,
``sha256("".join(f"{name}\\t{sha256(file)}\\n" for name in sorted(names)))`` over the
folder-relative names, so ``sha256sum`` can recompute it.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import os
import re
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np

from interbias.errors import EncoderError
from interbias.paths import threads
from interbias.registry import Registry
from interbias.seeding import canonical_json, derive_rng, sha256_file

Family = Literal["sv", "ssl", "baseline"]
#: Inference runtimes: ``eager`` PyTorch, or ``onnxruntime`` on a graph exported from the
#: loaded checkpoint (:mod:`interbias.encoders.ort_runtime`); ``auto`` is the card's measured choice.
RUNTIMES = ("auto", "eager", "onnxruntime")

#: Default bucket limits for padded batches on CUDA (items, padded samples per batch).
MAX_BATCH_ITEMS = 32
MAX_BATCH_SAMPLES = 32 * 16000 * 10
#: Longest / shortest waveform allowed in one padded batch.
MAX_LENGTH_RATIO = 1.2


def env_var(label: str) -> str:
    """Per-label folder override: ``INTERBIAS_MODEL_`` + the label upper-cased, ``+`` spelled
    ``_PLUS``, other non-alphanumerics as ``_`` (``WavLM-Base+`` -> ``INTERBIAS_MODEL_WAVLM_BASE_PLUS``)."""
    key = label.upper().replace("+", "_PLUS_")
    key = re.sub(r"[^A-Z0-9]+", "_", key).strip("_")
    return f"INTERBIAS_MODEL_{key}"


@dataclass(frozen=True)
class Layout:
    """One on-disk form of a checkpoint: the files it needs and the loader that reads them.

    A file entry ``"a|b"`` accepts either name (the first present is used)."""

    kind: str
    files: tuple[str, ...]
    loader: Callable[..., Encoder] = field(repr=False, compare=False)
    #: Importable module the loader needs; checked without importing it.
    requires: str | None = None
    requires_hint: str = ""
    #: Loader options a user may pass (besides ``path``).
    options: tuple[str, ...] = ()

    def describe(self) -> str:
        return " + ".join(f.replace("|", " or ") for f in self.files)


@dataclass(frozen=True)
class Located:
    """Where a label's checkpoint was found: folder, layout, resolved file names."""

    folder: Path
    layout: Layout
    files: tuple[str, ...]


@dataclass(frozen=True)
class EncoderCard:
    """What a label is: family, backend, input, dimension, where its files live, what it was trained on."""

    label: str
    family: Family
    backend: str
    embedding_dim: int | None
    sample_rate_hz: int = 16000
    features: str = "waveform"
    #: Corpora the checkpoint was trained on (for the overlap warning), when known.
    trained_on: tuple[str, ...] = ()
    description: str = ""
    #: The public checkpoint to fetch (README "Encoders").
    checkpoint: str = ""
    #: Alternative on-disk forms, tried in order; empty for packaged or weight-free encoders.
    layouts: tuple[Layout, ...] = ()
    #: Architecture facts a backend checks so that the label cannot load another model.
    expect: Mapping[str, Any] = field(default_factory=dict, compare=False)
    #: Builds the encoder: ``factory(card, device=..., **options)``; defaults to the layouts.
    factory: Callable[..., Encoder] | None = field(default=None, repr=False, compare=False)
    #: The runtime ``auto`` picks on CPU, measured by ``benchmarks/bench_throughput.py`` (CUDA: eager).
    cpu_runtime: str = "eager"

    @property
    def env_var(self) -> str:
        return env_var(self.label)

    def folder(self, path: str | Path | None = None) -> Path:
        """The folder this label reads: ``path``, else its env var, else ``$INTERBIAS_MODELS/<label>``."""
        from interbias.paths import models_dir

        if path:
            return Path(path).expanduser()
        env = os.environ.get(self.env_var)
        return Path(env).expanduser() if env else models_dir() / self.label

    def expected(self) -> str:
        return " or ".join(f"[{layout.describe()}]" for layout in self.layouts)

    def error(self, folder: Path | str, message: str) -> EncoderError:
        """One error naming the label, the folder and the files expected."""
        return EncoderError(f"{self.label}: {message} in {folder} (expected {self.expected()})")

    def locate_files(self, path: str | Path | None = None) -> Located:
        """The first complete layout whose required package is installed; else one error."""
        folder = self.folder(path)
        if not folder.is_dir():
            raise EncoderError(
                f"{self.label}: model folder {folder} does not exist (expected {self.expected()}; "
                f"place the files there, or set {self.env_var} or INTERBIAS_MODELS)"
            )
        problems = []
        for layout in self.layouts:
            resolved, missing = [], []
            for entry in layout.files:
                names = entry.split("|")
                hit = next((n for n in names if (folder / n).is_file()), None)
                if hit is None:
                    missing.append(entry.replace("|", " or "))
                else:
                    resolved.append(hit)
            if missing:
                problems.append(f"{layout.kind}: missing {', '.join(missing)}")
                continue
            if layout.requires and importlib.util.find_spec(layout.requires) is None:
                problems.append(f"{layout.kind}: {layout.requires_hint or layout.requires} is not installed")
                continue
            return Located(folder, layout, tuple(resolved))
        raise self.error(folder, "; ".join(problems))

    def locate(self) -> str:
        """The source this label would load; raises :class:`EncoderError` when it is missing."""
        if not self.layouts:
            return "builtin"
        return str(self.locate_files().folder)

    def status(self) -> tuple[bool, str, str]:
        """(available, reason when not, source path)."""
        try:
            source = self.locate()
        except EncoderError as exc:
            return False, str(exc), ""
        return True, "", source


ENCODERS: Registry[EncoderCard] = Registry("encoder", EncoderError)


def register(card: EncoderCard) -> EncoderCard:
    ENCODERS.register(card.label)(card)
    return card


def combined_sha256(files: Mapping[str, str]) -> str:
    """A checkpoint's sha256: the file's own for one file, else sha256 over sorted ``name\\tsha\\n`` lines."""
    if len(files) == 1:
        return next(iter(files.values()))
    text = "".join(f"{name}\t{sha}\n" for name, sha in sorted(files.items()))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def hash_files(folder: Path, names: Sequence[str]) -> dict[str, str]:
    """sha256 of each named file in ``folder`` (folder-relative names)."""
    return {name: sha256_file(folder / name) for name in sorted(names)}


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


def probe_wave(seconds: float = 1.0, rate: int = 16000) -> np.ndarray:
    """A fixed voiced-like probe signal (harmonics of 140 Hz plus derived noise) for shape checks."""
    t = np.arange(int(seconds * rate)) / rate
    wave = sum(np.sin(2 * np.pi * 140 * k * t) / k for k in range(1, 12))
    wave = 0.1 * wave + 0.01 * derive_rng("encoder-probe", rate).standard_normal(t.size)
    return wave.astype(np.float32)


class Encoder:
    """A loaded, frozen encoder. Subclasses implement :meth:`_embed_one` and, when the model
    takes padding masks, :meth:`_embed_batch` with ``supports_padding = True``."""

    #: Bump when the embedding computation of a backend changes (invalidates the cache).
    code_version = 1
    #: Whether :meth:`_embed_batch` handles padded batches (used on CUDA only).
    supports_padding: ClassVar[bool] = False
    #: Whether :meth:`_embed_batch` stacks inputs of equal :meth:`frame_count` (models without
    #: padding masks, e.g. CAM++: no padding, so a batch computes what one at a time does;
    #: used on CUDA only).
    batches_equal_frames: ClassVar[bool] = False
    #: The models.lock pin the files were checked against (repo, commit, digest), if any.
    models_lock: dict[str, str] | None = None

    def __init__(
        self,
        card: EncoderCard,
        *,
        source: str,
        checkpoint_sha256: str,
        device: str = "cpu",
        config: dict[str, Any] | None = None,
        files: Mapping[str, str] | None = None,
    ) -> None:
        self.card = card
        self.source = source
        self.checkpoint_sha256 = checkpoint_sha256
        self.device = device
        self.config = dict(config or {})
        self.files = dict(files or {})
        self.forward_calls = 0
        #: Network calls (a batch counts once); forward_calls counts embeddings.
        self.batch_calls = 0
        self.max_batch_items = MAX_BATCH_ITEMS
        self.max_batch_samples = MAX_BATCH_SAMPLES
        #: The network's forward (the torch module, or an onnxruntime session in its place).
        self.net: Any = None
        self.runtime = "eager"
        #: Versions the runtime's numbers depend on (fingerprinted unless eager) and its graph file.
        self.runtime_config: dict[str, Any] = {}
        self.runtime_graph: dict[str, str] = {}

    @property
    def label(self) -> str:
        return self.card.label

    @property
    def family(self) -> str:
        return self.card.family

    @property
    def fingerprint(self) -> str:
        """sha256 (16 hex) of label, backend, code version, checkpoint hash and config.

        The device is excluded: CPU and CUDA embeddings of one checkpoint share cache keys
        only when they agree (checked by ``benchmarks/gpu_check.sh``). Padded batching (CUDA,
        models with masks) changes embeddings slightly, so it gets its own keys."""
        payload: dict[str, Any] = {
            "label": self.card.label,
            "backend": self.card.backend,
            "code": self.code_version,
            "checkpoint": self.checkpoint_sha256,
            "config": self.config,
        }
        if self.runtime != "eager":
            payload["runtime"] = {"name": self.runtime, **self.runtime_config}
        if self.batches() and self.supports_padding:
            payload["padded_batches"] = [self.max_batch_items, self.max_batch_samples, MAX_LENGTH_RATIO]
        elif self.batches():
            payload["equal_frame_batches"] = [self.max_batch_items, self.max_batch_samples]
        return hashlib.sha256(canonical_json(payload).encode()).hexdigest()[:16]

    def batches(self) -> bool:
        """Whether :meth:`embed` batches: only on CUDA, and only with padding masks or for models
        that stack inputs of equal frame count."""
        return self.device != "cpu" and (self.supports_padding or self.batches_equal_frames)

    def frame_count(self, n_samples: int) -> int:
        """Frames the network sees for ``n_samples`` samples (encoders with ``batches_equal_frames``)."""
        raise NotImplementedError

    def batch_groups(self, lengths: Sequence[int]) -> list[list[int]]:
        """Indices of one :meth:`embed` call grouped into the batches the network gets."""
        if not self.supports_padding:
            frames = [self.frame_count(n) for n in lengths]
            return equal_frame_batches(frames, lengths, self.max_batch_items, self.max_batch_samples)
        return length_buckets(lengths, self.max_batch_items, self.max_batch_samples)

    def embed(self, waves: Sequence[np.ndarray]) -> np.ndarray:
        """(N, D) float32 L2-normalised embeddings of 16 kHz float32 waveforms.

        On CPU each waveform is embedded on its own, so an embedding never depends on which
        other utterances shared its batch (byte-identical reruns and resumes). On CUDA, models
        that take padding masks get batches of similar length (:func:`length_buckets`)."""
        arrays = [np.ascontiguousarray(w, dtype=np.float32).reshape(-1) for w in waves]
        raw: list[np.ndarray | None] = [None] * len(arrays)
        if self.batches() and len(arrays) > 1:
            for idx in self.batch_groups([a.size for a in arrays]):
                self.batch_calls += 1
                out = self._embed_batch([arrays[i] for i in idx])
                for i, e in zip(idx, out, strict=True):
                    raw[i] = e
        else:
            for i, a in enumerate(arrays):
                self.batch_calls += 1
                raw[i] = self._embed_one(a)
        out = []
        for e in raw:
            v = np.asarray(e, dtype=np.float32).reshape(-1)
            self.forward_calls += 1
            if not np.isfinite(v).all():
                raise EncoderError(f"{self.label}: produced a non-finite embedding")
            norm = float(np.linalg.norm(v))
            if norm == 0.0:
                raise EncoderError(f"{self.label}: produced an all-zero embedding")
            out.append(v / norm)
        if not out:
            return np.zeros((0, self.card.embedding_dim or 0), dtype=np.float32)
        return np.stack(out).astype(np.float32)

    def _embed_one(self, wave: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def onnx_spec(self) -> Any:
        """How to export the network for runtime onnxruntime (an ``ort_runtime.OnnxSpec``);
        None where that runtime is not offered."""
        return None

    def runtime_provenance(self) -> dict[str, Any]:
        import torch

        if self.runtime == "eager":
            return {"name": "eager", "torch": torch.__version__}
        return {"name": self.runtime, **self.runtime_config, "graph": dict(self.runtime_graph)}

    def _embed_batch(self, waves: list[np.ndarray]) -> list[np.ndarray]:
        return [self._embed_one(w) for w in waves]

    def check_dimension(self) -> None:
        """Embed :func:`probe_wave` once and compare the dimension with the card's."""
        want = self.card.embedding_dim
        if want is None:
            return
        got = np.asarray(self._embed_one(probe_wave())).reshape(-1).size
        if got != want:
            raise EncoderError(
                f"{self.label}: the checkpoint in {self.source} gives {got}-dimensional embeddings; "
                f"{self.label} is {want}-dimensional (expected {self.card.expected() or 'its packaged weights'})"
            )

    def provenance(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "family": self.family,
            "backend": self.card.backend,
            "source": self.source,
            "checkpoint_sha256": self.checkpoint_sha256,
            "files": [{"path": name, "sha256": sha} for name, sha in sorted(self.files.items())],
            "fingerprint": self.fingerprint,
            "embedding_dim": self.card.embedding_dim,
            "config": self.config,
            "trained_on": list(self.card.trained_on),
            **({"models_lock": self.models_lock} if self.models_lock else {}),
            "runtime": self.runtime_provenance(),
        }


def load_reason(exc: BaseException) -> str:
    """``Type: first sentence`` of an error raised while reading a checkpoint file, e.g.
    ``RuntimeError: PytorchStreamReader failed reading zip archive: not a ZIP archive`` (torch
    appends advice in further sentences)."""
    line = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), "")
    sentence = line.split(". ")[0].rstrip(".")
    return f"{type(exc).__name__}: {sentence}" if sentence else type(exc).__name__


def load_problem(exc: BaseException) -> str:
    """One line for a failed ``load_state_dict``: torch's header plus its first detail (which
    parameter, which shapes), e.g. ``Error(s) in loading state_dict for ResNet: size mismatch
    for seg_1.weight: copying a param with shape torch.Size([8, 5120]) from checkpoint, the
    shape in current model is torch.Size([10, 5120]). (+1 more)``."""
    lines = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
    if not lines:
        return type(exc).__name__
    head, details = lines[0], lines[1:]
    if not details:
        return head
    more = f" (+{len(details) - 1} more)" if len(details) > 1 else ""
    return f"{head} {details[0][:300]}{more}"


def freeze(model: Any, device: str) -> Any:
    """Eval mode, no gradients, on ``device``."""
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model.to(device)


def load_from_layouts(card: EncoderCard, *, device: str = "cpu", path: str | None = None, **options: Any) -> Encoder:
    """Locate the card's files, check the options, hash every file, and call the layout's loader."""
    located = card.locate_files(path)
    unknown = sorted(set(options) - set(located.layout.options))
    if unknown:
        valid = ", ".join(("path", *located.layout.options))
        raise EncoderError(f"{card.label}: unknown option(s) {', '.join(unknown)}; valid: {valid}")
    files = hash_files(located.folder, located.files)
    from interbias.encoders.lock import enforce

    pinned = enforce(card.label, located.folder, files)  # models.lock, when it describes this folder
    encoder = located.layout.loader(card, located, files, device=device, **options)
    encoder.models_lock = pinned.provenance() if pinned else None
    return encoder


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


def load_encoder(
    label: str, *, device: str = "cpu", options: dict[str, Any] | None = None, runtime: str | None = None
) -> Encoder:
    """Build the encoder registered as ``label`` (exact name) on ``device``, switch it to its
    runtime (:func:`requested_runtime`, ``runtime`` its default) and check its dimension.
    ``LABEL+orca:REF`` is a repaired encoder (:mod:`interbias.encoders.orca`)."""
    if "+orca:" in label:
        from interbias.encoders.orca import load_repaired

        return load_repaired(label, device=device, options=options, runtime=runtime)
    card = ENCODERS.get(label)
    factory = card.factory or load_from_layouts
    options = dict(options or {})
    runtime, strict = requested_runtime(options, runtime)
    params = inspect.signature(factory).parameters
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        valid = [n for n, p in params.items() if p.kind is inspect.Parameter.KEYWORD_ONLY and n != "device"]
        unknown = sorted(set(options) - set(valid))
        if unknown:
            raise EncoderError(
                f"{label}: unknown option(s) {', '.join(unknown)}; valid: {', '.join(valid) or '(none)'}"
            )
    encoder = factory(card, device=device, **options)
    apply_runtime(encoder, runtime, strict)
    encoder.check_dimension()
    return encoder


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
        raise EncoderError("unavailable encoder(s): " + "; ".join(problems))
    if len({e.label for e in encoders}) != len(encoders):
        raise EncoderError("an encoder label is listed twice")
    return encoders


def _corpus_key(name: str) -> str:
    return re.sub(r"\d+$", "", re.sub(r"[^a-z0-9]", "", name.lower()))


def overlap_warning(card: EncoderCard, dataset: str) -> str:
    """Non-empty when the evaluation corpus is one the encoder was trained on (corpus names
    compared lower-case, alphanumerics only, trailing version digits dropped: VoxCeleb2 ~ voxceleb1)."""
    key = _corpus_key(dataset)
    hits = [c for c in card.trained_on if key and _corpus_key(c) == key]
    if not hits:
        return ""
    return f"{card.label} was trained on {', '.join(hits)}; evaluated on {dataset}"


from interbias.encoders import campplus as _campplus  # noqa: E402,F401
from interbias.encoders import catalog as _catalog  # noqa: E402,F401
from interbias.encoders import ge2e as _ge2e  # noqa: E402,F401
from interbias.encoders import mfcc_stats as _mfcc_stats  # noqa: E402,F401
