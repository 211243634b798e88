"""Kaldi-compatible filterbank and MFCC features in PyTorch (batched, CPU or CUDA).

Matches Kaldi's ``compute-fbank-feats`` defaults as used by 3D-Speaker and WeSpeaker:
25 ms Povey-windowed frames every 10 ms (snip_edges), DC removal, pre-emphasis 0.97, FFT
size rounded up to a power of two, power spectrum, triangular filters on the Kaldi mel scale
(1127·ln(1 + f/700)) between 20 Hz and Nyquist, natural log floored at float32 epsilon, no
dither. Checked against kaldi-native-fbank in the tests.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import torch

_EPS = torch.finfo(torch.float32).eps


def _mel(f: torch.Tensor) -> torch.Tensor:
    return 1127.0 * torch.log1p(f / 700.0)


@lru_cache(maxsize=16)
def _mel_banks(num_bins: int, padded: int, sample_rate_hz: int, low: float, high: float) -> torch.Tensor:
    """(num_bins, padded // 2 + 1) float64 triangular weights, Kaldi's construction."""
    nyquist = sample_rate_hz / 2.0
    if high <= 0:
        high += nyquist
    n_fft_bins = padded // 2
    fft_bin_width = sample_rate_hz / padded
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
def _window(kind: str, n: int) -> torch.Tensor:
    """Kaldi's analysis windows: ``povey`` (Hann to the power 0.85) or ``hamming``."""
    k = torch.arange(n, dtype=torch.float64)
    match kind:
        case "povey":
            return (0.5 - 0.5 * torch.cos(2 * math.pi * k / (n - 1))).pow(0.85)
        case "hamming":
            return 0.54 - 0.46 * torch.cos(2 * math.pi * k / (n - 1))
    raise ValueError(f"unknown window {kind!r} (povey, hamming)")


def num_frames(n_samples: int, sample_rate_hz: int = 16000, frame_ms: float = 25.0, shift_ms: float = 10.0) -> int:
    flen, fshift = int(sample_rate_hz * frame_ms / 1000), int(sample_rate_hz * shift_ms / 1000)
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
    window: str = "povey",
) -> torch.Tensor:
    """Log mel filterbank of a (T,) or (B, T) waveform -> (frames, bins) or (B, frames, bins).

    ``scale`` multiplies the waveform first (Kaldi tools read int16, i.e. scale 32768);
    ``window`` is Kaldi's ``window_type`` (``povey`` default, ``hamming`` for WeSpeaker).
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
    frames = frames * _window(window, flen).to(frames.device)
    padded = 1 << (flen - 1).bit_length()
    spec = torch.fft.rfft(frames, n=padded)
    spec = spec.real.square() + spec.imag.square()  # Kaldi's re² + im² (|z|² goes through hypot: 5× slower)
    banks = _mel_banks(num_mel_bins, padded, sample_rate_hz, low_freq_hz, high_freq_hz).to(spec.device)
    mel = torch.matmul(spec, banks.T)
    out = torch.log(torch.clamp(mel, min=_EPS)).to(torch.float32)
    return out[0] if squeeze else out


def fbank_batch(
    waves: torch.Tensor, lengths: Sequence[int], *, sample_rate_hz: int = 16000, **options: Any
) -> tuple[torch.Tensor, torch.Tensor]:
    """Log mel filterbank of (B, T) waveforms zero-padded past each row's ``lengths`` samples:
    ((B, frames, bins) float32, (B,) int64 frame counts), row i's first counts[i] frames equal to
    :func:`fbank` of the row alone, its later frames 0. A frame reads only its own 25 ms of
    samples, so padding reaches no valid frame. ``options``: those of :func:`fbank`. Raises
    ValueError when a row is shorter than one frame (the message of :func:`fbank`)."""
    counts = [num_frames(int(n), sample_rate_hz) for n in lengths]
    flen = int(sample_rate_hz * 0.025)
    for n, c in zip(lengths, counts, strict=True):
        if c == 0:
            raise ValueError(f"need at least {flen} samples for one frame, got {int(n)}")
    feats = fbank(waves, sample_rate_hz=sample_rate_hz, **options)
    frames = torch.tensor(counts, dtype=torch.int64, device=feats.device)
    valid = torch.arange(feats.shape[1], device=feats.device).unsqueeze(0) < frames.unsqueeze(1)
    return feats * valid.unsqueeze(-1).to(feats.dtype), frames


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


def mfcc_batch(
    waves: torch.Tensor, lengths: Sequence[int], *, num_ceps: int = 20, num_mel_bins: int = 40
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`mfcc` of (B, T) waveforms zero-padded past each row's ``lengths`` samples:
    ((B, frames, num_ceps) float32, 0 past each row's frames; (B,) int64 frame counts)."""
    fb, frames = fbank_batch(waves, lengths, num_mel_bins=num_mel_bins)
    ceps = (fb.to(torch.float64) @ dct_matrix(num_ceps, num_mel_bins).to(fb.device)).to(torch.float32)
    return ceps, frames


