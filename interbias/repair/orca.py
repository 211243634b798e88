"""ORCA training on a grid of cached embeddings (TRIAD/ORCA, Section V).

Objective per minibatch of ``B`` rows (adapted embeddings ``z' = adapt(z)``, unit length):

``L = w_sem·SupCon(P_sem z', text) + w_voice·SupCon(P_voice z', voice) + w_expr·SupCon(P_expr z', style)
+ w_orth·O(z')``

- ``SupCon(p, y)`` (Khosla et al. 2020) on unit head outputs ``p_i``: mean over anchors with a
  positive of ``−1/|P(i)| Σ_{j∈P(i)} log(exp(p_i·p_j/T) / Σ_{k≠i} exp(p_i·p_k/T))``, ``P(i)`` the
  other rows with the anchor's label, temperature ``T``.
- Orthogonality penalty ``O``: the batch's centred ``z'`` whitened by the Cholesky factor ``L`` of
  ``Σ_T + τI`` (``τ = tau_rel·tr(Σ_T)/d``), per axis ``W_a = L⁻¹ D_a`` with ``D_a`` the columns
  ``√π_c (μ_c − μ)`` (so ``W_a W_aᵀ`` is the whitened between-class scatter ``S_a``); ``O`` is the
  mean over the three axis pairs of ``tr(S_a S_b) / (‖S_a‖_F ‖S_b‖_F) ∈ [0, 1]``, zero exactly when
  the whitened between-class subspaces are orthogonal: an energy-weighted, differentiable form
  of the aggregate leakage Λ that the audit measures on the top-``m`` subspaces.
- Group-balanced sampling: each batch draws ``B // G`` rows (with replacement) from each of the
  ``G`` groups (joint values of the group attributes); without it, ``B`` rows uniformly.

Everything random (initial weights, batches) comes from ``torch.Generator`` seeded with
``derive_seed("orca", seed, part)``: the same data, seed, options and thread count give the
same bytes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from interbias.encoders.adapter import AXES, TENSORS
from interbias.utils.errors import AnalysisError
from interbias.utils.seeding import derive_rng, derive_seed


@dataclass(frozen=True)
class OrcaConfig:
    """Hyper-parameters (all recorded in the adapter manifest)."""

    hidden: int = 256
    head_dim: int = 32
    steps: int = 400
    batch: int = 512
    lr: float = 1e-3
    temperature: float = 0.1
    w_sem: float = 1.0
    w_voice: float = 1.0
    w_expr: float = 1.0
    w_orth: float = 4.0
    orthogonality: bool = True
    balanced: bool = True
    tau_rel: float = 1e-2

    def check(self) -> None:
        for name in ("hidden", "head_dim", "steps", "batch"):
            if getattr(self, name) < 1:
                raise AnalysisError(f"ORCA: {name} must be >= 1; got {getattr(self, name)}")
        for name in ("lr", "temperature", "tau_rel"):
            if not getattr(self, name) > 0:
                raise AnalysisError(f"ORCA: {name} must be > 0; got {getattr(self, name)}")
        for name in ("w_sem", "w_voice", "w_expr", "w_orth"):
            if not (getattr(self, name) >= 0 and math.isfinite(getattr(self, name))):
                raise AnalysisError(f"ORCA: loss weight {name} must be a finite number >= 0; got {getattr(self, name)}")
        if self.w_sem == self.w_voice == self.w_expr == 0 and not (self.orthogonality and self.w_orth > 0):
            raise AnalysisError("ORCA: every loss term is off (all weights 0): nothing to train")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class TrainedAdapter:
    """Float32 tensors (:data:`interbias.encoders.adapter.TENSORS`) and the loss trace."""

    tensors: dict[str, np.ndarray]
    losses: list[dict[str, float]]


# ---- the voice-disjoint split -----------------------------------------------------------------


@dataclass(frozen=True)
class VoiceSplit:
    """Training and held-out voices (disjoint, sorted)."""

    train: tuple[str, ...]
    heldout: tuple[str, ...]
    #: Groups whose held-out count ``round(share·n)`` was clamped to ``1..n−1``.
    clamped: tuple[str, ...] = ()

    def check_disjoint(self) -> None:
        shared = sorted(set(self.train) & set(self.heldout))
        if shared:
            raise AnalysisError(f"ORCA split: {len(shared)} voice(s) on both sides, first: {shared[0]!r}")


def split_voices(group_of_voice: Mapping[str, str], *, heldout_share: float, seed: int) -> VoiceSplit:
    """Held-out voices drawn within each group (a joint value of the group attributes), so both
    sides keep every group: ``round(share·n)`` of a group's ``n`` voices, clamped to ``1..n−1``
    when ``n ≥ 2``; a group of one voice goes to a side drawn from ``derive_rng("orca-split",
    seed, group)``. Needs at least 2 voices on each side."""
    if not 0 < heldout_share < 1:
        raise AnalysisError(f"--heldout-share must be in (0, 1); got {heldout_share}")
    by_group: dict[str, list[str]] = {}
    for voice, group in group_of_voice.items():
        by_group.setdefault(str(group), []).append(str(voice))
    train: list[str] = []
    held: list[str] = []
    clamped: list[str] = []
    for group in sorted(by_group):
        voices = sorted(by_group[group])
        order = [voices[i] for i in derive_rng("orca-split", seed, group).permutation(len(voices))]
        n = len(voices)
        if n >= 2:
            k = min(max(round(heldout_share * n), 1), n - 1)
            if k != round(heldout_share * n):
                clamped.append(group)
        else:
            k = int(derive_rng("orca-split", seed, group, "single").random() < heldout_share)
        held += order[:k]
        train += order[k:]
    split = VoiceSplit(tuple(sorted(train)), tuple(sorted(held)), tuple(clamped))
    split.check_disjoint()
    if len(split.train) < 2 or len(split.heldout) < 2:
        raise AnalysisError(
            f"ORCA split: needs >= 2 voices on each side; got {len(split.train)} training, {len(split.heldout)} held out"
        )
    return split


# ---- losses -------------------------------------------------------------------------------------


def supcon(p: Any, labels: Any, temperature: float) -> Any:
    """Supervised contrastive loss of unit rows ``p`` (B × k) with integer ``labels`` (B,)."""
    import torch

    sim = p @ p.T / temperature
    eye = torch.eye(len(p), dtype=torch.bool)
    sim = sim.masked_fill(eye, -1e9)
    log_prob = sim - torch.logsumexp(sim, dim=1, keepdim=True)
    pos = (labels[:, None] == labels[None, :]) & ~eye
    n_pos = pos.sum(1)
    has = n_pos > 0
    if not bool(has.any()):
        return p.sum() * 0.0
    per_anchor = -(log_prob * pos).sum(1)[has] / n_pos[has]
    return per_anchor.mean()


def whitened_between(z: Any, labels: Mapping[str, Any], tau_rel: float) -> dict[str, Any]:
    """``W_a = L⁻¹ D_a`` per axis (see the module docstring) for the rows ``z`` (B × d)."""
    import torch

    n, d = z.shape
    zc = z - z.mean(0, keepdim=True)
    total = zc.T @ zc / n
    tau = tau_rel * torch.trace(total).detach() / d
    chol = torch.linalg.cholesky(total + tau * torch.eye(d, dtype=z.dtype))
    out = {}
    for axis, lab in labels.items():
        classes, idx = torch.unique(lab, return_inverse=True)
        counts = torch.bincount(idx, minlength=len(classes)).to(z.dtype)
        sums = torch.zeros(len(classes), d, dtype=z.dtype).index_add(0, idx, zc)
        means = sums / counts[:, None]
        dmat = (means * torch.sqrt(counts / n)[:, None]).T  # d × C
        out[axis] = torch.linalg.solve_triangular(chol, dmat, upper=False)
    return out


def orthogonality_penalty(z: Any, labels: Mapping[str, Any], tau_rel: float) -> Any:
    """Mean over axis pairs of ``tr(S_a S_b)/(‖S_a‖_F‖S_b‖_F)``, ``S_a = W_a W_aᵀ``."""
    w = whitened_between(z, labels, tau_rel)
    names = list(w)
    terms = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            cross = (w[a].T @ w[b]).pow(2).sum()
            norm_a = (w[a].T @ w[a]).pow(2).sum().sqrt()
            norm_b = (w[b].T @ w[b]).pow(2).sum().sqrt()
            terms.append(cross / (norm_a * norm_b + 1e-12))
    return sum(terms) / len(terms)


# ---- the network --------------------------------------------------------------------------------


def init_tensors(d: int, cfg: OrcaConfig, seed: int) -> dict[str, Any]:
    """Initial float32 tensors: ``W₁``, heads ~ N(0, 1/d); ``b₁`` = 0; ``W₂``, ``b₂`` = 0 (identity)."""
    import torch

    g = torch.Generator().manual_seed(derive_seed("orca", seed, "init"))
    scale = 1.0 / math.sqrt(d)
    t = {
        "adapter.w1": torch.randn(cfg.hidden, d, generator=g) * scale,
        "adapter.b1": torch.zeros(cfg.hidden),
        "adapter.w2": torch.zeros(d, cfg.hidden),
        "adapter.b2": torch.zeros(d),
    }
    for a in AXES:
        t[f"head.{a}"] = torch.randn(cfg.head_dim, d, generator=g) * scale
    return {k: v.requires_grad_(True) for k, v in t.items()}


def forward(t: Mapping[str, Any], z: Any) -> Any:
    """``adapt(z)`` in torch (see :mod:`interbias.encoders.adapter`)."""
    import torch

    hidden = torch.nn.functional.gelu(z @ t["adapter.w1"].T + t["adapter.b1"])
    out = z + hidden @ t["adapter.w2"].T + t["adapter.b2"]
    return torch.nn.functional.normalize(out, dim=1)


def batch_sampler(groups: Sequence[str], cfg: OrcaConfig, seed: int) -> Callable[[], Any]:
    """A function returning the next batch's row indices (see the module docstring)."""
    import torch

    g = torch.Generator().manual_seed(derive_seed("orca", seed, "batches", cfg.balanced))
    n = len(groups)
    if not cfg.balanced:
        return lambda: torch.randint(0, n, (cfg.batch,), generator=g)
    members = [torch.tensor([i for i, x in enumerate(groups) if x == name]) for name in sorted(set(groups))]
    per = max(1, cfg.batch // len(members))

    def draw() -> Any:
        return torch.cat([m[torch.randint(0, len(m), (per,), generator=g)] for m in members])

    return draw


class Adam:
    """Adam (Kingma & Ba 2015; β = 0.9, 0.999, ε = 1e-8, bias-corrected) over leaf tensors; clears
    the gradients after each step. Written out because ``torch.optim``'s first use imports
    ``torch._dynamo`` (tens of seconds on a loaded 2-core machine)."""

    def __init__(self, params: Sequence[Any], lr: float, betas: tuple[float, float] = (0.9, 0.999)) -> None:
        import torch

        self.params = list(params)
        self.lr, self.betas, self.t = lr, betas, 0
        self.m = [torch.zeros_like(p) for p in self.params]
        self.v = [torch.zeros_like(p) for p in self.params]

    def step(self) -> None:
        import torch

        self.t += 1
        b1, b2 = self.betas
        with torch.no_grad():
            for p, m, v in zip(self.params, self.m, self.v, strict=True):
                if p.grad is None:
                    continue
                m.mul_(b1).add_(p.grad, alpha=1 - b1)
                v.mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)
                m_hat = m / (1 - b1**self.t)
                v_hat = v / (1 - b2**self.t)
                p.sub_(self.lr * m_hat / (v_hat.sqrt() + 1e-8))
                p.grad = None


