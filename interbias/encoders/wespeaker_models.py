"""WeSpeaker's ECAPA-TDNN and ResNet speaker models, written for interbias so that WeSpeaker
``avg_model.pt`` state dicts load with ``strict=True`` (WeSpeaker is not on PyPI).

Parameter names, layer shapes and forward computations follow WeSpeaker's model zoo
(``wespeaker/models/ecapa_tdnn.py``, ``resnet.py``, ``pooling_layers.py``, Apache-2.0):
input (B, T, F) Kaldi fbank, output (B, D). Variances are unbiased (``torch.var``), as there.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

_EPS = 1e-7


class TSTP(nn.Module):
    """Temporal statistics pooling: [mean_t x, sqrt(var_t x + 1e-7)] over the last axis."""

    def __init__(self, in_dim: int) -> None:
        super().__init__()
        self.out_dim = 2 * in_dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean = x.mean(dim=-1).flatten(start_dim=1)
        std = torch.sqrt(torch.var(x, dim=-1) + _EPS).flatten(start_dim=1)
        return torch.cat([mean, std], dim=1)


class TAP(nn.Module):
    """Temporal average pooling."""

    def __init__(self, in_dim: int) -> None:
        super().__init__()
        self.out_dim = in_dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.mean(dim=-1).flatten(start_dim=1)


class ASTP(nn.Module):
    """Attentive statistics pooling (tanh bottleneck, softmax over time); with global context
    the attention also sees the utterance mean and std of every channel."""

    def __init__(self, in_dim: int, bottleneck_dim: int = 128, global_context_att: bool = False) -> None:
        super().__init__()
        self.global_context_att = global_context_att
        self.linear1 = nn.Conv1d(in_dim * (3 if global_context_att else 1), bottleneck_dim, kernel_size=1)
        self.linear2 = nn.Conv1d(bottleneck_dim, in_dim, kernel_size=1)
        self.out_dim = 2 * in_dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() == 4:
            x = x.reshape(x.shape[0], x.shape[1] * x.shape[2], x.shape[3])
        if self.global_context_att:
            mean = x.mean(dim=-1, keepdim=True).expand_as(x)
            std = torch.sqrt(torch.var(x, dim=-1, keepdim=True) + _EPS).expand_as(x)
            x_in = torch.cat([x, mean, std], dim=1)
        else:
            x_in = x
        alpha = torch.softmax(self.linear2(torch.tanh(self.linear1(x_in))), dim=2)
        mu = torch.sum(alpha * x, dim=2)
        var = torch.sum(alpha * x**2, dim=2) - mu**2
        return torch.cat([mu, torch.sqrt(var.clamp(min=_EPS))], dim=1)


def make_pooling(name: str, in_dim: int, global_context_att: bool = False) -> nn.Module:
    if name == "TSTP":
        return TSTP(in_dim)
    if name == "TAP":
        return TAP(in_dim)
    if name == "ASTP":
        return ASTP(in_dim, global_context_att=global_context_att)
    raise ValueError(f"pooling_func {name!r} is not supported (TSTP, TAP, ASTP)")


# ----------------------------------------------------------------------------- ECAPA-TDNN


class _ConvReluBn(nn.Module):
    def __init__(self, cin: int, cout: int, kernel: int = 1, padding: int = 0, dilation: int = 1) -> None:
        super().__init__()
        self.conv = nn.Conv1d(cin, cout, kernel, 1, padding, dilation, bias=True)
        self.bn = nn.BatchNorm1d(cout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(F.relu(self.conv(x)))


class _Res2ConvReluBn(nn.Module):
    """Res2Net split: ``scale`` groups, each but the last convolved after adding the previous output."""

    def __init__(self, channels: int, kernel: int, padding: int, dilation: int, scale: int) -> None:
        super().__init__()
        self.width = channels // scale
        self.nums = scale if scale == 1 else scale - 1
        self.scale = scale
        self.convs = nn.ModuleList(
            nn.Conv1d(self.width, self.width, kernel, 1, padding, dilation, bias=True) for _ in range(self.nums)
        )
        self.bns = nn.ModuleList(nn.BatchNorm1d(self.width) for _ in range(self.nums))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        parts = torch.split(x, self.width, dim=1)
        out, sp = [], parts[0]
        for i, (conv, bn) in enumerate(zip(self.convs, self.bns, strict=True)):
            if i >= 1:
                sp = sp + parts[i]
            sp = bn(F.relu(conv(sp)))
            out.append(sp)
        if self.scale != 1:
            out.append(parts[self.nums])
        return torch.cat(out, dim=1)


class _SEConnect(nn.Module):
    def __init__(self, channels: int, bottleneck: int = 128) -> None:
        super().__init__()
        self.linear1 = nn.Linear(channels, bottleneck)
        self.linear2 = nn.Linear(bottleneck, channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate = torch.sigmoid(self.linear2(F.relu(self.linear1(x.mean(dim=2)))))
        return x * gate.unsqueeze(2)


class _SERes2Block(nn.Module):
    def __init__(self, channels: int, kernel: int, padding: int, dilation: int, scale: int) -> None:
        super().__init__()
        self.se_res2block = nn.Sequential(
            _ConvReluBn(channels, channels),
            _Res2ConvReluBn(channels, kernel, padding, dilation, scale),
            _ConvReluBn(channels, channels),
            _SEConnect(channels),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.se_res2block(x)


class ECAPA_TDNN(nn.Module):
    """WeSpeaker ECAPA-TDNN. ``conv_out`` is the width of the 1×1 convolution after the
    concatenated blocks: 3 × channels in early WeSpeaker releases, 1536 in later code."""

    def __init__(
        self,
        channels: int = 512,
        feat_dim: int = 80,
        embed_dim: int = 192,
        pooling_func: str = "ASTP",
        global_context_att: bool = False,
        emb_bn: bool = False,
        conv_out: int | None = None,
    ) -> None:
        super().__init__()
        self.layer1 = _ConvReluBn(feat_dim, channels, kernel=5, padding=2)
        self.layer2 = _SERes2Block(channels, 3, padding=2, dilation=2, scale=8)
        self.layer3 = _SERes2Block(channels, 3, padding=3, dilation=3, scale=8)
        self.layer4 = _SERes2Block(channels, 3, padding=4, dilation=4, scale=8)
        out = conv_out or channels * 3
        self.conv = nn.Conv1d(channels * 3, out, kernel_size=1)
        self.pool = make_pooling(pooling_func, out, global_context_att)
        self.bn = nn.BatchNorm1d(self.pool.out_dim)
        self.linear = nn.Linear(self.pool.out_dim, embed_dim)
        self.emb_bn = emb_bn
        self.bn2 = nn.BatchNorm1d(embed_dim) if emb_bn else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.permute(0, 2, 1)
        o1 = self.layer1(x)
        o2 = self.layer2(o1)
        o3 = self.layer3(o2)
        o4 = self.layer4(o3)
        out = F.relu(self.conv(torch.cat([o2, o3, o4], dim=1)))
        out = self.linear(self.bn(self.pool(out)))
        return self.bn2(out)


# ----------------------------------------------------------------------------- ResNet


class _BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, cin: int, planes: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != planes:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, planes, 1, stride, bias=False), nn.BatchNorm2d(planes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        return F.relu(out + self.shortcut(x))


class _Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin: int, planes: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, 4 * planes, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(4 * planes)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != 4 * planes:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, 4 * planes, 1, stride, bias=False), nn.BatchNorm2d(4 * planes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return F.relu(out + self.shortcut(x))


class ResNet(nn.Module):
    """WeSpeaker ResNet: 3×3 stem, four stages (strides 1, 2, 2, 2), no max-pooling, pooling
    over time of the (channels × freq) map, one or two embedding layers; returns the last."""

    def __init__(
        self,
        block: type[nn.Module],
        num_blocks: list[int],
        m_channels: int = 32,
        feat_dim: int = 40,
        embed_dim: int = 128,
        pooling_func: str = "TSTP",
        two_emb_layer: bool = False,
    ) -> None:
        super().__init__()
        self.in_planes = m_channels
        self.two_emb_layer = two_emb_layer
        stats_dim = int(feat_dim / 8) * m_channels * 8
        self.conv1 = nn.Conv2d(1, m_channels, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(m_channels)
        self.layer1 = self._stage(block, m_channels, num_blocks[0], 1)
        self.layer2 = self._stage(block, m_channels * 2, num_blocks[1], 2)
        self.layer3 = self._stage(block, m_channels * 4, num_blocks[2], 2)
        self.layer4 = self._stage(block, m_channels * 8, num_blocks[3], 2)
        self.pool = make_pooling(pooling_func, stats_dim * block.expansion)
        self.seg_1 = nn.Linear(self.pool.out_dim, embed_dim)
        if two_emb_layer:
            self.seg_bn_1 = nn.BatchNorm1d(embed_dim, affine=False)
            self.seg_2 = nn.Linear(embed_dim, embed_dim)
        else:
            self.seg_bn_1 = nn.Identity()
            self.seg_2 = nn.Identity()

    def _stage(self, block: type[nn.Module], planes: int, n: int, stride: int) -> nn.Sequential:
        layers = []
        for s in [stride] + [1] * (n - 1):
            layers.append(block(self.in_planes, planes, s))
            self.in_planes = planes * block.expansion  # type: ignore[attr-defined]
        return nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = x.permute(0, 2, 1).unsqueeze(1)
        out = F.relu(self.bn1(self.conv1(out)))
        out = self.layer4(self.layer3(self.layer2(self.layer1(out))))
        embed = self.seg_1(self.pool(out))
        if self.two_emb_layer:
            embed = self.seg_2(self.seg_bn_1(F.relu(embed)))
        return embed


_RESNETS = {
    "ResNet18": (_BasicBlock, [2, 2, 2, 2]),
    "ResNet34": (_BasicBlock, [3, 4, 6, 3]),
    "ResNet50": (_Bottleneck, [3, 4, 6, 3]),
    "ResNet101": (_Bottleneck, [3, 4, 23, 3]),
    "ResNet152": (_Bottleneck, [3, 8, 36, 3]),
    "ResNet221": (_Bottleneck, [6, 16, 48, 3]),
    "ResNet293": (_Bottleneck, [10, 20, 64, 3]),
}
_ECAPAS = {
    "ECAPA_TDNN_c512": (512, False),
    "ECAPA_TDNN_GLOB_c512": (512, True),
    "ECAPA_TDNN_c1024": (1024, False),
    "ECAPA_TDNN_GLOB_c1024": (1024, True),
}
MODELS = tuple(sorted(_RESNETS) + sorted(_ECAPAS))


def build(name: str, model_args: dict, state: dict[str, torch.Tensor]) -> nn.Module:
    """WeSpeaker model ``name`` with ``model_args`` (``feat_dim``, ``embed_dim``, ``pooling_func``,
    ``two_emb_layer`` / ``emb_bn``); the ECAPA post-block width is read from ``conv.weight``."""
    args = dict(model_args)
    if name in _RESNETS:
        block, blocks = _RESNETS[name]
        return ResNet(
            block,
            blocks,
            feat_dim=int(args.get("feat_dim", 40)),
            embed_dim=int(args.get("embed_dim", 128)),
            pooling_func=str(args.get("pooling_func", "TSTP")),
            two_emb_layer=bool(args.get("two_emb_layer", False)),
        )
    if name in _ECAPAS:
        channels, glob = _ECAPAS[name]
        conv = state.get("conv.weight")
        conv_out = int(conv.shape[0]) if conv is not None and conv.shape[0] in (channels * 3, 1536) else None
        return ECAPA_TDNN(
            channels=channels,
            feat_dim=int(args.get("feat_dim", 80)),
            embed_dim=int(args.get("embed_dim", 192)),
            pooling_func=str(args.get("pooling_func", "ASTP")),
            global_context_att=glob,
            emb_bn=bool(args.get("emb_bn", False)),
            conv_out=conv_out,
        )
    raise ValueError(f"WeSpeaker model {name!r} is not supported here ({', '.join(MODELS)}); export it to ONNX")