def _hz_to_slaney_mel(f: torch.Tensor) -> torch.Tensor:
    """Slaney's mel scale (librosa's default, ``htk=False``): linear below 1 kHz, log above."""
    f_sp, min_log_hz, logstep = 200.0 / 3, 1000.0, math.log(6.4) / 27.0
    lin = f / f_sp
    log = min_log_hz / f_sp + torch.log(torch.clamp(f, min=min_log_hz) / min_log_hz) / logstep
    return torch.where(f >= min_log_hz, log, lin)


def _slaney_mel_to_hz(m: torch.Tensor) -> torch.Tensor:
    f_sp, min_log_hz, logstep = 200.0 / 3, 1000.0, math.log(6.4) / 27.0
    min_log_mel = min_log_hz / f_sp
    return torch.where(m >= min_log_mel, min_log_hz * torch.exp(logstep * (m - min_log_mel)), f_sp * m)


@lru_cache(maxsize=8)
def slaney_mel_banks(
    num_bins: int, n_fft: int, sample_rate_hz: int, low_hz: float = 0.0, high_hz: float | None = None
) -> torch.Tensor:
    """(num_bins, n_fft // 2 + 1) float64 triangular filters on the Slaney mel scale with Slaney
    area normalisation (2 / band width): ``librosa.filters.mel(norm="slaney")``'s construction."""
    high = sample_rate_hz / 2.0 if high_hz is None else high_hz
    fft_freqs = torch.linspace(0, sample_rate_hz / 2.0, n_fft // 2 + 1, dtype=torch.float64)
    lo, hi = (
        _hz_to_slaney_mel(torch.tensor(low_hz, dtype=torch.float64)),
        _hz_to_slaney_mel(torch.tensor(high, dtype=torch.float64)),
    )
    mel_f = _slaney_mel_to_hz(torch.linspace(float(lo), float(hi), num_bins + 2, dtype=torch.float64))
    fdiff = mel_f[1:] - mel_f[:-1]
    ramps = mel_f.unsqueeze(1) - fft_freqs.unsqueeze(0)
    lower = -ramps[:num_bins] / fdiff[:num_bins].unsqueeze(1)
    upper = ramps[2 : num_bins + 2] / fdiff[1 : num_bins + 1].unsqueeze(1)
    weights = torch.clamp(torch.minimum(lower, upper), min=0.0)
    return weights * (2.0 / (mel_f[2 : num_bins + 2] - mel_f[:num_bins])).unsqueeze(1)


def stft_power(wave: torch.Tensor, *, n_fft: int, hop: int, window: torch.Tensor) -> torch.Tensor:
    """|STFT|² of a (T,) waveform, centred frames (zero padding of n_fft // 2 on both sides),
    ``window`` zero-padded to ``n_fft`` around the centre: (n_fft // 2 + 1, frames), float64."""
    x = wave.to(torch.float64)
    spec = torch.stft(
        x,
        n_fft=n_fft,
        hop_length=hop,
        win_length=window.numel(),
        window=window.to(device=x.device, dtype=torch.float64),
        center=True,
        pad_mode="constant",
        return_complex=True,
    )
    return spec.abs().pow(2)


def ge2e_mel(wave: torch.Tensor) -> torch.Tensor:
    """Resemblyzer's GE2E input: power mel spectrogram, 40 Slaney bins, 25 ms periodic Hann
    window every 10 ms, centred frames, no log -> (frames, 40) float32
    (``librosa.feature.melspectrogram(y, sr=16000, n_fft=400, hop_length=160, n_mels=40)``)."""
    window = torch.hann_window(400, periodic=True, dtype=torch.float64)
    power = stft_power(wave, n_fft=400, hop=160, window=window)
    banks = slaney_mel_banks(40, 400, 16000).to(power.device)
    return (banks @ power).T.to(torch.float32)


def nemo_mel(wave: torch.Tensor, *, num_mel_bins: int = 80) -> torch.Tensor:
    """NeMo's ``AudioToMelSpectrogramPreprocessor`` at inference with the TitaNet-L settings:
    pre-emphasis 0.97, 512-point STFT of a 25 ms symmetric Hann window every 10 ms (centred),
    power, Slaney mel (0–8 kHz), ``log(x + 2**-24)``, then per-bin standardisation over time
    (unbiased std + 1e-5); no dither -> (num_mel_bins, frames) float32."""
    x = wave.to(torch.float64)
    x = torch.cat([x[:1], x[1:] - 0.97 * x[:-1]])
    window = torch.hann_window(400, periodic=False, dtype=torch.float64)
    power = stft_power(x, n_fft=512, hop=160, window=window)
    mel = slaney_mel_banks(num_mel_bins, 512, 16000).to(power.device) @ power
    logmel = torch.log(mel + 2.0**-24)
    if logmel.shape[1] < 2:
        raise ValueError("need at least two frames for per-feature normalisation")
    mean = logmel.mean(dim=1, keepdim=True)
    std = logmel.std(dim=1, unbiased=True, keepdim=True) + 1e-5
    return ((logmel - mean) / std).to(torch.float32)
