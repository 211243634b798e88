"""ResNet-18 classifier over a 2-D feature map (frequency × time), interbias's own definition.

The layout of He et al. (2016), 18 layers: a 7×7 stride-2 stem convolution, 3×3 stride-2 max
pooling, four stages of two BasicBlocks (3×3 convolutions with batch norm and ReLU; widths
w, 2w, 4w, 8w; stages 2–4 start with stride 2 and a 1×1 projection shortcut), global average
pooling and a linear layer to two logits (index 0 = spoof, 1 = bona fide). The input has one
channel; ``width`` w is 64 in the standard network (a smaller w is a cheaper CPU variant).
"""

from __future__ import annotations

import torch
from torch import nn

#: BasicBlocks per stage of ResNet-18.
BLOCKS = (2, 2, 2, 2)


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU()
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return self.relu(y + self.shortcut(x))


class ResNet18(nn.Module):
    """``forward(x)`` with x of shape (batch, F, T) → logits (batch, 2)."""

    def __init__(self, width: int = 64, n_classes: int = 2) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(1, width, 7, 2, 3, bias=False), nn.BatchNorm2d(width), nn.ReLU(), nn.MaxPool2d(3, 2, 1)
        )
        stages = []
        cin = width
        for i, n in enumerate(BLOCKS):
            cout = width * 2**i
            blocks = [BasicBlock(cin, cout, 1 if i == 0 else 2)]
            blocks += [BasicBlock(cout, cout, 1) for _ in range(n - 1)]
            stages.append(nn.Sequential(*blocks))
            cin = cout
        self.stages = nn.Sequential(*stages)
        self.fc = nn.Linear(cin, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.stages(self.stem(x.unsqueeze(1)))
        return self.fc(h.mean(dim=(2, 3)))
