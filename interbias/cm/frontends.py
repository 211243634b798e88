"""CM feature front ends: waveform (16 kHz, float32) → 2-D feature map (F, T).

- ``logspec``: log power spectrogram, 512-point FFT of 25 ms Hann windows every 10 ms
  (``torch.stft``, centred, reflect-padded): log(|X|² + 1e-10), 257 bins.
- ``cqt``: constant-Q transform magnitude in dB-like log form, log(|C|² + 1e-10); 84 bins,
  12 per octave from 32.70 Hz (C1), Q = 1 / (2^(1/12) − 1), hop 256 samples. Bin k is the
  inner product of the signal with a Hann-windowed complex exponential at f_k = f_min·2^(k/12)
  of length N_k = ⌈Q·sr / f_k⌉, normalised by N_k (Brown 1991, time-domain kernels,
  evaluated as one strided convolution).
- ``lfcc``: linear-frequency cepstral coefficients (Sahidullah et al. 2015; the ASVspoof 2021
  baselines' layout): a 512-point FFT of Hamming windows (``win``, ``hop``; 20 ms / 10 ms by
  default, ``torch.stft`` centred, reflect-padded), power |X|², 20 triangular filters with
  edges equally spaced over 0–8 kHz, log(E + 1e-10), the orthonormal DCT-II, 20 coefficients,
  then deltas d_t = (c_{t+1} − c_{t−1})/2 (edge frames repeated) and deltas of the deltas:
  60 rows. The frame-level LCNN's LFCC is the same computation over Hann windows centred on
  10 ms cells (:class:`LFCC` ``framing="cells"``, :mod:`interbias.cm.lcnn_frames`).
- ``wavlm`` / ``wav2vec2``: the final hidden layer (``last_hidden_state``, D × T frames at
  50 Hz) of a frozen self-supervised model read from a local Hugging Face folder
  (``from_pretrained(folder, local_files_only=True)``); the waveform is standardised per
  utterance when its preprocessor config says ``do_normalize``.

Front ends hold no trained weights of their own (the SSL ones are frozen), so training
computes each utterance's features once.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn

from interbias.utils.errors import AudioError, ConfigError, EncoderError
from interbias.utils.seeding import canonical_json, sha256_text

if TYPE_CHECKING:
    from interbias.audio.frontend import FrontEnd
    from interbias.experiments.schema import Experiment

FRONTENDS = ("logspec", "cqt", "lfcc", "wavlm", "wav2vec2")
SSL_FRONTENDS = ("wavlm", "wav2vec2")
SAMPLE_RATE_HZ = 16000
LOG_FLOOR = 1e-10


class LogSpec(nn.Module):
    name = "logspec"

    def __init__(self, n_fft: int = 512, win: int = 400, hop: int = 160) -> None:
        super().__init__()
        self.n_fft, self.win, self.hop = n_fft, win, hop
        self.register_buffer("window", torch.hann_window(win, dtype=torch.float32), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        spec = torch.stft(x, self.n_fft, self.hop, self.win, self.window, center=True, return_complex=True)
        return torch.log(spec.real**2 + spec.imag**2 + LOG_FLOOR)


def linear_filterbank(n_filters: int, n_fft: int, sr: int) -> np.ndarray:
    """(n_filters, n_fft//2 + 1) triangles with edges linspace(0, sr/2, n_filters + 2) Hz."""
    edges = np.linspace(0.0, sr / 2, n_filters + 2)
    f = np.arange(n_fft // 2 + 1) * sr / n_fft
    lo, mid, hi = edges[:-2, None], edges[1:-1, None], edges[2:, None]
    return np.maximum(0.0, np.minimum((f - lo) / (mid - lo), (hi - f) / (hi - mid)))


def dct_matrix(n_out: int, n_in: int) -> np.ndarray:
    """The orthonormal DCT-II, first ``n_out`` rows (``scipy.fft.dct(norm="ortho")``)."""
    n = np.arange(n_in)
    m = np.cos(np.pi * np.arange(n_out)[:, None] * (2 * n + 1) / (2 * n_in)) * np.sqrt(2.0 / n_in)
    m[0] /= np.sqrt(2.0)
    return m


def deltas(c: torch.Tensor) -> torch.Tensor:
    """(c_{t+1} − c_{t−1})/2 along the last axis, edge frames repeated."""
    p = torch.cat([c[..., :1], c, c[..., -1:]], dim=-1)
    return (p[..., 2:] - p[..., :-2]) / 2


class LFCC(nn.Module):
    """(batch, n) waveform → (batch, 60, T) LFCC + Δ + ΔΔ (module docstring). ``framing``:
    ``stft`` (``torch.stft`` centred, reflect-padded: T = n // hop + 1; ResNet18-lfcc, LCNN-lfcc,
    GMM-lfcc) or ``cells`` (frame t covers samples [t·hop, (t+1)·hop), its window centred on
    that cell, zero-padded: T = ⌈n / hop⌉; LCNN-LFCC-frames); ``window``: ``hamming`` | ``hann``."""

    name = "lfcc"

    def __init__(
        self, win: int = 320, hop: int = 160, n_fft: int = 512, n_filters: int = 20, n_ceps: int = 20,
        window: str = "hamming", framing: str = "stft",
    ) -> None:  # fmt: skip
        super().__init__()
        if window not in ("hamming", "hann") or framing not in ("stft", "cells"):
            raise ValueError(f"LFCC: window {window!r} / framing {framing!r}: hamming|hann, stft|cells")
        self.n_fft, self.win, self.hop, self.framing = n_fft, win, hop, framing
        make = torch.hamming_window if window == "hamming" else torch.hann_window
        self.register_buffer("window", make(win, dtype=torch.float32), persistent=False)
        fb = linear_filterbank(n_filters, n_fft, SAMPLE_RATE_HZ)
        self.register_buffer("fbank", torch.from_numpy(fb.astype(np.float32)), persistent=False)
        self.register_buffer(
            "dct", torch.from_numpy(dct_matrix(n_ceps, n_filters).astype(np.float32)), persistent=False
        )

    def cepstra(self, x: torch.Tensor) -> torch.Tensor:
        """(batch, n_ceps, T) cepstra before the deltas."""
        if self.framing == "stft":
            spec = torch.stft(x, self.n_fft, self.hop, self.win, self.window, center=True, return_complex=True)
            energy = torch.matmul(self.fbank, spec.real**2 + spec.imag**2)
            return torch.matmul(self.dct, torch.log(energy + LOG_FLOOR))
        t = -(-x.shape[-1] // self.hop)
        left = (self.win - self.hop) // 2
        xp = nn.functional.pad(x, (left, (t - 1) * self.hop + self.win - x.shape[-1] - left))
        power = torch.fft.rfft(xp.unfold(-1, self.win, self.hop) * self.window, n=self.n_fft).abs() ** 2
        return (torch.log(power @ self.fbank.T + LOG_FLOOR) @ self.dct.T).transpose(1, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        c = self.cepstra(x)
        d = deltas(c)
        return torch.cat([c, d, deltas(d)], dim=-2)


def cqt_kernels(sr: int, fmin: float, n_bins: int, bins_per_octave: int) -> np.ndarray:
    """(2·n_bins, 1, L) real and imaginary time-domain kernels, centred in a common length L."""
    q = 1.0 / (2 ** (1.0 / bins_per_octave) - 1)
    freqs = fmin * 2.0 ** (np.arange(n_bins) / bins_per_octave)
    lengths = np.ceil(q * sr / freqs).astype(int)
    if freqs[-1] >= sr / 2:
        raise EncoderError(f"cqt: top bin {freqs[-1]:.1f} Hz is at or above Nyquist ({sr / 2:.0f} Hz)")
    size = int(lengths.max()) | 1
    out = np.zeros((2 * n_bins, 1, size), dtype=np.float64)
    for k, (f, n) in enumerate(zip(freqs, lengths, strict=True)):
        t = np.arange(n) - (n - 1) / 2
        kern = np.hanning(n) * np.exp(2j * np.pi * f * t / sr) / n
        start = (size - n) // 2
        out[k, 0, start : start + n] = kern.real
        out[n_bins + k, 0, start : start + n] = kern.imag
    return out.astype(np.float32)


class CQT(nn.Module):
    name = "cqt"

    def __init__(self, fmin: float = 32.70, n_bins: int = 84, bins_per_octave: int = 12, hop: int = 256) -> None:
        super().__init__()
        self.n_bins, self.hop = n_bins, hop
        kern = torch.from_numpy(cqt_kernels(SAMPLE_RATE_HZ, fmin, n_bins, bins_per_octave))
        self.register_buffer("kernels", kern, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pad = self.kernels.shape[-1] // 2
        y = nn.functional.conv1d(x.unsqueeze(1), self.kernels, stride=self.hop, padding=pad)
        re, im = y[:, : self.n_bins], y[:, self.n_bins :]
        return torch.log(re**2 + im**2 + LOG_FLOOR)


class SSLFrontEnd(nn.Module):
    """Frozen transformers model; features = last hidden state transposed to (D, T)."""

    def __init__(self, name: str, model: Any, normalize: bool) -> None:
        super().__init__()
        self.name = name
        self.model = model
        self.normalize = normalize

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.normalize:
            x = (x - x.mean(dim=1, keepdim=True)) / torch.sqrt(x.var(dim=1, keepdim=True, unbiased=False) + 1e-7)
        with torch.no_grad():
            return self.model(x).last_hidden_state.transpose(1, 2)


def load_ssl(name: str, folder: Path) -> SSLFrontEnd:
    """The frozen WavLM / wav2vec 2.0 model of a local Hugging Face folder; one error when absent."""
    folder = Path(folder)
    if not (folder / "config.json").is_file():
        raise EncoderError(
            f"ResNet18-{name}: front-end folder {folder} has no config.json (place a Hugging Face "
            f"{'WavLM' if name == 'wavlm' else 'wav2vec 2.0'} snapshot there: config.json, "
            "preprocessor_config.json, model.safetensors)"
        )
    try:
        import transformers
    except ImportError:
        raise EncoderError(f"ResNet18-{name}: needs the transformers package (pip install transformers)") from None
    cls = transformers.WavLMModel if name == "wavlm" else transformers.Wav2Vec2Model
    kind = json.loads((folder / "config.json").read_text(encoding="utf-8")).get("model_type")
    want = "wavlm" if name == "wavlm" else "wav2vec2"
    if kind != want:
        raise EncoderError(f"ResNet18-{name}: {folder} holds a {kind!r} model, not {want!r}")
    model, info = cls.from_pretrained(folder, local_files_only=True, output_loading_info=True)
    if info.get("missing_keys"):
        raise EncoderError(f"ResNet18-{name}: {folder} lacks weights {', '.join(info['missing_keys'][:5])}")
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    pre = folder / "preprocessor_config.json"
    normalize = bool(json.loads(pre.read_text(encoding="utf-8")).get("do_normalize", True)) if pre.is_file() else True
    return SSLFrontEnd(name, model, normalize)


def build_frontend(name: str, ssl_folder: Path | None = None) -> nn.Module:
    if name == "logspec":
        return LogSpec()
    if name == "cqt":
        return CQT()
    if name == "lfcc":
        return LFCC()
    if name in SSL_FRONTENDS:
        if ssl_folder is None:
            raise EncoderError(f"ResNet18-{name}: give the front end's Hugging Face folder (--frontend-path)")
        return load_ssl(name, ssl_folder)
    raise EncoderError(f"unknown CM front end {name!r}; valid: {', '.join(FRONTENDS)}")


def fix_length(wave: np.ndarray, n: int) -> np.ndarray:
    """Truncate to the first ``n`` samples, or zero-pad at the end to ``n`` (the ResNet-18 study's 4.0 s rule)."""
    wave = np.asarray(wave, dtype=np.float32)
    if wave.size >= n:
        return wave[:n]
    return np.concatenate([wave, np.zeros(n - wave.size, dtype=np.float32)])


def tile_cut(wave: np.ndarray, n: int) -> np.ndarray:
    """The AASIST authors' rule (``pad`` in their data_utils.py): the first ``n`` samples of a
    long waveform; a shorter one repeated whole ⌊n / len⌋ + 1 times and cut to ``n``."""
    wave = np.asarray(wave, dtype=np.float32)
    if wave.size == 0:
        raise AudioError("empty waveform: nothing to tile to the CM's input length")
    if wave.size >= n:
        return wave[:n]
    return np.tile(wave, n // wave.size + 1)[:n]


#: Pad rules by name: how a waveform is brought to a CM's fixed input length.
PAD_RULES = {"tile": tile_cut, "zero": fix_length}


@dataclass(frozen=True)
class InputPolicy:
    """What a CM does to a waveform before its network sees it: audio at ``sample_rate_hz``
    (other rates brought there by ``resampler``), then ``pad`` (a key of :data:`PAD_RULES`) to
    ``n_samples``. Each model owns its policy; a run may choose only the resampler."""

    n_samples: int
    pad: str
    sample_rate_hz: int = SAMPLE_RATE_HZ
    resampler: str = "polyphase"

    def fit(self, wave: np.ndarray) -> np.ndarray:
        return PAD_RULES[self.pad](wave, self.n_samples)

    def record(self) -> dict[str, Any]:
        """As run.json records it: every field, the resampler with its method and parameters."""
        from interbias.audio.resample import resampler_record

        return {**asdict(self), "resampler": resampler_record(self.resampler)}


class FixedLengthConfig:
    """Base of the CM training configs (:class:`~interbias.cm.train.TrainConfig`,
    :class:`~interbias.cm.gmm.GMMConfig`): frozen dataclasses with ``duration_s`` (seconds) and
    ``sample_rate_hz`` fields."""

    duration_s: float
    sample_rate_hz: int

    @property
    def n_samples(self) -> int:
        """Samples per input: round(duration_s × sample_rate_hz)."""
        return int(round(self.duration_s * self.sample_rate_hz))

    def sha256(self) -> str:
        """sha256 of the canonical JSON of every field."""
        return sha256_text(canonical_json(asdict(self)))  # type: ignore[call-overload]


def frames(n_samples: int, hop: int) -> int:
    """Frames of a centred STFT: 1 + ⌊n / hop⌋."""
    return 1 + math.floor(n_samples / hop)


# ---- the front end of a CM experiment ---------------------------------------------------------

#: ``frontend:`` keys a CM run cannot honour: each CM's input policy sets the length.
LENGTH_KEYS = ("min_duration_s", "max_duration_s")


def cm_frontend(exp: Experiment) -> FrontEnd:
    """The front end a CM experiment loads audio with: the CMs' 16 kHz, no duration limits (each
    CM's input policy fits the length), the YAML's ``frontend.resampler``. A duration key, or a
    rate other than 16 kHz, is refused: the CM path could not honour it."""
    from interbias.audio.frontend import FrontEnd

    raw = exp.raw.get("frontend") or {}
    where = exp.path.name if exp.path else exp.name
    for key in LENGTH_KEYS:
        if key in raw:
            raise ConfigError(
                f"{where}: frontend.{key}: a countermeasure experiment cannot honour it "
                "(each CM's input policy sets the input length); remove it"
            )
    if exp.frontend.sample_rate_hz != SAMPLE_RATE_HZ:
        raise ConfigError(
            f"{where}: frontend.sample_rate_hz: the CMs take {SAMPLE_RATE_HZ} Hz audio, "
            f"not {exp.frontend.sample_rate_hz}; remove it"
        )
    return FrontEnd(SAMPLE_RATE_HZ, 0.0, None, exp.frontend.resampler)
