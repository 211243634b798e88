"""ORCA training on a grid of cached embeddings (TRIAD/ORCA, Section V).

Objective per step (adapted embeddings ``z' = adapt(z)``, unit length):

``L = Σ_a w_a·SupCon(P_a z', labels_a) + w_orth·Λ̂(z') + w_keep·K(z')``

- ``SupCon(p, y)`` (Khosla et al. 2020) on unit head outputs ``p_i`` of a minibatch of ``B``
  rows: mean over anchors with a positive of ``−1/|P(i)| Σ_{j∈P(i)} log(exp(p_i·p_j/T) /
  Σ_{k≠i} exp(p_i·p_k/T))``, ``P(i)`` the other rows with the anchor's label, temperature ``T``;
  ``a`` over sem (text), voice and expr (style), ``w_a`` = ``w_sem, w_voice, w_expr``.
- Leakage penalty ``Λ̂``: the audit's aggregate leakage, differentiably. Rows ``z'`` centred and
  whitened by the Cholesky factor ``L`` of ``Σ_T + τI`` (``τ = tau_rel·tr(Σ_T)/d``), per axis
  ``W_a = L⁻¹ D_a`` with ``D_a`` the columns ``√π_c (μ_c − μ)``; ``U_a`` the top-``m`` left
  singular vectors of ``W_a``; ``Λ̂`` the mean over the penalised axis pairs of ``‖U_aᵀU_b‖²_F / m``
  (mean squared cosine of the principal angles). Computed on every row of a random
  ``voice_share`` of the training voices, drawn afresh each step, so that the adapter cannot
  fit the training voices' own means (the held-out audit sees other voices).
- Verification term ``K``: the mean over ``keep_pairs`` random row pairs ``(i, j)`` of
  ``(cos(z'_i, z'_j) − cos(z_i, z_j))²``: the base encoder's scores are kept.
- Group-balanced sampling: each SupCon batch draws ``B // G`` rows (with replacement) from each
  of the ``G`` groups (joint values of the group attributes); without it, ``B`` rows uniformly.

``axes`` restricts the objective to single axes (the single-axis ablations): SupCon heads of
the other axes are off and only pairs with a listed axis enter ``Λ̂``.

Everything random (initial weights, batches, voice subsets, pairs) comes from
``torch.Generator`` seeded with ``derive_seed("orca", seed, part)``: in one process the same
data, seed, options and thread count give the same bytes; across processes the linear algebra's
rounding may differ in the last bits (docs/repair.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from interbias.encoders.adapter import AXES, TENSORS
from interbias.utils.budget import check_memory
from interbias.utils.errors import AnalysisError
from interbias.utils.seeding import derive_rng, derive_seed


@dataclass(frozen=True)
class OrcaConfig:
    """Hyper-parameters (all recorded in the adapter manifest); the defaults are the settings
    docs/repair.md measures."""

    hidden: int = 256
    head_dim: int = 32
    steps: int = 400
    batch: int = 512
    lr: float = 3e-3
    temperature: float = 0.1
    w_sem: float = 1.0
    w_voice: float = 1.0
    w_expr: float = 1.0
    w_orth: float = 30.0
    w_keep: float = 100.0
    orthogonality: bool = True
    balanced: bool = True
    tau_rel: float = 1e-3
    #: Share of the training voices whose rows enter the leakage penalty at each step.
    voice_share: float = 0.5
    #: Row pairs per step in the verification term.
    keep_pairs: int = 2048
    #: Subspace dimension of the penalty; ``None``: the audit's default on the training grid.
    m: int | None = None
    #: The axes the objective covers (single-axis ablations list one).
    axes: tuple[str, ...] = AXES

    def check(self) -> None:
        for name in ("hidden", "head_dim", "steps", "batch", "keep_pairs"):
            if getattr(self, name) < 1:
                raise AnalysisError(f"ORCA: {name} must be >= 1; got {getattr(self, name)}")
        if self.m is not None and self.m < 1:
            raise AnalysisError(f"ORCA: m must be >= 1; got {self.m}")
        for name in ("lr", "temperature", "tau_rel"):
            if not (getattr(self, name) > 0 and math.isfinite(getattr(self, name))):
                raise AnalysisError(f"ORCA: {name} must be a finite number > 0; got {getattr(self, name)}")
        if not 0 < self.voice_share <= 1:
            raise AnalysisError(f"ORCA: voice_share must be in (0, 1]; got {self.voice_share}")
        for name in ("w_sem", "w_voice", "w_expr", "w_orth", "w_keep"):
            if not (getattr(self, name) >= 0 and math.isfinite(getattr(self, name))):
                raise AnalysisError(f"ORCA: {name} must be a finite number >= 0; got {getattr(self, name)}")
        bad = [a for a in self.axes if a not in AXES]
        if bad or not self.axes or len(set(self.axes)) != len(self.axes):
            raise AnalysisError(f"ORCA: axes must be distinct names from {', '.join(AXES)}; got {self.axes}")
        if not any(self.weights().values()) and not self.penalised_pairs():
            raise AnalysisError(
                "ORCA: every loss term that changes the geometry is off (all weights 0): nothing to train"
            )

    def weights(self) -> dict[str, float]:
        """The SupCon weight of each axis (0 for an axis outside ``axes``)."""
        given = {"sem": self.w_sem, "voice": self.w_voice, "expr": self.w_expr}
        return {a: given[a] if a in self.axes else 0.0 for a in AXES}

    def penalised_pairs(self) -> list[tuple[str, str]]:
        """Axis pairs in the leakage penalty: those with an axis in ``axes`` (none when it is off)."""
        if not (self.orthogonality and self.w_orth > 0):
            return []
        return [(a, b) for i, a in enumerate(AXES) for b in AXES[i + 1 :] if a in self.axes or b in self.axes]

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["axes"] = list(self.axes)
        return out


@dataclass(frozen=True)
class TrainedAdapter:
    """Float32 tensors (:data:`interbias.encoders.adapter.TENSORS`) and the loss trace."""

    tensors: dict[str, np.ndarray]
    losses: list[dict[str, float]]
    #: The penalty's subspace dimension (0: no penalty).
    m: int = 0


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


def leakage_penalty(z: Any, labels: Mapping[str, Any], tau_rel: float, m: int, pairs: Sequence[tuple[str, str]]) -> Any:
    """Mean over ``pairs`` of ``‖U_aᵀU_b‖²_F / m``, ``U_a`` the top-``m`` left singular vectors of
    ``W_a`` (:func:`whitened_between`): the audit's aggregate leakage Λ, differentiable."""
    import torch

    w = whitened_between(z, {a: labels[a] for a in {x for p in pairs for x in p}}, tau_rel)
    bases = {a: torch.linalg.svd(wa, full_matrices=False)[0][:, :m] for a, wa in w.items()}
    terms = [(bases[a].T @ bases[b]).pow(2).sum() / m for a, b in pairs]
    return sum(terms) / len(terms)


