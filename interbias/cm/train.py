"""``interbias cm train``: the deepfake gender-fairness study's CM training recipe.

Recipe (:class:`TrainConfig` defaults): audio at 16 kHz, zero-padded or truncated to 4.0 s
(the ResNet-18 models' input policy);
AdamW (lr 3e-5, weight decay 1e-4); cross-entropy with class weights w_c = n / (2·n_c) over
the training set (c ∈ {spoof, bonafide}); at most 100 epochs, early stopping when the
validation loss (the same weighted cross-entropy on the dev split, eval mode) has not improved
for ``patience`` = 15 epochs; the checkpoint kept is the lowest-validation-loss epoch's.

Determinism: weights start from :func:`interbias.cm.network.seeded_init`, the epoch's batch
order from ``derive_rng("cm-train", seed, epoch)``; nothing draws from a global generator, so
one machine with one thread count writes the same checkpoint bytes twice. Front ends are
frozen, so every utterance's features are computed once.

Outputs in the output folder: ``checkpoint.pt`` (best epoch; loads with ``weights_only``),
``curve.csv`` (the learning curve), ``training.json`` (config, manifest hash, counts, best
epoch, timings) and ``state.pt`` (the last finished epoch: model, optimiser, curve), from
which a stopped or killed run resumes at the next epoch.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from interbias.cm.frontends import FixedLengthConfig
from interbias.cm.loop import train_epochs
from interbias.cm.models import CM_MODELS, FORMAT
from interbias.corpora.cm_corpus import check_cm_manifest
from interbias.corpora.manifest import Manifest
from interbias.utils.errors import ConfigError
from interbias.utils.keyvalue import typed_overrides
from interbias.utils.numbers import require
from interbias.utils.seeding import canonical_json, derive_rng, sha256_text


@dataclass(frozen=True)
class TrainConfig(FixedLengthConfig):
    """Every hyper-parameter of a training run (``paper`` preset = the study's recipe)."""

    lr: float = 3e-5
    weight_decay: float = 1e-4
    batch_size: int = 32
    max_epochs: int = 100
    patience: int = 15
    #: ReduceLROnPlateau on the validation loss: the learning rate × ``lr_factor`` after
    #: ``lr_patience`` epochs without improvement (PyTorch's other defaults); 1.0 = off.
    lr_factor: float = 0.5
    lr_patience: int = 5
    sample_rate_hz: int = 16000
    duration_s: float = 4.0
    width: int = 64
    seed: int = 0
    #: At most this many utterances per split × label (None = all), chosen by a derived seed.
    max_per_class: int | None = None

    def check_numbers(self) -> None:
        """Every number finite and in its range (one line naming the setting, else)."""
        for name, low, low_open in (
            ("lr", 0.0, True), ("weight_decay", 0.0, False), ("lr_factor", 0.0, True),
            ("sample_rate_hz", 1000.0, False), ("duration_s", 0.0, True),
        ):  # fmt: skip
            require(f"cm train: {name}", getattr(self, name), low=low, low_open=low_open, error=ConfigError)
        require("cm train: sample_rate_hz", self.sample_rate_hz, high=192000.0, error=ConfigError)
        if self.max_per_class is not None:
            require("cm train: max_per_class", self.max_per_class, low=1.0, error=ConfigError)
        if self.n_samples < 1:
            raise ConfigError(
                f"cm train: duration_s {self.duration_s:g} s at {self.sample_rate_hz} Hz is less than one sample"
            )

    def override(self, pairs: dict[str, str]) -> TrainConfig:
        """This config with KEY=VALUE overrides (types follow the field)."""
        kw = typed_overrides(self, pairs, "cm train")
        cfg = replace(self, **kw)
        cfg.check_numbers()
        if cfg.lr <= 0 or cfg.batch_size < 1 or cfg.max_epochs < 1 or cfg.patience < 1 or cfg.width < 1:
            raise ConfigError("cm train: lr, batch_size, max_epochs, patience and width must be positive")
        if not 0 < cfg.lr_factor <= 1 or cfg.lr_patience < 0:
            raise ConfigError("cm train: lr_factor must lie in (0, 1] (1 = no scheduler) and lr_patience be >= 0")
        return cfg


#: Named configurations: ``paper`` (the recipe) and ``small`` (minutes on a laptop CPU: a
#: ResNet-18 of width 16, a higher learning rate for the few epochs, 120 utterances per
#: split × label, 8 epochs). ``small`` is for checking the pipeline, not for the study's numbers.
PRESETS = {
    "paper": TrainConfig(),
    "small": TrainConfig(lr=1e-3, batch_size=16, max_epochs=8, patience=15, width=16, max_per_class=120),
}


@dataclass
class Data:
    """Features (N, F, T) float32, labels (1 = bona fide), per split."""

    x: Any
    y: Any
    ids: list[str]


def select(manifest: Manifest, split: str, cfg: TrainConfig) -> list[Any]:
    """The utterances of ``split``, at most ``max_per_class`` per label (derived-seed choice)."""
    out = []
    for label in ("bonafide", "spoof"):
        utts = sorted((u for u in manifest if u.get("split") == split and u.get("label") == label), key=lambda u: u.id)
        if cfg.max_per_class is not None and len(utts) > cfg.max_per_class:
            pick = derive_rng("cm-subset", cfg.seed, split, label).choice(len(utts), cfg.max_per_class, replace=False)
            utts = [utts[i] for i in sorted(pick.tolist())]
        out.extend(utts)
    return out


def load_waves(manifest: Manifest, utts: list[Any], cfg: TrainConfig, pad: str = "zero") -> np.ndarray:
    """(N, n_samples) float32: each file at 16 kHz, fitted to the duration by the model's pad
    rule (``zero``: the ResNet-18 models; ``tile``: AASIST)."""
    from interbias.audio.frontend import FrontEnd, load
    from interbias.cm.frontends import InputPolicy

    policy = InputPolicy(cfg.n_samples, pad, cfg.sample_rate_hz)
    fe = FrontEnd(sample_rate_hz=cfg.sample_rate_hz, min_duration_s=0.0, max_duration_s=None)
    return np.stack([policy.fit(load(manifest.resolve(u), fe, span=u.span).samples) for u in utts])


def featurize(net: Any, waves: np.ndarray, batch: int = 16) -> Any:
    import torch

    out = []
    with torch.inference_mode():
        for i in range(0, len(waves), batch):
            out.append(net.features(torch.from_numpy(waves[i : i + batch])))
    return torch.cat(out)


def training_manifest_sha256(utts: list[Any]) -> str:
    """sha256 over (id, speaker, label, split, audio sha256) of every train and dev utterance, in order."""
    return sha256_text(
        "".join(canonical_json([u.id, u.speaker, u.get("label"), u.get("split"), u.sha256]) + "\n" for u in utts)
    )


@dataclass
class Trainer:
    label: str
    cfg: TrainConfig
    out: Path
    frontend_path: Path | None = None
    log: Callable[[str], None] = print

    def network(self) -> Any:
        from interbias.cm.network import aasist_network, build_network, seeded_init

        if CM_MODELS.get(self.label).architecture == "aasist":
            net = aasist_network(self.label, self.cfg.n_samples)
        else:
            net = build_network(self.label, {"width": self.cfg.width}, self.frontend_path)
        seeded_init(net.classifier, self.cfg.seed)
        return net

    def run(self, manifest: Manifest, *, stop_after: int | None = None, reporter: Any = None) -> dict[str, Any]:
        """Train (or resume) and return the summary written to ``training.json``."""
        check_cm_manifest(manifest)
        train_u, dev_u = select(manifest, "train", self.cfg), select(manifest, "dev", self.cfg)
        for name, us in (("train", train_u), ("dev", dev_u)):
            if {u.get("label") for u in us} != {"bonafide", "spoof"}:
                raise ConfigError(f"cm train: the {name} split needs bona fide and spoof utterances")
        data_sha = training_manifest_sha256(train_u + dev_u)
        net = self.network()
        t0 = time.perf_counter()
        train = self.data(net, manifest, train_u)
        dev = self.data(net, manifest, dev_u)
        feat_s = time.perf_counter() - t0
        self.log(f"features: {len(train_u)} train + {len(dev_u)} dev utterances in {feat_s:.1f} s")
        return self.loop(net, train, dev, data_sha, feat_s, stop_after=stop_after, reporter=reporter)

    def data(self, net: Any, manifest: Manifest, utts: list[Any]) -> Data:
        import torch

        x = featurize(net, load_waves(manifest, utts, self.cfg, CM_MODELS.get(self.label).pad))
        y = torch.tensor([1 if u.get("label") == "bonafide" else 0 for u in utts])
        return Data(x, y, [u.id for u in utts])

    def loop(self, net: Any, train: Data, dev: Data, data_sha: str, feat_s: float, **kw: Any) -> dict[str, Any]:
        return train_epochs(self, net, train, dev, data_sha, feat_s, **kw)

    def header(self, data_sha: str, frontend_sha: str | None) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "label": self.label,
            "config": {
                **asdict(self.cfg),
                "n_samples": self.cfg.n_samples,
                "frontend_path": str(self.frontend_path or ""),
            },
            "config_sha256": self.cfg.sha256(),
            "manifest_sha256": data_sha,
            "frontend_sha256": frontend_sha,
        }


