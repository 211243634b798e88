"""The countermeasure registry: labels, where their checkpoints live, and loading them.

Labels: ``AASIST`` and ``AASIST-L`` (:mod:`interbias.cm.aasist`, the authors' published
checkpoints, hash-pinned, or checkpoints written by ``interbias cm train --model AASIST``) and ``ResNet18-<frontend>`` for ``logspec``, ``cqt``, ``lfcc``, ``wavlm`` and
``wav2vec2`` (:mod:`interbias.cm.resnet` over :mod:`interbias.cm.frontends`; checkpoints
written by ``interbias cm train``); the ADD 2023 detection baselines ``LCNN-lfcc``,
``LCNN-wav2vec2`` (:mod:`interbias.cm.lcnn`) and ``GMM-lfcc`` (:mod:`interbias.cm.gmm`).

A label's checkpoint is ``checkpoint.pt`` in ``$INTERBIAS_MODEL_<KEY>`` (same key rule as the
encoders), else ``$INTERBIAS_MODELS/cm/<label>/``. It is read with
``torch.load(weights_only=True)`` and loaded with ``strict=True``: a missing or extra key, a
shape that differs, a trained checkpoint of another label, or a published checkpoint whose
sha256 is not the pinned one is an :class:`EncoderError`; nothing falls back to another file.

Every CM scores with the softmax posterior of the bona fide class (logit index 1). Each model
owns its input policy (:class:`~interbias.cm.frontends.InputPolicy`): 16 kHz, then AASIST and
AASIST-L tile a short waveform and cut a long one to 64 600 samples (the authors' ``pad``);
the ResNet-18 models zero-pad or truncate to 4.0 s (the study's rule).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from interbias.cm.frontends import FRONTENDS, SAMPLE_RATE_HZ, SSL_FRONTENDS, InputPolicy
from interbias.utils.errors import EncoderError
from interbias.utils.registry import Registry
from interbias.utils.seeding import sha256_file

#: The format tag of checkpoints written by ``interbias cm train``.
FORMAT = "interbias-cm/1"
CHECKPOINT = "checkpoint.pt"
AASIST_SOURCE = "github.com/clovaai/aasist (models/weights/{name}, MIT)"


@dataclass(frozen=True)
class CMCard:
    """What a CM label is and how to get its checkpoint."""

    label: str
    architecture: str  # "aasist" | "resnet18"
    frontend: str  # "sinc" for AASIST, else one of FRONTENDS
    description: str
    how_to_get: str
    #: sha256 of the published checkpoint (AASIST); None for checkpoints trained here.
    pinned_sha256: str | None = None
    #: Published file names accepted beside ``checkpoint.pt``.
    published_names: tuple[str, ...] = ()
    #: How the model brings a waveform to its input length: a key of ``PAD_RULES``.
    pad: str = "zero"
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def env_var(self) -> str:
        from interbias.encoders import env_var

        return env_var(self.label)

    def folder(self, path: str | Path | None = None) -> Path:
        """``path``, else its env var, else ``$INTERBIAS_MODELS/cm/<label>``."""
        from interbias.encoders.card import label_folder
        from interbias.utils.paths import models_dir

        return label_folder(self.label, path, models_dir() / "cm" / self.label)

    def checkpoint(self, path: str | Path | None = None) -> Path:
        """The checkpoint file, or one error saying how to get it."""
        p = Path(path).expanduser() if path else None
        if p is not None and p.is_file():
            return p
        folder = self.folder(p)
        for name in (CHECKPOINT, *self.published_names):
            if (folder / name).is_file():
                return folder / name
        raise EncoderError(f"{self.label}: no checkpoint in {folder} ({CHECKPOINT}); {self.how_to_get}")


CM_MODELS: Registry[CMCard] = Registry("countermeasure", EncoderError)


def _register(card: CMCard) -> None:
    CM_MODELS.register(card.label)(card)


for _name, _sha, _desc in (
    (
        "AASIST",
        "51d2d9cf0738172f61e2a384ec50a54a55363240f67c971ed55a92435bc1a1c0",
        "AASIST (Jung et al. 2022), 297k parameters",
    ),
    (
        "AASIST-L",
        "814331d088032bb4c3fa61cc014789eadeed464209dd094ab3a2dd6ffbdce27a",
        "AASIST-L, the light variant, 85k parameters",
    ),
):
    _register(
        CMCard(
            _name,
            "aasist",
            "sinc",
            _desc + "; raw waveform, trained on ASVspoof 2019 LA",
            f"get {_name}.pth from {AASIST_SOURCE.format(name=_name + '.pth')} and place it there "
            f"(or set {'INTERBIAS_MODEL_' + _name.replace('-', '_')})",
            pinned_sha256=_sha,
            published_names=(f"{_name}.pth",),
            pad="tile",
        )
    )
for _fe in FRONTENDS:
    _label = f"ResNet18-{_fe}"
    _register(
        CMCard(
            _label,
            "resnet18",
            _fe,
            f"ResNet-18 over {_fe} features (the deepfake gender-fairness study's recipe)",
            f"train it: interbias cm train --model {_label}"
            + (" --frontend-path HF_FOLDER" if _fe in SSL_FRONTENDS else ""),
        )
    )


for _fe, _desc in (
    ("lfcc", "LFCC (20 ms / 10 ms), ADD 2023 baseline S02"),
    ("wav2vec2", "wav2vec 2.0 features, ADD 2023 baseline S03"),
):
    _register(
        CMCard(
            f"LCNN-{_fe}",
            "lcnn",
            _fe,
            f"LCNN (Wu et al. 2020) over {_desc}",
            f"train it: interbias cm train --model LCNN-{_fe}"
            + (" --frontend-path HF_FOLDER" if _fe in SSL_FRONTENDS else ""),
        )
    )
_register(
    CMCard(
        "GMM-lfcc",
        "gmm",
        "lfcc",
        "two diagonal GMMs (bona fide, spoof) over LFCC frames (30 ms / 15 ms), log-likelihood ratio; ADD 2023 baseline S01",
        "train it: interbias cm train --model GMM-lfcc --config small",
    )
)


# ---- loading -------------------------------------------------------------------------------------


#: What a CM's score is, as ``cm score`` and run.json state it.
SCORE_CONVENTION = "P(bona fide | x) = softmax(logits)[1]; logits ordered (spoof, bona fide); higher = more bona fide"


@dataclass
class LoadedCM:
    """A CM ready to score: ``model`` maps (batch, n_samples) waveforms to two logits."""

    card: CMCard
    model: Any
    policy: InputPolicy
    checkpoint_path: Path
    checkpoint_sha256: str
    info: dict[str, Any]

    @property
    def n_samples(self) -> int:
        return self.policy.n_samples

    def logits(self, waves: list[np.ndarray], *, batch_size: int = 16) -> np.ndarray:
        """(N, 2) float64 logits (spoof, bona fide), each waveform fitted by the model's input policy."""
        import torch

        from interbias.cm.network import torch_threads

        out = []
        with torch.inference_mode(), torch_threads():
            for i in range(0, len(waves), batch_size):
                x = torch.from_numpy(np.stack([self.policy.fit(w) for w in waves[i : i + batch_size]]))
                out.append(self.model(x).double().numpy())
        return np.concatenate(out) if out else np.zeros((0, 2))

    def score(self, waves: list[np.ndarray], *, batch_size: int = 16) -> np.ndarray:
        """Bona fide posteriors P(bona fide | x) = softmax(logits)[1], one per waveform (float64)."""
        return posterior(self.logits(waves, batch_size=batch_size))

    def provenance(self) -> dict[str, Any]:
        return {
            "model": self.card.label,
            "architecture": self.card.architecture,
            "frontend": self.card.frontend,
            "input": self.policy.record(),
            "checkpoint": str(self.checkpoint_path),
            "checkpoint_sha256": self.checkpoint_sha256,
            **{k: v for k, v in self.info.items() if k in ("manifest_sha256", "frontend_sha256", "config_sha256")},
        }


