"""Front ends used by the encoder backends, each against an independent numpy/librosa reference."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from interbias.encoders import probe_wave
from interbias.encoders.features import fbank, ge2e_mel, nemo_mel, slaney_mel_banks
from interbias.utils.seeding import derive_rng

librosa = pytest.importorskip("librosa")


def frames_power(x: np.ndarray, n_fft: int, hop: int, window: np.ndarray) -> np.ndarray:
    """Centred |rfft|² frames in numpy: zero-pad n_fft/2 each side, window centred in n_fft."""
    padded = np.pad(x.astype(np.float64), n_fft // 2)
    win = np.zeros(n_fft)
    off = (n_fft - window.size) // 2
    win[off : off + window.size] = window
    n = 1 + (padded.size - n_fft) // hop
    frames = np.stack([padded[i * hop : i * hop + n_fft] for i in range(n)])
    return np.abs(np.fft.rfft(frames * win, axis=1)) ** 2  # (frames, bins)


@pytest.mark.parametrize(("n_mels", "n_fft"), [(40, 400), (80, 512), (72, 512)])
def test_slaney_banks_equal_librosa(n_mels: int, n_fft: int) -> None:
    ref = librosa.filters.mel(sr=16000, n_fft=n_fft, n_mels=n_mels)  # slaney scale and norm
    ours = slaney_mel_banks(n_mels, n_fft, 16000).numpy()
    assert ours.shape == ref.shape and np.abs(ours - ref).max() < 1e-7


def test_ge2e_mel_equals_a_numpy_reference() -> None:
    w = probe_wave(1.3)
    hann = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(400) / 400)  # periodic Hann (librosa's "hann")
    ref = frames_power(w, 400, 160, hann) @ librosa.filters.mel(sr=16000, n_fft=400, n_mels=40).T
    ours = ge2e_mel(torch.from_numpy(w)).numpy()
    assert ours.shape == ref.shape == (1 + w.size // 160, 40)
    assert np.abs(ours - ref).max() / np.abs(ref).max() < 1e-6


def test_nemo_mel_equals_a_numpy_reference() -> None:
    w = probe_wave(1.1)
    x = np.concatenate([w[:1], w[1:] - 0.97 * w[:-1]]).astype(np.float64)
    power = frames_power(x, 512, 160, np.hanning(400))  # symmetric Hann, as torch.hann_window(periodic=False)
    logmel = np.log(power @ librosa.filters.mel(sr=16000, n_fft=512, n_mels=80).T.astype(np.float64) + 2.0**-24).T
    ref = (logmel - logmel.mean(1, keepdims=True)) / (logmel.std(1, ddof=1, keepdims=True) + 1e-5)
    ours = nemo_mel(torch.from_numpy(w)).numpy()
    assert ours.shape == ref.shape == (80, 1 + w.size // 160)
    assert np.abs(ours - ref).max() < 1e-4


def test_hamming_window_option_and_unknown_window() -> None:
    w = torch.from_numpy(probe_wave(0.5))
    assert not torch.equal(fbank(w, window="hamming"), fbank(w))
    with pytest.raises(ValueError, match="unknown window 'hann' \\(povey, hamming\\)"):
        fbank(w, window="hann")


def test_fbank_matches_kaldi_native_fbank() -> None:
    knf = pytest.importorskip("kaldi_native_fbank")
    x = (derive_rng("fbank").standard_normal(16000 * 2) * 0.1).astype(np.float32)
    opts = knf.FbankOptions()
    opts.frame_opts.dither = 0
    opts.mel_opts.num_bins = 80
    f = knf.OnlineFbank(opts)
    f.accept_waveform(16000, x.tolist())
    f.input_finished()
    ref = np.stack([f.get_frame(i) for i in range(f.num_frames_ready)])
    ours = fbank(torch.from_numpy(x)).numpy()
    assert ours.shape == ref.shape
    assert np.abs(ours - ref).max() < 1e-3
