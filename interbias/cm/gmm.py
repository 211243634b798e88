"""``GMM-lfcc``: the ADD 2023 detection baseline S01 — two Gaussian mixtures with diagonal
covariances over LFCC frames, one for bona fide and one for spoofed speech; the score of an
utterance is the mean over its frames of log p(x | bona fide) − log p(x | spoof).

Features: :class:`~interbias.cm.frontends.LFCC` with 30 ms windows every 15 ms (480 / 240
samples, the ASVspoof 2021 LFCC-GMM setting), 60 rows. Input policy: 16 kHz, the waveform
tiled or cut to ``duration_s`` (``tile``: zero padding would add identical silent frames to
both classes' training data).

EM (own, deterministic): the means start at ``n_components`` training frames of the class
drawn by ``derive_rng("cm-gmm-init", seed, class)``, every variance at the class's per-dimension
variance, equal weights; each iteration is an E step (responsibilities by log-sum-exp) and an
M step (weights N_k/N, means, variances floored at ``var_floor`` × the class variance). Both
mixtures step together; a mixture stops when its mean log-likelihood per frame improved by
less than ``tol`` over its last iteration. After every iteration ``state.pt`` holds both
mixtures and the curve, so a stopped or killed run resumes where it was; ``checkpoint.pt``
holds the final mixtures (format :data:`~interbias.cm.models.FORMAT`, loads ``weights_only``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import nn

from interbias.cm.frontends import LFCC, InputPolicy
from interbias.utils import atomic
from interbias.utils.errors import ConfigError, EncoderError
from interbias.utils.seeding import canonical_json, derive_rng, sha256_text

CLASSES = ("bonafide", "spoof")
LOG_2PI = float(np.log(2 * np.pi))


@dataclass(frozen=True)
class GMMConfig:
    """Every setting of a ``GMM-lfcc`` training run."""

    n_components: int = 512
    max_iter: int = 50
    tol: float = 1e-4
    var_floor: float = 1e-3
    sample_rate_hz: int = 16000
    duration_s: float = 4.0
    seed: int = 0
    max_per_class: int | None = None

    @property
    def n_samples(self) -> int:
        return int(round(self.duration_s * self.sample_rate_hz))

    def sha256(self) -> str:
        return sha256_text(canonical_json(asdict(self)))

    def override(self, pairs: dict[str, str]) -> GMMConfig:
        kinds = {f.name: f.type for f in fields(self)}
        kw: dict[str, Any] = {}
        for k, v in pairs.items():
            if k not in kinds:
                raise ConfigError(f"cm train GMM-lfcc: unknown setting {k!r}; valid: {', '.join(kinds)}")
            try:
                if k == "max_per_class":
                    kw[k] = None if v.lower() in ("", "none", "all") else int(v)
                else:
                    kw[k] = (float if "float" in str(kinds[k]) else int)(v)
            except ValueError:
                raise ConfigError(f"cm train GMM-lfcc: {k}={v!r} is not a number") from None
        cfg = replace(self, **kw)
        if cfg.n_components < 1 or cfg.max_iter < 1 or cfg.tol < 0 or cfg.var_floor <= 0:
            raise ConfigError("cm train GMM-lfcc: n_components and max_iter must be >= 1, tol >= 0, var_floor > 0")
        return cfg


#: ``paper``: 512 components (the ASVspoof 2021 baseline's size); ``small``: minutes on a CPU.
PRESETS = {"paper": GMMConfig(), "small": GMMConfig(n_components=16, max_iter=20, max_per_class=120)}


def frontend() -> LFCC:
    return LFCC(win=480, hop=240)


def log_gauss(x: np.ndarray, w: np.ndarray, mu: np.ndarray, var: np.ndarray) -> np.ndarray:
    """(N, K) log w_k + log N(x_n | μ_k, diag var_k)."""
    prec = 1.0 / var
    quad = (x**2) @ prec.T - 2.0 * x @ (mu * prec).T + (mu**2 * prec).sum(axis=1)
    return np.log(w) - 0.5 * (x.shape[1] * LOG_2PI + np.log(var).sum(axis=1) + quad)


def logsumexp(a: np.ndarray) -> np.ndarray:
    m = a.max(axis=1, keepdims=True)
    return (m + np.log(np.exp(a - m).sum(axis=1, keepdims=True)))[:, 0]


def init_mixture(x: np.ndarray, k: int, seed: int, name: str) -> dict[str, np.ndarray]:
    if len(x) < k:
        raise ConfigError(f"GMM-lfcc: class {name} has {len(x)} frames, fewer than n_components = {k}")
    pick = np.sort(derive_rng("cm-gmm-init", seed, name).choice(len(x), k, replace=False))
    var = np.tile(x.var(axis=0), (k, 1))
    return {"weights": np.full(k, 1.0 / k), "means": x[pick].copy(), "vars": var}


def em_step(x: np.ndarray, g: dict[str, np.ndarray], floor: np.ndarray) -> tuple[dict[str, np.ndarray], float]:
    """One EM iteration; returns the new mixture and the mean log-likelihood per frame before it."""
    lg = log_gauss(x, g["weights"], g["means"], g["vars"])
    ll = logsumexp(lg)
    r = np.exp(lg - ll[:, None])
    nk = np.maximum(r.sum(axis=0), 1e-10)
    means = (r.T @ x) / nk[:, None]
    var = np.maximum((r.T @ x**2) / nk[:, None] - means**2, floor)
    return {"weights": nk / nk.sum(), "means": means, "vars": var}, float(ll.mean())


def mixture_llk(x: np.ndarray, g: dict[str, Any]) -> np.ndarray:
    """Per-frame log p(x | mixture)."""
    return logsumexp(log_gauss(x, *(np.asarray(g[k], dtype=np.float64) for k in ("weights", "means", "vars"))))


class GMMScorer(nn.Module):
    """``forward(wave)``: (batch, n_samples) → logits (0, LLR): softmax[1] = sigmoid(LLR)."""

    def __init__(self, mixtures: dict[str, dict[str, Any]]) -> None:
        super().__init__()
        self.mixtures = mixtures
        self.frontend = frontend()

    def llr(self, feats: np.ndarray) -> np.ndarray:
        """(N, F, T) LFCC maps → per-utterance mean frame LLR."""
        out = []
        for f in feats:
            x = f.T.astype(np.float64)
            out.append(float((mixture_llk(x, self.mixtures["bonafide"]) - mixture_llk(x, self.mixtures["spoof"])).mean()))
        return np.asarray(out)

    def forward(self, wave: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            llr = torch.from_numpy(self.llr(self.frontend(wave).numpy()))
        return torch.stack([torch.zeros_like(llr), llr], dim=1)


@dataclass
class GMMTrainer:
    label: str
    cfg: GMMConfig
    out: Path
    log: Callable[[str], None] = print

    def frames(self, manifest: Any, utts: list[Any]) -> np.ndarray:
        from interbias.cm.train import load_waves

        waves = torch.from_numpy(load_waves(manifest, utts, self.cfg, "tile"))  # type: ignore[arg-type]
        with torch.no_grad():
            feats = torch.cat([frontend()(waves[i : i + 32]) for i in range(0, len(waves), 32)]).numpy()
        return feats.astype(np.float64)

    def header(self, data_sha: str) -> dict[str, Any]:
        from interbias.cm.models import FORMAT

        config = {**asdict(self.cfg), "n_samples": self.cfg.n_samples}
        return {"format": FORMAT, "label": self.label, "task": "detection", "config": config,
                "config_sha256": self.cfg.sha256(), "manifest_sha256": data_sha}  # fmt: skip

    def resume(self, header: dict[str, Any]) -> dict[str, Any] | None:
        from interbias.cm.loop import STATE, resume_state

        return resume_state(self, header) if (self.out / STATE).is_file() else None


def to_torch(g: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
    return {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in g.items()}


def to_numpy(g: dict[str, Any]) -> dict[str, np.ndarray]:
    return {k: np.asarray(v, dtype=np.float64) for k, v in g.items()}


def em_loop(t: GMMTrainer, data: dict[str, np.ndarray], header: dict[str, Any], stop_after: int | None) -> dict:
    """EM iterations with a state after each (module docstring); returns the final state."""
    from interbias.cm.loop import STATE, save

    floors = {c: t.cfg.var_floor * data[c].var(axis=0) for c in CLASSES}
    state = t.resume(header)
    if state is None:
        mix = {c: init_mixture(data[c], t.cfg.n_components, t.cfg.seed, c) for c in CLASSES}
        curve: list[dict[str, Any]] = []
        done = dict.fromkeys(CLASSES, False)
    else:
        mix = {c: to_numpy(state["mixtures"][c]) for c in CLASSES}
        curve, done = list(state["curve"]), dict(state["converged"])
        t.log(f"resuming after iteration {len(curve)}")
    steps = 0
    while len(curve) < t.cfg.max_iter and not all(done.values()) and (stop_after is None or steps < stop_after):
        t0 = time.perf_counter()
        row: dict[str, Any] = {"iteration": len(curve) + 1}
        for c in CLASSES:
            row[f"ll_{c}"] = None
            if not done[c]:
                prev = [r[f"ll_{c}"] for r in curve if r.get(f"ll_{c}") is not None]
                mix[c], row[f"ll_{c}"] = em_step(data[c], mix[c], floors[c])
                done[c] = bool(prev) and row[f"ll_{c}"] - prev[-1] < t.cfg.tol
        row["seconds"] = round(time.perf_counter() - t0, 3)
        curve.append(row)
        steps += 1
        snap = {**header, "mixtures": {c: to_torch(mix[c]) for c in CLASSES}, "curve": curve, "converged": done}
        save(t.out / STATE, snap)
        atomic.write_csv(t.out / "curve.csv", pd.DataFrame(curve))
        lls = {c: row[f"ll_{c}"] for c in CLASSES}
        t.log(f"iteration {row['iteration']}: " + ", ".join(f"{c} {v:.4f}" for c, v in lls.items() if v is not None))
    return {"mixtures": mix, "curve": curve, "converged": done}


def train_gmm(
    label: str, manifest: Any, *, preset: str = "paper", settings: dict[str, str] | None = None, out: Path | None = None,
    stop_after: int | None = None, log: Callable[[str], None] = print,
) -> tuple[Path, dict[str, Any]]:  # fmt: skip
    """Train (or resume) ``GMM-lfcc`` on the train split; the dev EER of the result in the summary."""
    from interbias.cm.loop import CHECKPOINT, INFO, save
    from interbias.cm.models import CM_MODELS
    from interbias.cm.train import select, training_manifest_sha256
    from interbias.corpora.cm_corpus import check_cm_manifest
    from interbias.metrics.verification import eer

    if preset not in PRESETS:
        raise ConfigError(f"cm train: unknown config {preset!r}; valid: {', '.join(PRESETS)}")
    cfg = PRESETS[preset].override(settings or {})
    folder = Path(out) if out else CM_MODELS.get(label).folder()
    folder.mkdir(parents=True, exist_ok=True)
    check_cm_manifest(manifest)
    train_u, dev_u = select(manifest, "train", cfg), select(manifest, "dev", cfg)  # type: ignore[arg-type]
    t = GMMTrainer(label, cfg, folder, log)
    header = t.header(training_manifest_sha256(train_u + dev_u))
    feats = t.frames(manifest, train_u)
    data = {c: np.concatenate([f.T for f, u in zip(feats, train_u, strict=True) if u.get("label") == c]) for c in CLASSES}
    final = em_loop(t, data, header, stop_after)
    info = {k: v for k, v in header.items() if k != "format"}
    info.update(n_train=len(train_u), n_dev=len(dev_u), iterations=len(final["curve"]), converged=final["converged"])
    finished = all(final["converged"].values()) or len(final["curve"]) >= cfg.max_iter
    info["stopped"] = "converged" if all(final["converged"].values()) else ("max_iter" if finished else "stopped")
    if finished:
        mix = {c: to_torch(final["mixtures"][c]) for c in CLASSES}
        save(folder / CHECKPOINT, {**header, "mixtures": mix})
        llr = GMMScorer(final["mixtures"]).llr(t.frames(manifest, dev_u))
        info["dev_eer"] = float(eer(llr, np.asarray([u.get("label") == "bonafide" for u in dev_u], dtype=int)))
    atomic.write_text(folder / INFO, json.dumps(info, indent=2, sort_keys=True) + "\n")
    return folder, info


def load_gmm(card: Any, ckpt: Path, sha: str) -> Any:
    """A ``GMM-lfcc`` checkpoint as a :class:`~interbias.cm.models.LoadedCM`."""
    from interbias.cm.models import FORMAT, LoadedCM, read_checkpoint

    data = read_checkpoint(ckpt, card.label)
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("label") != card.label:
        raise EncoderError(f"{card.label}: {ckpt} is not an `interbias cm train --model {card.label}` checkpoint")
    model = GMMScorer({c: to_numpy(data["mixtures"][c]) for c in CLASSES})
    info = {k: data.get(k) for k in ("manifest_sha256", "config_sha256")}
    return LoadedCM(card, model, InputPolicy(int(data["config"]["n_samples"]), "tile"), ckpt, sha, info)
