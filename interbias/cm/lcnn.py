"""LCNN classifier over a 2-D feature map (frequency × time), the ADD 2023 detection baselines'
back end (S02 on LFCC, S03 on wav2vec 2.0 features), utterance level, interbias's own definition.

Layout (the LCNN of Wu et al. 2020 as in the ASVspoof 2021 LFCC-LCNN baseline, channel counts
scaled by ``width``, the first convolution's output channels: 64 in the baseline, the recipe's
``width``; w = width/2 below): max-feature-map (MFM) convolutions — a convolution to 2c
channels whose two halves are combined by an element-wise maximum —
5×5 MFM(w), 2×2 max pooling; 1×1 MFM(w), BN, 3×3 MFM(1.5w), 2×2 max pooling, BN;
1×1 MFM(1.5w), BN, 3×3 MFM(2w), 2×2 max pooling; 1×1 MFM(2w), BN, 3×3 MFM(w), BN,
1×1 MFM(w), BN, 3×3 MFM(w), 2×2 max pooling. The map (w, F/16, T/16) is read as a sequence over
time of w·⌊F/16⌋ values, through two bidirectional LSTM layers (hidden size w·⌊F/16⌋/2 per
direction) added to their input, averaged over time, and a linear layer to ``n_classes``
logits (index 0 = spoof, 1 = bona fide for detection). The baseline's dropout is left out
(the loop's seeded dropout would work, but the small recipe does not need it).
"""

from __future__ import annotations

import torch
from torch import nn


def max_feature_map(x: torch.Tensor) -> torch.Tensor:
    """The element-wise max of the two channel halves of ``x`` (batch, 2c, ...)."""
    a, b = x.chunk(2, dim=1)
    return torch.maximum(a, b)


class MFM(nn.Module):
    """:func:`max_feature_map` as a layer (no weights)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return max_feature_map(x)


class MFMConv(nn.Module):
    """A convolution to 2·cout channels, then :func:`max_feature_map` (a function, not a
    submodule, so the state dict's layout stays that of the baseline checkpoints)."""

    def __init__(self, cin: int, cout: int, k: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(cin, 2 * cout, k, 1, k // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return max_feature_map(self.conv(x))


def trunk(w: int) -> nn.Sequential:
    w15, w2 = (3 * w) // 2, 2 * w
    return nn.Sequential(
        MFMConv(1, w, 5), nn.MaxPool2d(2, 2),
        MFMConv(w, w, 1), nn.BatchNorm2d(w), MFMConv(w, w15, 3), nn.MaxPool2d(2, 2), nn.BatchNorm2d(w15),
        MFMConv(w15, w15, 1), nn.BatchNorm2d(w15), MFMConv(w15, w2, 3), nn.MaxPool2d(2, 2),
        MFMConv(w2, w2, 1), nn.BatchNorm2d(w2), MFMConv(w2, w, 3), nn.BatchNorm2d(w),
        MFMConv(w, w, 1), nn.BatchNorm2d(w), MFMConv(w, w, 3), nn.MaxPool2d(2, 2),
    )  # fmt: skip


class LCNN(nn.Module):
    """``forward(x)`` with x of shape (batch, F, T), F and T ≥ 16 → logits (batch, n_classes)."""

    def __init__(self, n_freq: int, width: int = 64, n_classes: int = 2) -> None:
        super().__init__()
        if n_freq < 16 or width < 2:
            raise ValueError(f"LCNN: needs at least 16 feature rows and width >= 2, got {n_freq} and {width}")
        w = width // 2
        self.trunk = trunk(w)
        dim = w * (n_freq // 16)
        self.lstm1 = nn.LSTM(dim, dim // 2, batch_first=True, bidirectional=True)
        self.lstm2 = nn.LSTM(dim, dim // 2, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(2 * (dim // 2), n_classes)
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.trunk(x.unsqueeze(1))  # (B, w, F', T')
        seq = h.permute(0, 3, 1, 2).flatten(2)  # (B, T', w·F')
        seq = seq[..., : 2 * (self.dim // 2)]
        y, _ = self.lstm1(seq)
        y, _ = self.lstm2(y)
        return self.fc((seq + y).mean(dim=1))
