"""AASIST (Jung et al., ICASSP 2022), interbias's own definition of the original architecture.

Written from the paper and the authors' description of their reference model, with the
parameter names of their published checkpoints (``AASIST.pth``, ``AASIST-L.pth``), so that a
checkpoint of that layout loads with ``load_state_dict(strict=True)``:

1. a fixed (not trained) sinc band-pass filter bank on the raw waveform: ``n_filters`` filters
   of ``first_conv`` + 1 taps (made odd), edges equally spaced on the mel scale over 0–8 kHz
   (512-point FFT grid), Hamming-windowed; |·|, 3×3 max pooling, batch norm, SELU;
2. six residual blocks (2×3 convolutions, batch norm, SELU, a 1×3 projection shortcut when the
   width changes, 1×3 max pooling over time) → a (channels, 23 sub-bands, time) map;
3. spectral and temporal graphs (max |·| over time, resp. frequency; the spectral nodes get
   a learnt positional embedding ``pos_S``), each through a graph attention layer and top-k
   graph pooling;
4. two branches of two heterogeneous stacking graph attention layers with a learnt master
   node, pooled, combined by an element-wise maximum;
5. readout: [max |T|, mean T, max |S|, mean S, master] → a linear layer to two logits
   (index 0 = spoof, 1 = bona fide).

Two quirks of the reference forward pass are kept, because they define what the published
weights compute: a residual block's first convolution reads the block input (its batch norm
+ SELU pre-activation is computed but unused), and the heterogeneous layers start from the
learnt master node itself, not a per-batch copy. The input is ``n_samples`` = 64 600 samples
(4.04 s at 16 kHz).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class AASISTConfig:
    """Hyper-parameters of the architecture; defaults are the published AASIST."""

    n_samples: int = 64600
    first_conv: int = 128
    n_filters: int = 70
    blocks: tuple[tuple[int, int], ...] = ((1, 32), (32, 32), (32, 64), (64, 64), (64, 64), (64, 64))
    gat_dims: tuple[int, int] = (64, 32)
    pool_ratios: tuple[float, float, float, float] = (0.5, 0.7, 0.5, 0.5)
    temperatures: tuple[float, float, float, float] = (2.0, 2.0, 100.0, 100.0)

    def as_dict(self) -> dict:
        return asdict(self)


#: AASIST-L, the light variant the authors also publish.
AASIST_L = AASISTConfig(
    blocks=((1, 32), (32, 32), (32, 24), (24, 24), (24, 24), (24, 24)),
    gat_dims=(24, 32),
    pool_ratios=(0.4, 0.5, 0.7, 0.5),
)


def sinc_filters(n_filters: int, taps: int, sr: int = 16000) -> np.ndarray:
    """(n_filters, taps) mel-spaced Hamming-windowed band-pass filters (step 1 above)."""
    taps = taps + 1 if taps % 2 == 0 else taps
    hz = (sr // 2) * np.linspace(0, 1, 257)
    mel = 2595 * np.log10(1 + hz / 700)
    edges_mel = np.linspace(mel.min(), mel.max(), n_filters + 1)
    edges = 700 * (10 ** (edges_mel / 2595) - 1)
    t = np.arange(-(taps - 1) / 2, (taps - 1) / 2 + 1)
    out = np.zeros((n_filters, taps), dtype=np.float32)
    win = np.hamming(taps).astype(np.float32)
    for i in range(n_filters):
        lo, hi = edges[i], edges[i + 1]
        ideal = 2 * hi / sr * np.sinc(2 * hi * t / sr) - 2 * lo / sr * np.sinc(2 * lo * t / sr)
        out[i] = win * ideal.astype(np.float32)
    return out


class ResidualBlock(nn.Module):
    def __init__(self, cin: int, cout: int, first: bool) -> None:
        super().__init__()
        self.first = first
        if not first:
            self.bn1 = nn.BatchNorm2d(cin)
        self.conv1 = nn.Conv2d(cin, cout, (2, 3), padding=(1, 1))
        self.bn2 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, (2, 3), padding=(0, 1))
        if cin != cout:
            self.conv_downsample = nn.Conv2d(cin, cout, (1, 3), padding=(0, 1))
        self.pool = nn.MaxPool2d((1, 3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.first and self.training:
            self.bn1(x)  # the reference computes this pre-activation and discards it (stats only)
        y = self.conv2(F.selu(self.bn2(self.conv1(x))))
        skip = self.conv_downsample(x) if hasattr(self, "conv_downsample") else x
        return self.pool(y + skip)


def pairwise(x: torch.Tensor) -> torch.Tensor:
    """(B, N, D) → (B, N, N, D) products of every pair of nodes."""
    return x.unsqueeze(2) * x.unsqueeze(1)


def bn_nodes(bn: nn.BatchNorm1d, x: torch.Tensor) -> torch.Tensor:
    """Batch norm over the feature axis of every node."""
    return bn(x.reshape(-1, x.shape[-1])).reshape(x.shape)


class GraphAttention(nn.Module):
    def __init__(self, din: int, dout: int, temperature: float) -> None:
        super().__init__()
        self.att_proj = nn.Linear(din, dout)
        self.att_weight = nn.Parameter(torch.empty(dout, 1))
        self.proj_with_att = nn.Linear(din, dout)
        self.proj_without_att = nn.Linear(din, dout)
        self.bn = nn.BatchNorm1d(dout)
        self.drop = nn.Dropout(0.2)
        self.temperature = temperature

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.drop(x)
        att = torch.tanh(self.att_proj(pairwise(x))) @ self.att_weight
        att = F.softmax(att / self.temperature, dim=-2).squeeze(-1)
        y = self.proj_with_att(att @ x) + self.proj_without_att(x)
        return F.selu(bn_nodes(self.bn, y))


class HeteroGraphAttention(nn.Module):
    """Heterogeneous stacking graph attention over two node types plus a master node."""

    def __init__(self, din: int, dout: int, temperature: float) -> None:
        super().__init__()
        self.proj_type1 = nn.Linear(din, din)
        self.proj_type2 = nn.Linear(din, din)
        self.att_proj = nn.Linear(din, dout)
        self.att_projM = nn.Linear(din, dout)
        self.att_weight11 = nn.Parameter(torch.empty(dout, 1))
        self.att_weight22 = nn.Parameter(torch.empty(dout, 1))
        self.att_weight12 = nn.Parameter(torch.empty(dout, 1))
        self.att_weightM = nn.Parameter(torch.empty(dout, 1))
        self.proj_with_att = nn.Linear(din, dout)
        self.proj_without_att = nn.Linear(din, dout)
        self.proj_with_attM = nn.Linear(din, dout)
        self.proj_without_attM = nn.Linear(din, dout)
        self.bn = nn.BatchNorm1d(dout)
        self.drop = nn.Dropout(0.2)
        self.temperature = temperature

    def attention(self, x: torch.Tensor, n1: int) -> torch.Tensor:
        a = torch.tanh(self.att_proj(pairwise(x)))
        att = torch.empty(*a.shape[:3], 1, dtype=a.dtype, device=a.device)
        att[:, :n1, :n1] = a[:, :n1, :n1] @ self.att_weight11
        att[:, n1:, n1:] = a[:, n1:, n1:] @ self.att_weight22
        att[:, :n1, n1:] = a[:, :n1, n1:] @ self.att_weight12
        att[:, n1:, :n1] = a[:, n1:, :n1] @ self.att_weight12
        return F.softmax(att / self.temperature, dim=-2).squeeze(-1)

    def forward(
        self, x1: torch.Tensor, x2: torch.Tensor, master: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        n1 = x1.shape[1]
        x = self.drop(torch.cat([self.proj_type1(x1), self.proj_type2(x2)], dim=1))
        att_m = torch.tanh(self.att_projM(x * master)) @ self.att_weightM
        att_m = F.softmax(att_m / self.temperature, dim=-2).squeeze(-1)
        master = self.proj_with_attM(att_m.unsqueeze(1) @ x) + self.proj_without_attM(master)
        att = self.attention(x, n1)
        y = F.selu(bn_nodes(self.bn, self.proj_with_att(att @ x) + self.proj_without_att(x)))
        return y[:, :n1], y[:, n1:], master


class GraphPool(nn.Module):
    """Keep the top ⌊k·N⌋ (≥ 1) nodes by a sigmoid score, each scaled by its score."""

    def __init__(self, k: float, dim: int, p: float) -> None:
        super().__init__()
        self.k = k
        self.proj = nn.Linear(dim, 1)
        self.drop = nn.Dropout(p)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        scores = torch.sigmoid(self.proj(self.drop(h)))
        n = max(int(h.shape[1] * self.k), 1)
        idx = torch.topk(scores, n, dim=1).indices.expand(-1, -1, h.shape[2])
        return torch.gather(h * scores, 1, idx)


class AASIST(nn.Module):
    """``forward(x)`` with x of shape (batch, n_samples) → logits (batch, 2)."""

    def __init__(self, cfg: AASISTConfig = AASISTConfig()) -> None:
        super().__init__()
        self.cfg = cfg
        g0, g1 = cfg.gat_dims
        t = cfg.temperatures
        filt = torch.from_numpy(sinc_filters(cfg.n_filters, cfg.first_conv)).unsqueeze(1)
        self.register_buffer("sinc", filt, persistent=False)
        self.first_bn = nn.BatchNorm2d(1)
        self.encoder = nn.Sequential(
            *[nn.Sequential(ResidualBlock(a, b, first=i == 0)) for i, (a, b) in enumerate(cfg.blocks)]
        )
        c = cfg.blocks[-1][1]
        self.pos_S = nn.Parameter(torch.empty(1, 23, c))
        self.master1 = nn.Parameter(torch.empty(1, 1, g0))
        self.master2 = nn.Parameter(torch.empty(1, 1, g0))
        self.GAT_layer_S = GraphAttention(c, g0, t[0])
        self.GAT_layer_T = GraphAttention(c, g0, t[1])
        self.HtrgGAT_layer_ST11 = HeteroGraphAttention(g0, g1, t[2])
        self.HtrgGAT_layer_ST12 = HeteroGraphAttention(g1, g1, t[2])
        self.HtrgGAT_layer_ST21 = HeteroGraphAttention(g0, g1, t[2])
        self.HtrgGAT_layer_ST22 = HeteroGraphAttention(g1, g1, t[2])
        r = cfg.pool_ratios
        self.pool_S = GraphPool(r[0], g0, 0.3)
        self.pool_T = GraphPool(r[1], g0, 0.3)
        for name in ("pool_hS1", "pool_hT1", "pool_hS2", "pool_hT2"):
            setattr(self, name, GraphPool(r[2], g1, 0.3))
        self.drop_way = nn.Dropout(0.2)
        self.drop = nn.Dropout(0.5)
        self.out_layer = nn.Linear(5 * g1, 2)

    @property
    def min_samples(self) -> int:
        """The fewest input samples with one time frame left: the sinc convolution loses
        ``taps − 1``, then the first max-pool and each residual block divide time by 3."""
        taps = self.cfg.first_conv + 1 if self.cfg.first_conv % 2 == 0 else self.cfg.first_conv
        return taps - 1 + 3 ** (1 + len(self.cfg.blocks))

    def branch(self, out_t: torch.Tensor, out_s: torch.Tensor, i: int) -> tuple[torch.Tensor, ...]:
        first, second = getattr(self, f"HtrgGAT_layer_ST{i}1"), getattr(self, f"HtrgGAT_layer_ST{i}2")
        t1, s1, m1 = first(out_t, out_s, getattr(self, f"master{i}"))
        s1, t1 = getattr(self, f"pool_hS{i}")(s1), getattr(self, f"pool_hT{i}")(t1)
        t_aug, s_aug, m_aug = second(t1, s1, m1)
        return self.drop_way(t1 + t_aug), self.drop_way(s1 + s_aug), self.drop_way(m1 + m_aug)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.conv1d(x.unsqueeze(1), self.sinc).unsqueeze(1)
        x = F.selu(self.first_bn(F.max_pool2d(x.abs(), (3, 3))))
        e = self.encoder(x)
        s = self.pool_S(self.GAT_layer_S(e.abs().amax(dim=3).transpose(1, 2) + self.pos_S))
        t = self.pool_T(self.GAT_layer_T(e.abs().amax(dim=2).transpose(1, 2)))
        t1, s1, m1 = self.branch(t, s, 1)
        t2, s2, m2 = self.branch(t, s, 2)
        t, s, m = torch.maximum(t1, t2), torch.maximum(s1, s2), torch.maximum(m1, m2)
        h = torch.cat([t.abs().amax(1), t.mean(1), s.abs().amax(1), s.mean(1), m.squeeze(1)], dim=1)
        return self.out_layer(self.drop(h))
