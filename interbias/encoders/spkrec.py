"""SpeechBrain speaker encoders from a local ``spkrec-*`` folder (X-Vector, ECAPA-TDNN).

The folder holds the hub repository's files unchanged: ``hyperparams.yaml``,
``embedding_model.ckpt``, ``mean_var_norm_emb.ckpt``, ``classifier.ckpt``,
``label_encoder.txt``. It is loaded with ``EncoderClassifier.from_hparams(source=<folder>,
overrides={"pretrained_path": <folder>})``, no save folder (no symlinks, nothing stale reused)
and ``allow_network=False``; every path the pretrainer loads must lie in that folder. Each
``.ckpt`` is first opened with ``torch.load(weights_only=True)`` so a corrupt file is reported
by name. The embedding is ``encode_batch(wavs, wav_lens)`` (Fbank, sentence mean
normalisation, the embedding model; ``normalize=False`` as in SpeechBrain's verification).
``hyperparams.yaml`` instantiates the classes it names, so its tags are read first with a safe
loader and anything but ``!new``/``!name`` of SpeechBrain's model, feature and label-encoder
classes, its Pretrainer and ``torch.nn`` (or ``!ref``/``!copy``) is refused before it is built.

SpeechBrain's ``StatisticsPooling`` (the X-vector's) adds Gaussian noise of 1e-5–9e-5 to the
pooled means, drawn from torch's global RNG, so two calls on one input differ. interbias sets
that noise to zero on every such layer (recorded as ``stats_pooling_noise: 0`` in the config):
embeddings are then deterministic, and differ from SpeechBrain's by at most that epsilon.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from interbias.encoders import (
    Encoder,
    EncoderCard,
    Layout,
    Located,
    combined_sha256,
    drop_unloadable_lazy_modules,
    freeze,
    load_reason,
    optional_import,
)
from interbias.encoders.masking import padded_waves

FILES = ("hyperparams.yaml", "embedding_model.ckpt", "mean_var_norm_emb.ckpt", "classifier.ckpt", "label_encoder.txt")


class SpeechBrainEncoder(Encoder):
    supports_padding = True

    def __init__(self, card: EncoderCard, classifier: Any, **kw: Any) -> None:
        super().__init__(card, **kw)
        self.classifier = classifier

    @torch.inference_mode()
    def _embed_one(self, wave: np.ndarray) -> np.ndarray:
        x = torch.from_numpy(wave).unsqueeze(0)
        out = self.classifier.encode_batch(x, torch.ones(1))
        return out.reshape(-1).float().cpu().numpy()

    @torch.inference_mode()
    def _embed_batch(self, waves: list[np.ndarray]) -> list[np.ndarray]:
        x, lengths = padded_waves(waves, self.device)  # each waveform copied once, pinned on CUDA
        lens = torch.tensor([n / x.shape[1] for n in lengths])
        out = self.classifier.encode_batch(x, lens).reshape(len(waves), -1).float().cpu().numpy()
        return list(out)


def _zero_noise(shape: Any, device: Any = "cpu") -> torch.Tensor:
    return torch.zeros(shape, device=device)


def disable_pooling_noise(module: torch.nn.Module) -> int:
    """Replace the random epsilon of SpeechBrain's ``StatisticsPooling`` layers by zeros; returns how many."""
    n = 0
    for m in module.modules():
        if type(m).__name__ == "StatisticsPooling" and hasattr(m, "_get_gauss_noise"):
            m._get_gauss_noise = _zero_noise
            n += 1
    return n


def _check_checkpoints(card: EncoderCard, folder: Path, names: tuple[str, ...]) -> None:
    for name in names:
        if not name.endswith(".ckpt"):
            continue
        try:
            torch.load(str(folder / name), map_location="cpu", weights_only=True)
        except Exception as exc:
            raise card.error(folder, f"cannot load {name} ({load_reason(exc)})") from exc