def keep_scores(adapted_i: Any, adapted_j: Any, base_i: Any, base_j: Any) -> Any:
    """Mean of ``(cos(a_i, a_j) − cos(z_i, z_j))²`` over row pairs (the verification term)."""
    import torch

    def cos(u: Any, v: Any) -> Any:
        return (torch.nn.functional.normalize(u, dim=1) * torch.nn.functional.normalize(v, dim=1)).sum(1)

    return (cos(adapted_i, adapted_j) - cos(base_i, base_j)).pow(2).mean()


# ---- the network --------------------------------------------------------------------------------


def check_sizes(d: int, cfg: OrcaConfig) -> None:
    """Refuse a width or batch whose tensors cannot fit in free memory (one line naming the
    memory implied), before torch tries: each hidden unit holds two d-wide float32 weight rows
    with their gradients and two Adam moments; each batch row a float32 similarity row of the
    whole batch and its hidden activations."""
    each = f"2 weight rows of {d} float32 with gradient and 2 Adam moments, 32 × {d} bytes"
    check_memory("--set hidden", cfg.hidden, 32 * d, each, error=AnalysisError)
    row = cfg.batch + cfg.hidden + d
    each = f"a float32 row of similarities, activations and outputs, 4 × ({cfg.batch:,} + {cfg.hidden} + {d}) bytes"
    check_memory("--set batch", cfg.batch, 4 * row, each, error=AnalysisError)