def _codes(values: Sequence[str]) -> Any:
    import torch

    lookup = {v: i for i, v in enumerate(sorted(set(values)))}
    return torch.tensor([lookup[v] for v in values])


def train(
    x: np.ndarray,
    labels: Mapping[str, Sequence[str]],
    groups: Sequence[str],
    cfg: OrcaConfig,
    *,
    seed: int,
    advance: Callable[[int], None] | None = None,
) -> TrainedAdapter:
    """Train ORCA on rows ``x`` (n × d, unit rows) with ``labels`` per axis (sem, voice, expr)
    and a group per row (balanced sampling). Adam, ``cfg.steps`` steps, on one thread."""
    import torch

    cfg.check()
    x = np.asarray(x, dtype=np.float32)
    if x.ndim != 2 or len(x) < 4:
        raise AnalysisError(f"ORCA: needs an (n, d) embedding matrix with n >= 4; got shape {x.shape}")
    if set(labels) != set(AXES):
        raise AnalysisError(f"ORCA: labels for exactly {', '.join(AXES)}; got {', '.join(labels)}")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the bytes of a float reduction depend on the thread count
    try:
        return _train(torch.from_numpy(x), labels, groups, cfg, seed, advance)
    finally:
        torch.set_num_threads(threads)


def _train(
    z_all: Any,
    labels: Mapping[str, Sequence[str]],
    groups: Sequence[str],
    cfg: OrcaConfig,
    seed: int,
    advance: Callable[[int], None] | None,
) -> TrainedAdapter:
    import torch

    codes = {a: _codes(list(labels[a])) for a in AXES}
    weights = {"sem": cfg.w_sem, "voice": cfg.w_voice, "expr": cfg.w_expr}
    t = init_tensors(z_all.shape[1], cfg, seed)
    opt = Adam(list(t.values()), lr=cfg.lr)
    draw = batch_sampler(list(groups), cfg, seed)
    losses: list[dict[str, float]] = []
    for step in range(cfg.steps):
        idx = draw()
        z = forward(t, z_all[idx])
        parts = {}
        for a in AXES:
            if weights[a] > 0:
                p = torch.nn.functional.normalize(z @ t[f"head.{a}"].T, dim=1)
                parts[a] = supcon(p, codes[a][idx], cfg.temperature)
        if cfg.orthogonality and cfg.w_orth > 0:
            parts["orth"] = orthogonality_penalty(z, {a: codes[a][idx] for a in AXES}, cfg.tau_rel)
        loss = sum(weights.get(k, cfg.w_orth) * v for k, v in parts.items())
        loss.backward()
        opt.step()
        if step % 50 == 0 or step == cfg.steps - 1:
            losses.append(
                {"step": step, "loss": float(loss.detach()), **{k: float(v.detach()) for k, v in parts.items()}}
            )
        if advance:
            advance(1)
    tensors = {k: t[k].detach().numpy().astype(np.float32).copy() for k in TENSORS}
    return TrainedAdapter(tensors, losses)
