"""RawNet3 (Jung et al., 2022), written for interbias so that the published ``model.pt`` loads natively.

The checkpoint (``jungjee/RawNet3`` on the Hugging Face Hub, VoxCeleb2) is a dict whose
``"model"`` entry is the state dict; it loads with ``weights_only=True`` and ``strict=True``
into :class:`RawNet3`, whose parameter names and shapes follow the reference definition
(``Jungjee/RawNet``, ``python/RawNet3/models``, MIT): pre-emphasis (0.97) and a one-channel
instance norm, a learnable sinc filterbank (asteroid's ``ParamSincFB``: 256 filters of 251
taps, stride 10, cos and sin halves) whose magnitude is log-compressed and mean-normalised
over time, three Res2Net bottleneck blocks with AFMS (C = 1024, scale 8, dilations 2/3/4,
max-pool 5 and 3 after the first two), a 1×1 convolution to 1536 channels, channel-wise
attentive statistics pooling with global context, batch norm and a 256-unit linear layer
(the trained ``bn6`` is kept in the state dict but, as in the reference inference, not applied).

The embedding is one forward pass over the whole 16 kHz utterance, as the ONNX route fed it
(the reference's benchmark script instead averages ten 3–4 s crops). An utterance shorter than
:data:`MIN_SAMPLES` (44 ms) is wrap-padded to it, as the reference pads short input.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from interbias.encoders import Encoder, EncoderCard, Layout, Located, combined_sha256, freeze, load_problem, load_reason


class PreEmphasis(nn.Module):
    """y[t] = x[t] − 0.97 x[t−1], the first sample reflected; (B, T) -> (B, 1, T)."""

    def __init__(self, coef: float = 0.97) -> None:
        super().__init__()
        self.register_buffer("flipped_filter", torch.tensor([[[-coef, 1.0]]]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.conv1d(F.pad(x.unsqueeze(1), (1, 0), "reflect"), self.flipped_filter)


class SincBank(nn.Module):
    """Learnable band-pass sinc filters: half cosine (even), half sine (odd), Hamming-windowed."""

    def __init__(self, n_filters: int, kernel: int, sample_rate: float = 16000.0) -> None:
        super().__init__()
        self.min_low_hz, self.min_band_hz, self.sample_rate = 50.0, 50.0, sample_rate
        self.kernel = kernel
        half = kernel // 2
        mel = np.linspace(_mel(30.0), _mel(sample_rate / 2 - 100.0), n_filters // 2 + 1, dtype="float32")
        hz = 700.0 * (10 ** (mel / 2595.0) - 1)
        self.low_hz_ = nn.Parameter(torch.from_numpy(hz[:-1].astype(np.float32)).view(-1, 1))
        self.band_hz_ = nn.Parameter(torch.from_numpy(np.diff(hz).astype(np.float32)).view(-1, 1))
        self.register_buffer("window_", torch.from_numpy(np.hamming(kernel)[:half]).float())
        self.register_buffer("n_", 2 * math.pi * (torch.arange(-half, 0.0).view(1, -1) / sample_rate))

    def filters(self) -> torch.Tensor:
        low = self.min_low_hz + torch.abs(self.low_hz_)
        high = torch.clamp(low + self.min_band_hz + torch.abs(self.band_hz_), self.min_low_hz, self.sample_rate / 2)
        band = (high - low)[:, 0]
        ft_low, ft_high = low @ self.n_, high @ self.n_
        cos_left = (torch.sin(ft_high) - torch.sin(ft_low)) / (self.n_ / 2) * self.window_
        sin_left = (torch.cos(ft_low) - torch.cos(ft_high)) / (self.n_ / 2) * self.window_
        cos = torch.cat([cos_left, 2 * band.view(-1, 1), torch.flip(cos_left, dims=[1])], dim=1)
        sin = torch.cat([sin_left, torch.zeros_like(band.view(-1, 1)), -torch.flip(sin_left, dims=[1])], dim=1)
        bank = torch.cat([cos, sin], dim=0) / (2 * torch.cat([band, band])[:, None])
        return bank.unsqueeze(1)


def _mel(hz: float) -> float:
    return 2595.0 * math.log10(1 + hz / 700.0)


class SincEncoder(nn.Module):
    """(B, 1, T) -> (B, filters, frames): the filterbank as a strided convolution."""

    def __init__(self, n_filters: int, kernel: int, stride: int) -> None:
        super().__init__()
        self.filterbank = SincBank(n_filters, kernel)
        self.stride = stride

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.conv1d(x, self.filterbank.filters(), stride=self.stride)


class AFMS(nn.Module):
    """Alpha feature-map scaling: (x + α) · sigmoid(fc(mean_t x))."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.alpha = nn.Parameter(torch.ones((dim, 1)))
        self.fc = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.sigmoid(self.fc(x.mean(dim=-1))).unsqueeze(-1)
        return (x + self.alpha) * y