def parse_settings(items: list[str]) -> dict[str, str]:
    """``KEY=VALUE`` strings of ``--set``; a malformed or repeated key is an error."""
    from interbias.utils.keyvalue import parse_key_values

    return parse_key_values(items, option="--set", error=ConfigError)


def cm_manifest(corpus: str | None, manifest: Path | None, cache: Path, reporter: Any = None) -> Manifest:
    """The training data: the offline ``synthetic-cm`` corpus, or a CM manifest file."""
    from interbias.corpora import read_manifest
    from interbias.corpora.cm_corpus import build_cm_corpus

    if manifest is not None and corpus is not None:
        raise ConfigError("give --corpus or --manifest, not both")
    if manifest is not None:
        return read_manifest(Path(manifest))
    if corpus in (None, "synthetic-cm", "synthetic"):
        return build_cm_corpus(cache, reporter=reporter)
    raise ConfigError(
        f"cm corpus {corpus!r}: valid: synthetic-cm (the offline proxy corpus); else give --manifest FILE"
    )


def checked_config(
    label: str, preset: str, settings: dict[str, str] | None = None, frontend_path: Path | None = None
) -> TrainConfig:
    """The training config of ``label`` (``preset`` plus ``settings``), every value checked before
    any data is read: numbers in range, and an input of ``duration_s`` that the network takes."""
    if CM_MODELS.get(label).architecture == "gmm":
        raise ConfigError(
            f"{label} is trained by EM, not this loop: interbias.cm.gmm_train.train_gmm (cm train calls it)"
        )
    if preset not in PRESETS:
        raise ConfigError(f"cm train: unknown config {preset!r}; valid: {', '.join(PRESETS)}")
    cfg = PRESETS[preset].override(settings or {})
    check_input_length(
        label, Trainer(label, cfg, Path("."), Path(frontend_path) if frontend_path else None).network(), cfg
    )
    return cfg


