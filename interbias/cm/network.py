"""A ResNet18-<frontend> CM: a frozen front end feeding a trainable ResNet-18, and its seeded
initialisation (no global random generator: every tensor is drawn from a generator derived
from the seed and the parameter's name)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from interbias.cm.frontends import SSL_FRONTENDS, build_frontend
from interbias.cm.resnet import ResNet18
from interbias.utils.errors import EncoderError
from interbias.utils.seeding import derive_rng


class CMNetwork(nn.Module):
    """``forward(wave)``: (batch, n_samples) → logits (batch, 2); ``features`` + ``classifier``."""

    def __init__(self, frontend: nn.Module, classifier: nn.Module) -> None:
        super().__init__()
        self.frontend = frontend
        self.classifier = classifier

    def features(self, wave: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return self.frontend(wave)

    def forward(self, wave: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(wave))


def frontend_sha256(folder: Path) -> str:
    """sha256 of an SSL front-end folder: the combined hash of its files (encoder rule)."""
    from interbias.encoders import combined_sha256, hash_files

    names = sorted(p.name for p in Path(folder).iterdir() if p.is_file())
    return combined_sha256(hash_files(Path(folder), names))


def build_network(
    label: str, cfg: dict[str, Any], frontend_folder: Any, *, expect_frontend_sha256: str | None = None
) -> CMNetwork:
    """The network of ``label`` (``ResNet18-<frontend>`` or ``LCNN-<frontend>``) with config
    ``cfg`` (``width``; ``n_classes``, default 2)."""
    fe_name = label.split("-", 1)[1]
    folder = Path(frontend_folder).expanduser() if frontend_folder else None
    if fe_name in SSL_FRONTENDS and folder is not None and expect_frontend_sha256:
        got = frontend_sha256(folder) if folder.is_dir() else "absent"
        if got != expect_frontend_sha256:
            raise EncoderError(
                f"{label}: front-end folder {folder} (sha256 {got[:16]}) is not the one the checkpoint was "
                f"trained with ({expect_frontend_sha256[:16]}); give it with --frontend-path"
            )
    try:
        frontend = build_frontend(fe_name, folder)
    except EncoderError as exc:  # the front end's messages name the ResNet label
        raise EncoderError(str(exc).replace(f"ResNet18-{fe_name}", label)) from None
    n_classes = int(cfg.get("n_classes", 2))
    if label.startswith("LCNN-"):
        from interbias.cm.lcnn import LCNN

        with torch.no_grad():
            n_freq = int(frontend(torch.zeros(1, 16000)).shape[1])
        return CMNetwork(frontend, LCNN(n_freq, width=int(cfg.get("width", 64)), n_classes=n_classes))
    return CMNetwork(frontend, ResNet18(width=int(cfg.get("width", 64)), n_classes=n_classes))


def aasist_network(label: str, n_samples: int) -> CMNetwork:
    """AASIST or AASIST-L (:mod:`interbias.cm.aasist`) for training: the waveform is its own
    feature (the sinc filters are fixed), every parameter is trained."""
    import dataclasses

    from interbias.cm.aasist import AASIST, AASIST_L, AASISTConfig

    cfg = AASIST_L if label == "AASIST-L" else AASISTConfig()
    return CMNetwork(nn.Identity(), AASIST(dataclasses.replace(cfg, n_samples=int(n_samples))))


def seeded_init(module: nn.Module, seed: int) -> None:
    """He-normal (fan-out) convolutions, U(±1/√fan_in) linear layers, unit batch-norm scales,
    zero biases, standard-normal 3-D tensors (AASIST's positional and master nodes); each
    tensor from ``derive_rng("cm-init", seed, name)``."""
    for name, p in module.named_parameters():
        rng = derive_rng("cm-init", seed, name)
        shape = tuple(p.shape)
        if name.endswith("bias"):
            value = np.zeros(shape)
        elif p.dim() == 4:  # conv: kaiming normal, fan_out, ReLU gain
            fan_out = shape[0] * shape[2] * shape[3]
            value = rng.normal(0.0, np.sqrt(2.0 / fan_out), shape)
        elif p.dim() == 2:  # linear
            bound = 1.0 / np.sqrt(shape[1])
            value = rng.uniform(-bound, bound, shape)
        elif p.dim() == 3:  # AASIST's positional embedding and master nodes
            value = rng.standard_normal(shape)
        else:  # batch-norm scale
            value = np.ones(shape)
        with torch.no_grad():
            p.copy_(torch.from_numpy(value.astype(np.float32)))


@contextmanager
def torch_threads() -> Iterator[int]:
    """torch's intra-op threads set to ``$INTERBIAS_THREADS`` (default 1, as the embedding
    workers use) for the block, and restored after: on a busy CPU, more threads than free
    cores make small convolutions many times slower."""
    from interbias.utils.paths import threads

    before = torch.get_num_threads()
    n = threads() or 1
    torch.set_num_threads(n)
    try:
        yield n
    finally:
        torch.set_num_threads(before)