class Bottle2neck(nn.Module):
    """Res2Net block: 1×1 conv, ``scale − 1`` chained dilated convs over channel splits, 1×1 conv,
    residual, optional max-pool, AFMS. Each conv is followed by ReLU then batch norm."""

    def __init__(self, inplanes: int, planes: int, *, dilation: int, scale: int, pool: int = 0) -> None:
        super().__init__()
        width = planes // scale
        self.width, self.nums = width, scale - 1
        self.conv1 = nn.Conv1d(inplanes, width * scale, kernel_size=1)
        self.bn1 = nn.BatchNorm1d(width * scale)
        pad = dilation  # kernel 3
        self.convs = nn.ModuleList(
            nn.Conv1d(width, width, kernel_size=3, dilation=dilation, padding=pad) for _ in range(self.nums)
        )
        self.bns = nn.ModuleList(nn.BatchNorm1d(width) for _ in range(self.nums))
        self.conv3 = nn.Conv1d(width * scale, planes, kernel_size=1)
        self.bn3 = nn.BatchNorm1d(planes)
        self.mp = nn.MaxPool1d(pool) if pool else None
        self.afms = AFMS(planes)
        self.residual = (
            nn.Sequential(nn.Conv1d(inplanes, planes, kernel_size=1, bias=False))
            if inplanes != planes
            else nn.Identity()
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        residual = self.residual(x)
        spx = torch.split(self.bn1(F.relu(self.conv1(x))), self.width, 1)
        outs, sp = [], None
        for i in range(self.nums):
            sp = spx[i] if sp is None else sp + spx[i]
            sp = self.bns[i](F.relu(self.convs[i](sp)))
            outs.append(sp)
        out = self.bn3(F.relu(self.conv3(torch.cat([*outs, spx[self.nums]], dim=1)))) + residual
        if self.mp is not None:
            out = self.mp(out)
        return self.afms(out)


class RawNet3(nn.Module):
    """RawNet3 as published (channels 1024, scale 8, 256-d output); smaller sizes for tests."""

    def __init__(
        self,
        channels: int = 1024,
        scale: int = 8,
        n_out: int = 256,
        pooled: int = 1536,
        attention: int = 128,
        sinc_kernel: int = 251,
        sinc_stride: int = 10,
    ) -> None:
        super().__init__()
        c = channels
        self.preprocess = nn.Sequential(PreEmphasis(), nn.InstanceNorm1d(1, eps=1e-4, affine=True))
        self.conv1 = SincEncoder(c // 4, sinc_kernel, sinc_stride)
        self.bn1 = nn.BatchNorm1d(c // 4)  # in the checkpoint, unused by the forward pass (as in the reference)
        self.layer1 = Bottle2neck(c // 4, c, dilation=2, scale=scale, pool=5)
        self.layer2 = Bottle2neck(c, c, dilation=3, scale=scale, pool=3)
        self.layer3 = Bottle2neck(c, c, dilation=4, scale=scale)
        self.layer4 = nn.Conv1d(3 * c, pooled, kernel_size=1)
        self.attention = nn.Sequential(
            nn.Conv1d(pooled * 3, attention, kernel_size=1),
            nn.ReLU(),
            nn.BatchNorm1d(attention),
            nn.Conv1d(attention, pooled, kernel_size=1),
            nn.Softmax(dim=2),
        )
        self.bn5 = nn.BatchNorm1d(2 * pooled)
        self.fc6 = nn.Linear(2 * pooled, n_out)
        self.bn6 = nn.BatchNorm1d(n_out)
        self.mp3 = nn.MaxPool1d(3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, T) 16 kHz waveforms -> (B, n_out)."""
        x = torch.abs(self.conv1(self.preprocess(x)))
        x = torch.log(x + 1e-6)
        x = x - x.mean(dim=-1, keepdim=True)
        x1 = self.layer1(x)
        x2 = self.layer2(x1)
        x3 = self.layer3(self.mp3(x1) + x2)
        x = F.relu(self.layer4(torch.cat((self.mp3(x1), x2, x3), dim=1)))
        t = x.shape[-1]
        mean = x.mean(dim=2, keepdim=True).repeat(1, 1, t)
        std = torch.sqrt(torch.var(x, dim=2, keepdim=True).clamp(min=1e-4, max=1e4)).repeat(1, 1, t)
        w = self.attention(torch.cat((x, mean, std), dim=1))
        mu = torch.sum(x * w, dim=2)
        sg = torch.sqrt((torch.sum((x**2) * w, dim=2) - mu**2).clamp(min=1e-4, max=1e4))
        return self.fc6(self.bn5(torch.cat((mu, sg), 1)))


def dims_from_state(state: dict[str, torch.Tensor]) -> dict[str, int]:
    """Constructor sizes read off a state dict (KeyError when a tensor RawNet3 needs is absent)."""
    return {
        "channels": int(state["layer1.conv3.weight"].shape[0]),
        "scale": 1 + sum(1 for k in state if k.startswith("layer1.convs.") and k.endswith(".weight")),
        "n_out": int(state["fc6.weight"].shape[0]),
        "pooled": int(state["layer4.weight"].shape[0]),
        "attention": int(state["attention.0.weight"].shape[0]),
    }


#: Smallest input the network takes (sinc taps plus the three pooling stages).
MIN_SAMPLES = 251 + 10 * 45


class RawNet3Encoder(Encoder):
    def __init__(self, card: EncoderCard, model: RawNet3, **kw: Any) -> None:
        super().__init__(card, **kw)
        self.model = model

    @torch.inference_mode()
    def _embed_one(self, wave: np.ndarray) -> np.ndarray:
        if wave.size < MIN_SAMPLES:
            wave = np.pad(wave, (0, MIN_SAMPLES - wave.size), mode="wrap")
        x = torch.from_numpy(wave).unsqueeze(0).to(self.device)
        return self.model(x)[0].float().cpu().numpy()


def load_rawnet3(card: EncoderCard, located: Located, files: dict[str, str], *, device: str = "cpu") -> RawNet3Encoder:
    folder = located.folder
    name = located.files[0]
    try:
        obj = torch.load(str(folder / name), map_location="cpu", weights_only=True)
    except Exception as exc:
        raise card.error(folder, f"cannot load {name} ({load_reason(exc)})") from exc
    state = obj.get("model", obj) if isinstance(obj, dict) else None
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise card.error(folder, f"{name} is not a RawNet3 state dict (a dict of tensors, or one under 'model')")
    try:
        dims = dims_from_state(state)
        model = RawNet3(**dims)
        model.load_state_dict(state, strict=True)
    except (KeyError, ValueError, RuntimeError) as exc:
        detail = f"no tensor {exc}" if isinstance(exc, KeyError) else load_problem(exc)
        raise card.error(folder, f"{name} does not match RawNet3 ({detail})") from exc
    return RawNet3Encoder(
        card,
        freeze(model, device),
        source=str(folder / name),
        checkpoint_sha256=combined_sha256(files),
        files=files,
        device=device,
        config={"model": "RawNet3", **dims, "sinc": "251/10", "input": "whole utterance"},
    )


LAYOUT = Layout("rawnet3", ("model.pt",), load_rawnet3)