def check_input_length(label: str, net: Any, cfg: TrainConfig) -> None:
    """Refuse (:class:`ConfigError`) a ``duration_s`` shorter than ``net`` takes (:func:`shortest_input`)."""
    shortest = shortest_input(net, cfg.n_samples, cfg.sample_rate_hz)
    if shortest is not None:
        raise ConfigError(
            f"cm train: duration_s {cfg.duration_s:g} ({cfg.n_samples} samples at {cfg.sample_rate_hz} Hz) is "
            f"shorter than {label} takes: at least {shortest} samples ({shortest / cfg.sample_rate_hz:.4g} s)"
        )


def shortest_input(net: Any, n_samples: int, sample_rate_hz: int) -> int | None:
    """None when ``net`` takes ``n_samples``; else the fewest samples it takes. A classifier that
    states its ``min_samples`` (AASIST) is read; any other is probed: a batch of zeros through
    the network in eval mode, doubling then bisecting up to 60 s of audio."""
    import torch

    stated = getattr(net.classifier, "min_samples", None)
    if stated is not None:
        return None if n_samples >= stated else int(stated)

    def takes(n: int) -> bool:
        try:
            with torch.inference_mode():
                net(torch.zeros(1, n))
        except RuntimeError:
            return False
        return True

    net.eval()
    if takes(n_samples):
        return None
    low, high = n_samples, max(n_samples, 1)
    while not takes(high):
        low, high = high, high * 2
        if high > 60 * sample_rate_hz:
            raise ConfigError(f"cm train: the network takes no input of up to 60 s at {sample_rate_hz} Hz")
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if takes(mid) else (mid, high)
    return high


def train_model(
    label: str,
    manifest: Manifest,
    *,
    preset: str = "paper",
    settings: dict[str, str] | None = None,
    out: Path | None = None,
    frontend_path: Path | None = None,
    stop_after: int | None = None,
    reporter: Any = None,
    log: Callable[[str], None] = print,
) -> tuple[Path, dict[str, Any]]:
    """Train ``label`` on ``manifest`` with a preset plus overrides; returns (folder, summary)."""
    from interbias.cm.network import torch_threads
    from interbias.utils.progress import Reporter

    card = CM_MODELS.get(label)
    cfg = checked_config(label, preset, settings, frontend_path)
    folder = Path(out) if out else card.folder() / ("trained" if card.architecture == "aasist" else "")
    trainer = Trainer(label, cfg, folder, Path(frontend_path) if frontend_path else None, log)
    with torch_threads():
        return folder, trainer.run(manifest, stop_after=stop_after, reporter=reporter or Reporter(quiet=True))
