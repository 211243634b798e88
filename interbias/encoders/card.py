"""What a label is and where its files live: :class:`EncoderCard`, its on-disk
layouts, the file lookup (option, env var, ``$INTERBIAS_MODELS``) and checkpoint hashing.

``checkpoint_sha256``: the file's sha256 for a one-file checkpoint; for several files,
``sha256("".join(f"{name}\\t{sha256(file)}\\n" for name in sorted(names)))`` over the
folder-relative names, so ``sha256sum`` can recompute it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from interbias.utils.errors import EncoderError
from interbias.utils.seeding import sha256_file

if TYPE_CHECKING:
    from interbias.encoders.base import Encoder

Family = Literal["sv", "ssl", "baseline"]


def env_var(label: str) -> str:
    """Per-label folder override: ``INTERBIAS_MODEL_`` + the label upper-cased, ``+`` spelled
    ``_PLUS``, other non-alphanumerics as ``_`` (``WavLM-Base+`` -> ``INTERBIAS_MODEL_WAVLM_BASE_PLUS``)."""
    key = label.upper().replace("+", "_PLUS_")
    key = re.sub(r"[^A-Z0-9]+", "_", key).strip("_")
    return f"INTERBIAS_MODEL_{key}"


def label_folder(label: str, path: str | Path | None, default: Path) -> Path:
    """The folder a label's files are read from: ``path``, else ``$INTERBIAS_MODEL_<KEY>``
    (:func:`env_var`), else ``default``."""
    if path:
        return Path(path).expanduser()
    env = os.environ.get(env_var(label))
    return Path(env).expanduser() if env else default


#: The reason white-box attacks are refused for an encoder without a differentiable path.
NO_GRADIENT = "it has no differentiable torch path from waveform to embedding"


@dataclass(frozen=True)
class Layout:
    """One on-disk form of a checkpoint: the files it needs and the loader that reads them.

    A file entry ``"a|b"`` accepts either name (the first present is used)."""

    kind: str
    files: tuple[str, ...]
    #: ``loader(card, located, files, device=..., **options)`` -> an :class:`~interbias.encoders.base.Encoder`.
    loader: Callable[..., Any] = field(repr=False, compare=False)
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
    #: (returns an :class:`~interbias.encoders.base.Encoder`; typed Any so that card.py need not import base.py).
    factory: Callable[..., Any] | None = field(default=None, repr=False, compare=False)
    #: The runtime ``auto`` picks on CPU, measured by ``benchmarks/bench_throughput.py`` (CUDA: eager).
    cpu_runtime: str = "eager"
    #: Why white-box attacks cannot run through this encoder; "" when its class has a differentiable
    #: ``torch_embed`` (checked against the loaded encoder by tests/test_encoders_attacks.py).
    no_gradient_reason: str = NO_GRADIENT

    @property
    def env_var(self) -> str:
        return env_var(self.label)

    def folder(self, path: str | Path | None = None) -> Path:
        """The folder this label reads: ``path``, else its env var, else ``$INTERBIAS_MODELS/<label>``."""
        from interbias.utils.paths import models_dir

        return label_folder(self.label, path, models_dir() / self.label)

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


def combined_sha256(files: Mapping[str, str]) -> str:
    """A checkpoint's sha256: the file's own for one file, else sha256 over sorted ``name\\tsha\\n`` lines."""
    if len(files) == 1:
        return next(iter(files.values()))
    text = "".join(f"{name}\t{sha}\n" for name, sha in sorted(files.items()))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def hash_files(folder: Path, names: Sequence[str]) -> dict[str, str]:
    """sha256 of each named file in ``folder`` (folder-relative names)."""
    return {name: sha256_file(folder / name) for name in sorted(names)}


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


def load_from_layouts(card: EncoderCard, *, device: str = "cpu", path: str | None = None, **options: Any) -> Encoder:
    """Locate the card's files, check the options, hash every file, and call the layout's loader."""
    located = card.locate_files(path)
    unknown = sorted(set(options) - set(located.layout.options))
    if unknown:
        valid = ", ".join(("path", *located.layout.options))
        raise EncoderError(f"{card.label}: unknown option(s) {', '.join(unknown)}; valid: {valid}")
    files = hash_files(located.folder, located.files)
    from interbias.encoders.models_lock import enforce

    pinned = enforce(card.label, located.folder, files)  # models.lock, when it describes this folder
    encoder = located.layout.loader(card, located, files, device=device, **options)
    encoder.models_lock = pinned.provenance() if pinned else None
    return encoder