def missing_checkpoints(labels: Any) -> list[str]:
    """One line per CM label whose checkpoint file is not here (looked up, never loaded)."""
    out = []
    for label in labels:
        try:
            CM_MODELS.get(label).checkpoint()
        except EncoderError as exc:
            out.append(str(exc))
    return out


def posterior(logits: np.ndarray) -> np.ndarray:
    """softmax(logits)[:, 1] in float64 (``torch.softmax``)."""
    import torch

    z = torch.from_numpy(np.asarray(logits, dtype=np.float64).reshape(-1, 2))
    return torch.softmax(z, dim=1)[:, 1].numpy()


def read_checkpoint(path: Path, label: str) -> Any:
    """``torch.load(path, weights_only=True)``; an unreadable or unsafe file is one error."""
    import torch

    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many types for a bad or unsafe file
        raise EncoderError(f"{label}: {path} is not a loadable checkpoint ({type(exc).__name__}: {exc})") from None


def load_strict(module: Any, state: dict[str, Any], label: str, path: Path) -> None:
    """``load_state_dict(strict=True)`` with one error naming the first differing keys/shapes."""
    own = module.state_dict()
    missing = sorted(set(own) - set(state))
    extra = sorted(set(state) - set(own))
    shapes = [k for k in own if k in state and tuple(own[k].shape) != tuple(getattr(state[k], "shape", ()))]
    if missing or extra or shapes:
        parts = []
        if missing:
            parts.append(f"{len(missing)} missing key(s) (first: {', '.join(missing[:3])})")
        if extra:
            parts.append(f"{len(extra)} unexpected key(s) (first: {', '.join(extra[:3])})")
        if shapes:
            k = shapes[0]
            parts.append(
                f"{len(shapes)} shape mismatch(es) (first: {k} {tuple(state[k].shape)} vs {tuple(own[k].shape)})"
            )
        raise EncoderError(f"{label}: {path} does not fit the architecture: " + "; ".join(parts))
    module.load_state_dict(state, strict=True)


