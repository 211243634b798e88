"""Kaldi-compatible filterbank and MFCC features in PyTorch (batched, CPU or CUDA).

Matches Kaldi's ``compute-fbank-feats`` defaults as used by 3D-Speaker and WeSpeaker:
25 ms Povey-windowed frames every 10 ms (snip_edges), DC removal, pre-emphasis 0.97, FFT
size rounded up to a power of two, power spectrum, triangular filters on the Kaldi mel scale
(1127·ln(1 + f/700)) between 20 Hz and Nyquist, natural log floored at float32 epsilon, no
dither. Checked against kaldi-native-fbank in the tests.
"""

from __future__ import annotations

import math
from functools import lru_cache

import torch

_EPS = torch.finfo(torch.float32).eps


def _mel(f: torch.Tensor) -> torch.Tensor:
    return 1127.0 * torch.log1p(f / 700.0)


@lru_cache(maxsize=16)
def _mel_banks(num_bins: int, padded: int, rate: int, low: float, high: float) -> torch.Tensor:
    """(num_bins, padded // 2 + 1) float64 triangular weights, Kaldi's construction."""
    nyquist = rate / 2.0
    if high <= 0:
        high += nyquist
    n_fft_bins = padded // 2
    fft_bin_width = rate / padded
    mel_low, mel_high = _mel(torch.tensor(low, dtype=torch.float64)), _mel(torch.tensor(high, dtype=torch.float64))
    delta = (mel_high - mel_low) / (num_bins + 1)
    b = torch.arange(num_bins, dtype=torch.float64).unsqueeze(1)
    left, center, right = mel_low + b * delta, mel_low + (b + 1) * delta, mel_low + (b + 2) * delta
    mel = _mel(fft_bin_width * torch.arange(n_fft_bins, dtype=torch.float64)).unsqueeze(0)
    up = (mel - left) / (center - left)
    down = (right - mel) / (right - center)
    banks = torch.clamp(torch.minimum(up, down), min=0.0)
    return torch.nn.functional.pad(banks, (0, 1))  # Nyquist bin gets zero weight


@lru_cache(maxsize=8)
def _povey(n: int) -> torch.Tensor:
    k = torch.arange(n, dtype=torch.float64)
    return (0.5 - 0.5 * torch.cos(2 * math.pi * k / (n - 1))).pow(0.85)


def num_frames(n_samples: int, rate: int = 16000, frame_ms: float = 25.0, shift_ms: float = 10.0) -> int:
    flen, fshift = int(rate * frame_ms / 1000), int(rate * shift_ms / 1000)
    return 0 if n_samples < flen else 1 + (n_samples - flen) // fshift


def fbank(
    wave: torch.Tensor,
    *,
    num_mel_bins: int = 80,
    sample_rate_hz: int = 16000,
    low_freq_hz: float = 20.0,
    high_freq_hz: float = 0.0,
    preemphasis: float = 0.97,
    scale: float = 1.0,
) -> torch.Tensor:
    """Log mel filterbank of a (T,) or (B, T) waveform -> (frames, bins) or (B, frames, bins).

    ``scale`` multiplies the waveform first (Kaldi tools read int16, i.e. scale 32768).
    Computed in float64, returned as float32.
    """
    squeeze = wave.dim() == 1
    x = (wave.unsqueeze(0) if squeeze else wave).to(torch.float64) * scale
    flen, fshift = int(sample_rate_hz * 0.025), int(sample_rate_hz * 0.010)
    n = num_frames(x.shape[-1], sample_rate_hz)
    if n == 0:
        raise ValueError(f"need at least {flen} samples for one frame, got {x.shape[-1]}")
    frames = x.unfold(-1, flen, fshift)[:, :n, :]  # (B, n, flen)
    frames = frames - frames.mean(dim=-1, keepdim=True)
    if preemphasis:
        prev = torch.cat([frames[..., :1], frames[..., :-1]], dim=-1)
        frames = frames - preemphasis * prev
    frames = frames * _povey(flen).to(frames.device)
    padded = 1 << (flen - 1).bit_length()
    spec = torch.fft.rfft(frames, n=padded).abs().pow(2)
    banks = _mel_banks(num_mel_bins, padded, sample_rate_hz, low_freq_hz, high_freq_hz).to(spec.device)
    mel = torch.matmul(spec, banks.T)
    out = torch.log(torch.clamp(mel, min=_EPS)).to(torch.float32)
    return out[0] if squeeze else out


def dct_matrix(num_ceps: int, num_bins: int) -> torch.Tensor:
    """Kaldi's orthonormal DCT-II basis, shape (num_bins, num_ceps)."""
    n = torch.arange(num_bins, dtype=torch.float64)
    k = torch.arange(num_ceps, dtype=torch.float64).unsqueeze(1)
    basis = torch.cos(math.pi / num_bins * (n + 0.5) * k) * math.sqrt(2.0 / num_bins)
    basis[0] *= 1 / math.sqrt(2.0)
    return basis.T


def mfcc(
    wave: torch.Tensor, *, num_ceps: int = 20, num_mel_bins: int = 40, sample_rate_hz: int = 16000
) -> torch.Tensor:
    """MFCCs: orthonormal DCT-II of the log filterbank (no liftering), c0 included."""
    fb = fbank(wave, num_mel_bins=num_mel_bins, sample_rate_hz=sample_rate_hz).to(torch.float64)
    return (fb @ dct_matrix(num_ceps, num_mel_bins).to(fb.device)).to(torch.float32)