def init_tensors(d: int, cfg: OrcaConfig, seed: int) -> dict[str, Any]:
    """Initial float32 tensors: ``W₁``, heads ~ N(0, 1/d); ``b₁`` = 0; ``W₂``, ``b₂`` = 0 (identity)."""
    import torch

    check_sizes(d, cfg)
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


def penalty_m(cfg: OrcaConfig, n_classes: Mapping[str, int], n_subset_voices: int, d: int) -> int:
    """The penalty's ``m``: ``cfg.m``, or the audit's default ``min_a (C_a − 1)`` capped at
    ``⌊d/2⌋``, with the voice count of one step's voice subset; refused when above that bound."""
    counts = {**n_classes, "voice": n_subset_voices}
    bound = min(min(counts[a] for a in AXES) - 1, d // 2)
    m = bound if cfg.m is None else cfg.m
    if not 1 <= m <= bound:
        raise AnalysisError(
            f"ORCA: penalty subspace m={m} must be in 1..{bound} (classes per axis {counts}, "
            f"{n_subset_voices} voices per step, d={d})"
        )
    return m


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
    n_voices = int(codes["voice"].max()) + 1
    per_step = min(n_voices, max(2, round(cfg.voice_share * n_voices)))
    pairs = cfg.penalised_pairs()
    m = penalty_m(cfg, {a: int(codes[a].max()) + 1 for a in AXES}, per_step, z_all.shape[1]) if pairs else 0
    weights = cfg.weights()
    t = init_tensors(z_all.shape[1], cfg, seed)
    opt = Adam(list(t.values()), lr=cfg.lr)
    draw = batch_sampler(list(groups), cfg, seed)
    g_pen = torch.Generator().manual_seed(derive_seed("orca", seed, "voices"))
    g_keep = torch.Generator().manual_seed(derive_seed("orca", seed, "pairs"))
    losses: list[dict[str, float]] = []
    for step in range(cfg.steps):
        parts = _step_losses(t, z_all, codes, cfg, draw(), weights, pairs, m, per_step, (g_pen, g_keep))
        loss = sum({**weights, "orth": cfg.w_orth, "keep": cfg.w_keep}[k] * v for k, v in parts.items())
        loss.backward()
        opt.step()
        if step % 50 == 0 or step == cfg.steps - 1:
            losses.append(
                {"step": step, "loss": float(loss.detach()), **{k: float(v.detach()) for k, v in parts.items()}}
            )
        if advance:
            advance(1)
    tensors = {k: t[k].detach().numpy().astype(np.float32).copy() for k in TENSORS}
    return TrainedAdapter(tensors, losses, m)


def _step_losses(
    t: Mapping[str, Any],
    z_all: Any,
    codes: Mapping[str, Any],
    cfg: OrcaConfig,
    idx: Any,
    weights: Mapping[str, float],
    pairs: Sequence[tuple[str, str]],
    m: int,
    per_step: int,
    gens: tuple[Any, Any],
) -> dict[str, Any]:
    """The terms of one step's objective (see the module docstring), unweighted."""
    import torch

    parts = {}
    z = forward(t, z_all[idx])
    for a in AXES:
        if weights[a] > 0:
            p = torch.nn.functional.normalize(z @ t[f"head.{a}"].T, dim=1)
            parts[a] = supcon(p, codes[a][idx], cfg.temperature)
    if pairs:
        n_voices = int(codes["voice"].max()) + 1
        chosen = torch.randperm(n_voices, generator=gens[0])[:per_step]
        rows = torch.isin(codes["voice"], chosen)
        parts["orth"] = leakage_penalty(
            forward(t, z_all[rows]), {a: codes[a][rows] for a in AXES}, cfg.tau_rel, m, pairs
        )
    if cfg.w_keep > 0:
        i, j = (torch.randint(0, len(z_all), (cfg.keep_pairs,), generator=gens[1]) for _ in range(2))
        parts["keep"] = keep_scores(forward(t, z_all[i]), forward(t, z_all[j]), z_all[i], z_all[j])
    return parts