def load_cm(
    label: str, *, path: str | Path | None = None, frontend_path: str | Path | None = None, resampler: str = "polyphase"
) -> LoadedCM:
    """Build ``label``'s model from its checkpoint (module docstring); ``resampler`` brings
    audio at other rates to the model's (the one part of the input policy a run may choose)."""
    card = CM_MODELS.get(label)
    ckpt = card.checkpoint(path)
    sha = sha256_file(ckpt)
    if card.architecture == "gmm":
        cm = _load_gmm(card, ckpt, sha)
    elif card.architecture == "aasist":
        cm = _load_aasist(card, ckpt, sha)
    else:
        cm = _load_resnet(card, ckpt, sha, frontend_path)
    cm.policy = dataclasses.replace(cm.policy, resampler=resampler)
    return cm


def _load_aasist(card: CMCard, ckpt: Path, sha: str) -> LoadedCM:
    """The published checkpoint (its sha256 pinned), or one written by ``interbias cm train``
    (format-tagged, of this label); any other file is refused."""
    from interbias.cm.aasist import AASIST, AASIST_L, AASISTConfig

    if sha != card.pinned_sha256:
        data = read_checkpoint(ckpt, card.label)
        if isinstance(data, dict) and data.get("format") == FORMAT:
            return _load_trained_aasist(card, ckpt, sha, data)
        raise EncoderError(
            f"{card.label}: {ckpt} has sha256 {sha[:16]}…, not the published checkpoint's {card.pinned_sha256[:16]}… "
            f"nor an `interbias cm train` checkpoint ({card.how_to_get})"
        )
    model = AASIST(AASIST_L if card.label == "AASIST-L" else AASISTConfig())
    load_strict(model, read_checkpoint(ckpt, card.label), card.label, ckpt)
    model.eval()
    return LoadedCM(card, model, InputPolicy(model.cfg.n_samples, card.pad), ckpt, sha, {})


