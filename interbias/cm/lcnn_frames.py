"""A frame-level LCNN over LFCC frames (ADD 2023 baseline S04, small): per-frame bona fide / fake
posteriors for manipulated-region location (Track 2).

**Frames.** Frame ``t`` stands for the samples ``[t·hop, (t+1)·hop)`` (hop 10 ms): its 20 ms
window (320 samples) is centred on that cell's centre (the signal is zero-padded by
``(win − hop)/2`` on the left), so an utterance of ``n`` samples has ``⌈n / hop⌉`` frames.
A frame's training label is *fake* when its centre sample ``t·hop + hop/2`` lies in a fake
region — the rule ``cm-eval location --resolution`` uses for its frames.

**LFCC** (:func:`frame_lfcc`: :class:`~interbias.cm.frontends.LFCC` with ``framing="cells"``):
|FFT|² (512 points, Hann window of 320 samples) through 20 linear triangular filters over
0–8 kHz, log(· + 1e-10), DCT-II (orthonormal) to 20 coefficients,
plus deltas and delta-deltas (first differences, edge-padded): 60 × T.

**Network** (:class:`FrameLCNN`): the LCNN's convolution + max-feature-map (MFM) blocks with
pooling only along frequency (the paper removes the pooling that would shorten time): a batch
norm of the input, three
blocks [3×3 conv → MFM → batch norm → 2× max-pool in frequency], a full-height conv + MFM
and a 1×1 conv to two logits per frame (spoof/fake, bona fide), the registry's order.

**Regions** (:func:`regions_from_posteriors`): frames whose P(fake) exceeds ``threshold``
(default 0.5) form runs; runs shorter than ``min_region_s`` (default 0.05 s, rounded up to
frames) are dropped; a run of frames ``t0..t1`` is the region
``[t0·hop, min((t1+1)·hop, n))`` samples. The utterance is called fake when a region remains.

Training is ``interbias cm train --model LCNN-LFCC-frames`` on a CM manifest whose partially
fake utterances carry ``fake_regions`` (``synthetic-had``, ``add2023`` Track 2): the recipe and
loop of :mod:`interbias.cm.train` (weighted cross-entropy over labelled frames, padding
frames ignored), so deterministic and resumable in the same way.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from interbias.cm.frontends import LFCC
from interbias.cm.lcnn import MFM
from interbias.cm.train import PRESETS, Data, TrainConfig, Trainer, check_input_length, featurize, load_waves
from interbias.corpora.splice import parse_region_attr
from interbias.utils.errors import ConfigError, EncoderError

LABEL = "LCNN-LFCC-frames"
FRAME_MODELS = (LABEL,)
SAMPLE_RATE_HZ = 16000
HOP, WIN, N_FFT, N_FILTERS, N_CEPS = 160, 320, 512, 20, 20
IGNORE = -100


def n_frames(n_samples: int) -> int:
    return -(-int(n_samples) // HOP)


def frame_lfcc() -> LFCC:
    """The detector's LFCC (module docstring): :class:`~interbias.cm.frontends.LFCC` over Hann
    windows centred on 10 ms cells."""
    return LFCC(WIN, HOP, N_FFT, N_FILTERS, N_CEPS, window="hann", framing="cells")


class FrameLCNN(nn.Module):
    """(batch, 60, T) features → (batch, 2, T) logits (module docstring); ``width`` channels."""

    def __init__(self, width: int = 16, n_features: int = 3 * N_CEPS) -> None:
        super().__init__()
        blocks: list[nn.Module] = [nn.BatchNorm2d(1)]
        c_in, height = 1, n_features
        for _ in range(3):
            blocks += [nn.Conv2d(c_in, 2 * width, 3, padding=1), MFM(), nn.BatchNorm2d(width), nn.MaxPool2d((2, 1))]
            c_in, height = width, height // 2
        self.body = nn.Sequential(*blocks)
        self.head = nn.Sequential(nn.Conv2d(width, 2 * width, (height, 1)), MFM(), nn.Conv2d(width, 2, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x.unsqueeze(1))).squeeze(2)


def frame_network(width: int) -> Any:
    from interbias.cm.network import CMNetwork

    return CMNetwork(frame_lfcc(), FrameLCNN(width))


def frame_labels(utt: Any, n_samples: int, total_frames: int) -> np.ndarray:
    """Per-frame labels of one utterance: 1 bona fide, 0 fake (centre rule), IGNORE past its end."""
    y = np.full(total_frames, IGNORE, dtype=np.int64)
    t = min(n_frames(n_samples), total_frames)
    y[:t] = 1
    regions = parse_region_attr(utt.get("fake_regions"), utt.id)
    if utt.get("label") == "spoof" and not regions:
        raise ConfigError(f"{LABEL}: spoof utterance {utt.id} has no fake_regions (frame labels need the regions)")
    centres = np.arange(t) * HOP + HOP // 2
    for a, b in regions:
        y[:t][(centres >= a) & (centres < b)] = 0
    return y


@dataclass
class FrameTrainer(Trainer):
    """:class:`interbias.cm.train.Trainer` with the frame network and per-frame labels."""

    def network(self) -> Any:
        from interbias.cm.network import seeded_init

        net = frame_network(self.cfg.width)
        seeded_init(net.classifier, self.cfg.seed)
        return net

    def data(self, net: Any, manifest: Any, utts: list[Any]) -> Data:
        from interbias.audio.frontend import FrontEnd, load

        fe = FrontEnd(sample_rate_hz=self.cfg.sample_rate_hz, min_duration_s=0.0, max_duration_s=None)
        x = featurize(net, load_waves(manifest, utts, self.cfg, "zero"))
        lengths = [len(load(manifest.resolve(u), fe, span=u.span).samples) for u in utts]
        y = np.stack(
            [frame_labels(u, min(n, self.cfg.n_samples), x.shape[-1]) for u, n in zip(utts, lengths, strict=True)]
        )
        return Data(x, torch.from_numpy(y), [u.id for u in utts])


def train_frames(
    manifest: Any,
    *,
    preset: str = "small",
    settings: dict[str, str] | None = None,
    out: Path | None = None,
    stop_after: int | None = None,
    reporter: Any = None,
    log: Callable[[str], None] = print,
) -> tuple[Path, dict[str, Any]]:
    """Train the frame detector (``cm train``'s presets and overrides); returns (folder, summary)."""
    from interbias.cm.network import torch_threads
    from interbias.utils.paths import models_dir
    from interbias.utils.progress import Reporter

    cfg = checked_frames_config(preset, settings)
    folder = Path(out) if out else models_dir() / "cm" / LABEL
    trainer = FrameTrainer(LABEL, cfg, folder, None, log)
    with torch_threads():
        return folder, trainer.run(manifest, stop_after=stop_after, reporter=reporter or Reporter(quiet=True))


def checked_frames_config(preset: str, settings: dict[str, str] | None = None) -> TrainConfig:
    """The frame detector's config (``preset`` plus ``settings``), every value checked before any
    data is read: numbers in range, and an input of ``duration_s`` that the network takes."""
    if preset not in PRESETS:
        raise ConfigError(f"cm train: unknown config {preset!r}; valid: {', '.join(PRESETS)}")
    cfg = PRESETS[preset].override(settings or {})
    check_input_length(LABEL, frame_network(cfg.width), cfg)
    return cfg


@dataclass
class FrameDetector:
    """A trained frame detector: ``posteriors(wave)`` → P(fake) per frame."""

    net: Any
    checkpoint: Path
    info: dict[str, Any]

    def posteriors(self, wave: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            z = self.net(torch.from_numpy(np.asarray(wave, dtype=np.float32)[None]))
        return torch.softmax(z.double(), dim=1)[0, 0].numpy()


def load_frame_detector(path: Path | None = None) -> FrameDetector:
    """The checkpoint ``path`` (file or folder; default the label's model folder)."""
    from interbias.cm.models import FORMAT, load_strict, read_checkpoint
    from interbias.utils.paths import models_dir

    p = Path(path) if path else models_dir() / "cm" / LABEL
    ckpt = p / "checkpoint.pt" if p.is_dir() else p
    if not ckpt.is_file():
        raise EncoderError(
            f"{LABEL}: no checkpoint at {ckpt}; train it: interbias cm train --model {LABEL} --corpus synthetic-had"
        )
    data = read_checkpoint(ckpt, LABEL)
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("label") != LABEL:
        raise EncoderError(f"{LABEL}: {ckpt} is not an `interbias cm train --model {LABEL}` checkpoint")
    net = frame_network(int(data["config"]["width"]))
    load_strict(net.classifier, data["state_dict"], LABEL, ckpt)
    net.eval()
    info = {k: data.get(k) for k in ("manifest_sha256", "config_sha256", "epoch")}
    return FrameDetector(net, ckpt, info)


@dataclass(frozen=True)
class RegionRule:
    """Posteriors → regions (module docstring)."""

    threshold: float = 0.5
    min_region_s: float = 0.05

    @property
    def min_frames(self) -> int:
        return max(1, math.ceil(round(self.min_region_s * SAMPLE_RATE_HZ / HOP, 9)))

    def check(self) -> RegionRule:
        if not (math.isfinite(self.min_region_s) and 0 < self.threshold < 1 and self.min_region_s >= 0):
            raise ConfigError(f"regions: threshold must lie in (0, 1) and min_region_s be >= 0, got {self}")
        return self


def regions_from_posteriors(
    p_fake: np.ndarray, n_samples: int, rule: RegionRule = RegionRule()
) -> list[tuple[int, int]]:
    """Fake regions ``(start, end)`` in samples (module docstring)."""
    fake = np.asarray(p_fake) > rule.threshold
    out, t, n = [], 0, len(fake)
    while t < n:
        if not fake[t]:
            t += 1
            continue
        t1 = t
        while t1 + 1 < n and fake[t1 + 1]:
            t1 += 1
        if t1 - t + 1 >= rule.min_frames:
            out.append((t * HOP, min((t1 + 1) * HOP, n_samples)))
        t = t1 + 1
    return [(a, b) for a, b in out if b > a]


def train_frames_cli(
    model: str, corpus: str | None, manifest: Path | None, cache: Path, preset: str, settings: dict[str, str],
    out: Path | None, stop_after: int | None, reporter: Any, log: Callable[[str], None],
) -> tuple[Path, dict[str, Any]]:  # fmt: skip
    """``cm train`` for the frame detector: ``--corpus synthetic-had`` (the default) or a manifest
    with ``fake_regions``; another label with ``synthetic-had`` is refused."""
    from interbias.corpora import read_manifest
    from interbias.corpora.had import build_had_corpus

    if model != LABEL:
        raise ConfigError(f"cm train: --corpus synthetic-had trains the frame detector {LABEL}, not {model}")
    if manifest is not None and corpus is not None:
        raise ConfigError("give --corpus or --manifest, not both")
    if corpus not in (None, "synthetic-had"):
        raise ConfigError(
            f"{LABEL}: corpus {corpus!r}: valid: synthetic-had; else give --manifest FILE with fake_regions"
        )
    checked_frames_config(preset, settings)  # before any corpus is built
    data = read_manifest(Path(manifest)) if manifest is not None else build_had_corpus(cache, reporter=reporter)
    return train_frames(
        data, preset=preset, settings=settings, out=out, stop_after=stop_after, reporter=reporter, log=log
    )