#: What ``hyperparams.yaml`` may build: HyperPyYAML runs the callables its tags name, so only
#: SpeechBrain's model, feature and encoder classes, its Pretrainer and torch.nn modules.
_ALLOWED_TARGETS = (
    "speechbrain.lobes.",
    "speechbrain.processing.",
    "speechbrain.nnet.",
    "speechbrain.dataio.encoder.",
    "speechbrain.utils.parameter_transfer.Pretrainer",
    "torch.nn.",
)
_PLAIN_TAGS = ("!ref", "!copy", "!tuple", "!PLACEHOLDER")


def hparams_tags(text: str) -> list[str]:
    """Every tag in a HyperPyYAML text, read with a safe loader (nothing is built)."""
    import yaml

    tags: list[str] = []

    class _Recorder(yaml.SafeLoader):
        pass

    def record(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> None:
        tags.append(node.tag)

    _Recorder.add_multi_constructor("!", record)
    _Recorder.add_multi_constructor("tag:yaml.org,2002:python/", record)
    yaml.load(text, Loader=_Recorder)  # a SafeLoader subclass that only records tags
    return tags


def _check_hparams(card: EncoderCard, folder: Path) -> None:
    """Refuse a ``hyperparams.yaml`` whose tags would run anything but the allowed classes."""
    import yaml

    try:
        tags = hparams_tags((folder / "hyperparams.yaml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise card.error(folder, f"hyperparams.yaml is not readable YAML ({type(exc).__name__})") from exc
    for tag in tags:
        if tag in _PLAIN_TAGS:
            continue
        kind, _, target = tag.partition(":")
        if kind in ("!new", "!name") and target.startswith(_ALLOWED_TARGETS):
            continue
        raise card.error(
            folder,
            f"hyperparams.yaml uses {tag}: only !new/!name of speechbrain.lobes, .processing, .nnet, "
            ".dataio.encoder, the Pretrainer and torch.nn are built from a model folder",
        )


def load_speechbrain(
    card: EncoderCard, located: Located, files: dict[str, str], *, device: str = "cpu"
) -> SpeechBrainEncoder:
    folder = located.folder.resolve()
    _check_hparams(card, folder)
    _check_checkpoints(card, folder, located.files)
    inference = optional_import("speechbrain.inference.classifiers", card.label, "speechbrain (with torchaudio)")
    fetching = optional_import("speechbrain.utils.fetching", card.label, "speechbrain (with torchaudio)")
    try:
        classifier = inference.EncoderClassifier.from_hparams(
            source=fetching.FetchSource(fetching.FetchFrom.LOCAL, str(folder)),
            savedir=None,
            overrides={"pretrained_path": str(folder)},
            run_opts={"device": device},
            fetch_config=fetching.FetchConfig(allow_network=False),
        )
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [""])[0]
        raise card.error(folder, f"SpeechBrain could not load the checkpoint ({type(exc).__name__}: {first})") from exc
    drop_unloadable_lazy_modules()  # the hyperparameters may have registered more proxies
    loaded = {Path(p).resolve() for p in classifier.hparams.pretrainer.paths.values()}
    outside = sorted(str(p) for p in loaded if p.parent != folder)
    if outside:
        raise card.error(folder, f"hyperparams.yaml loads files outside the folder: {', '.join(outside)}")
    unlisted = sorted(p.name for p in loaded if p.name not in located.files)
    if unlisted:
        raise card.error(folder, f"hyperparams.yaml loads unexpected file(s) {', '.join(unlisted)}")
    want = card.expect.get("class")
    got = type(classifier.mods.embedding_model).__name__
    if want and got != want:
        raise card.error(folder, f"embedding_model is a {got}, not the {want} that {card.label} names")
    for module in classifier.mods.values():
        freeze(module, device)
    noisy = disable_pooling_noise(classifier.mods.embedding_model)
    return SpeechBrainEncoder(
        card,
        classifier,
        source=str(located.folder),
        checkpoint_sha256=combined_sha256(files),
        files=files,
        device=device,
        config={
            "interface": "EncoderClassifier.encode_batch",
            "normalize": False,
            "class": got,
            **({"stats_pooling_noise": 0} if noisy else {}),
        },
    )


LAYOUT = Layout("speechbrain", FILES, load_speechbrain, requires="speechbrain", requires_hint="speechbrain")