def _load_trained_aasist(card: CMCard, ckpt: Path, sha: str, data: dict[str, Any]) -> LoadedCM:
    from interbias.cm.network import aasist_network

    if data.get("label") != card.label:
        raise EncoderError(f"{card.label}: {ckpt} holds a {data.get('label')!r} model")
    n_samples = int(data["config"]["n_samples"])
    model = aasist_network(card.label, n_samples).classifier
    load_strict(model, data["state_dict"], card.label, ckpt)
    model.eval()
    info = {k: data.get(k) for k in ("manifest_sha256", "config_sha256", "epoch")}
    return LoadedCM(card, model, trained_policy(data["config"], card.pad), ckpt, sha, info)


def _load_gmm(card: CMCard, ckpt: Path, sha: str) -> LoadedCM:
    """A ``GMM-lfcc`` checkpoint (:mod:`interbias.cm.gmm_train`) as a scorer of (0, LLR) logits."""
    from interbias.cm.gmm import CLASSES, GMMScorer, to_numpy

    data = read_checkpoint(ckpt, card.label)
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("label") != card.label:
        raise EncoderError(f"{card.label}: {ckpt} is not an `interbias cm train --model {card.label}` checkpoint")
    model = GMMScorer({c: to_numpy(data["mixtures"][c]) for c in CLASSES})
    info = {k: data.get(k) for k in ("manifest_sha256", "config_sha256")}
    return LoadedCM(card, model, trained_policy(data["config"], "tile"), ckpt, sha, info)


def _load_resnet(card: CMCard, ckpt: Path, sha: str, frontend_path: str | Path | None) -> LoadedCM:
    from interbias.cm.network import build_network

    data = read_checkpoint(ckpt, card.label)
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise EncoderError(f"{card.label}: {ckpt} is not an `interbias cm train` checkpoint (format {FORMAT})")
    if data.get("label") != card.label:
        raise EncoderError(f"{card.label}: {ckpt} holds a {data.get('label')!r} model")
    if data.get("task", "detection") != "detection":
        raise EncoderError(f"{card.label}: {ckpt} is a {data.get('task')} checkpoint, not a bona fide/spoof detector")
    cfg = dict(data["config"])
    folder = frontend_path or cfg.get("frontend_path")
    net = build_network(card.label, cfg, folder, expect_frontend_sha256=data.get("frontend_sha256"))
    load_strict(net.classifier, data["state_dict"], card.label, ckpt)
    net.eval()
    info = {k: data.get(k) for k in ("manifest_sha256", "frontend_sha256", "config_sha256", "epoch")}
    return LoadedCM(card, net, trained_policy(cfg, card.pad), ckpt, sha, info)


def trained_policy(config: dict[str, Any], pad: str) -> InputPolicy:
    """The input policy an ``interbias cm train`` checkpoint was trained under: its ``n_samples``
    at its ``sample_rate_hz`` (16 kHz for checkpoints that do not record one)."""
    return InputPolicy(int(config["n_samples"]), pad, int(config.get("sample_rate_hz") or SAMPLE_RATE_HZ))


def sample_rate_hz() -> int:
    return SAMPLE_RATE_HZ


def model_states() -> list[dict[str, Any]]:
    """Per label: ``present`` (checkpoint file found, with its path), ``missing`` (how to get it)
    or ``train`` (a model without a published checkpoint, trained with ``cm train``)."""
    out = []
    for label, card in CM_MODELS.items():
        try:
            path = card.checkpoint()
            state, detail = "present", str(path)
        except EncoderError:
            state, detail = "missing", f"{card.folder()}: {card.how_to_get}"
        out.append(
            {
                "label": label,
                "architecture": card.architecture,
                "frontend": card.frontend,
                "state": state,
                "detail": detail,
            }
        )
    out.append(  # trained here only (no published checkpoint): interbias.cm.lcnn_frames.LABEL
        {
            "label": "LCNN-LFCC-frames",
            "architecture": "LCNN over LFCC frames, P(fake) per frame (ADD 2023 Track 2 region detector)",
            "frontend": "LFCC",
            "state": "train",
            "detail": "no published checkpoint: interbias cm train --model LCNN-LFCC-frames --corpus synthetic-had, "
            "then cm score LCNN-LFCC-frames --checkpoint <its checkpoint.pt>",
        }
    )
    return out
