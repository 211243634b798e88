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
Training lives in :mod:`interbias.cm.gmm_train`; :func:`interbias.cm.models.load_cm` loads the
checkpoint into a :class:`GMMScorer`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch
from torch import nn

from interbias.cm.frontends import LFCC, FixedLengthConfig
from interbias.utils.errors import ConfigError
from interbias.utils.keyvalue import typed_overrides
from interbias.utils.numbers import require
from interbias.utils.seeding import derive_rng

CLASSES = ("bonafide", "spoof")
LOG_2PI = float(np.log(2 * np.pi))


@dataclass(frozen=True)
class GMMConfig(FixedLengthConfig):
    """Every setting of a ``GMM-lfcc`` training run."""

    n_components: int = 512
    max_iter: int = 50
    tol: float = 1e-4
    var_floor: float = 1e-3
    sample_rate_hz: int = 16000
    duration_s: float = 4.0
    seed: int = 0
    max_per_class: int | None = None

    def override(self, pairs: dict[str, str]) -> GMMConfig:
        kw = typed_overrides(self, pairs, "cm train GMM-lfcc")
        cfg = replace(self, **kw)
        if cfg.n_components < 1 or cfg.max_iter < 1 or cfg.tol < 0 or cfg.var_floor <= 0:
            raise ConfigError("cm train GMM-lfcc: n_components and max_iter must be >= 1, tol >= 0, var_floor > 0")
        cfg.check_input()
        return cfg

    def check_input(self) -> None:
        """The rate and duration in range, and ``duration_s`` at least one LFCC window."""
        require("cm train: sample_rate_hz", self.sample_rate_hz, low=1000.0, high=192000.0, error=ConfigError)
        require("cm train: duration_s", self.duration_s, low=0.0, low_open=True, error=ConfigError)
        if self.max_per_class is not None:
            require("cm train: max_per_class", self.max_per_class, low=1.0, error=ConfigError)
        win = frontend().win
        if self.n_samples < win:
            raise ConfigError(
                f"cm train: duration_s {self.duration_s:g} ({self.n_samples} samples at {self.sample_rate_hz} Hz) is "
                f"shorter than GMM-lfcc needs: at least one full LFCC window of {win} samples"
            )


def checked_config(preset: str, settings: dict[str, str] | None = None) -> GMMConfig:
    """``preset`` plus ``settings``, every value checked before any data is read."""
    if preset not in PRESETS:
        raise ConfigError(f"cm train: unknown config {preset!r}; valid: {', '.join(PRESETS)}")
    return PRESETS[preset].override(settings or {})


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
            out.append(
                float((mixture_llk(x, self.mixtures["bonafide"]) - mixture_llk(x, self.mixtures["spoof"])).mean())
            )
        return np.asarray(out)

    def forward(self, wave: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            llr = torch.from_numpy(self.llr(self.frontend(wave).numpy()))
        return torch.stack([torch.zeros_like(llr), llr], dim=1)


def to_torch(g: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
    return {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in g.items()}


def to_numpy(g: dict[str, Any]) -> dict[str, np.ndarray]:
    return {k: np.asarray(v, dtype=np.float64) for k, v in g.items()}
