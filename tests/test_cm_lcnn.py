"""LFCC against a numpy restatement; the LCNN's shapes; LCNN-lfcc training deterministic and
resumable; LCNN-wav2vec2 refused in one line without a local front-end folder."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.fft
import torch
from cm_fixtures import cm_manifest

from interbias.cm.frontends import LFCC, linear_filterbank
from interbias.cm.lcnn import LCNN
from interbias.cm.models import CM_MODELS, load_cm
from interbias.cm.train import train_model
from interbias.utils.errors import EncoderError
from interbias.utils.seeding import derive_rng

TINY = {"duration_s": "0.5", "width": "4", "max_epochs": "2", "batch_size": "4", "lr": "0.01"}


def lfcc_restated(x: np.ndarray, win: int, hop: int) -> np.ndarray:
    """Centred reflect-padded frames, Hamming (periodic), |rfft|², triangles, log, DCT-II ortho, Δ, ΔΔ."""
    pad = np.pad(x, 256, mode="reflect")
    n_frames = 1 + len(x) // hop
    w = 0.54 - 0.46 * np.cos(2 * np.pi * np.arange(win) / win)
    off = (512 - win) // 2
    frames = np.stack([pad[t * hop : t * hop + 512] for t in range(n_frames)])
    window = np.zeros(512)
    window[off : off + win] = w
    power = np.abs(np.fft.rfft(frames * window, axis=1)) ** 2
    c = scipy.fft.dct(np.log(power @ linear_filterbank(20, 512, 16000).T + 1e-10), type=2, norm="ortho", axis=1)[:, :20]

    def delta(a):
        p = np.concatenate([a[:1], a, a[-1:]])
        return (p[2:] - p[:-2]) / 2

    return np.concatenate([c, delta(c), delta(delta(c))], axis=1).T


@pytest.mark.parametrize("n", [321, 12345, 16000])
def test_lfcc_stft_framing_keeps_its_bytes(n):
    """The stft framing of the shared LFCC class against its torch code before the frame
    detector's LFCC joined it (torch.stft, fbank @ power, dct @ log)."""
    x = torch.from_numpy(0.1 * derive_rng("lfcc-check", n).standard_normal((2, n)).astype(np.float32))
    fe = LFCC()
    spec = torch.stft(x, 512, 160, 320, torch.hamming_window(320), center=True, return_complex=True)
    c = torch.matmul(fe.dct, torch.log(torch.matmul(fe.fbank, spec.real**2 + spec.imag**2) + 1e-10))
    p = torch.cat([c[..., :1], c, c[..., -1:]], dim=-1)
    d = (p[..., 2:] - p[..., :-2]) / 2
    q = torch.cat([d[..., :1], d, d[..., -1:]], dim=-1)
    assert torch.equal(fe(x), torch.cat([c, d, (q[..., 2:] - q[..., :-2]) / 2], dim=-2))


def test_lfcc_matches_a_numpy_restatement():
    x = (np.sin(2 * np.pi * 1000 * np.arange(8000) / 16000) + 0.1 * np.cos(np.arange(8000) / 3)).astype(np.float32)
    got = LFCC()(torch.from_numpy(x)[None])[0].double().numpy()
    want = lfcc_restated(x.astype(np.float64), 320, 160)
    assert got.shape == (60, 51)
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3)
    fb = linear_filterbank(20, 512, 16000)
    assert fb.max() == pytest.approx(1.0, abs=0.05) and np.allclose(
        fb.sum(axis=0)[13:-13], 1.0
    )  # triangles tile the band between the outer peaks


def test_lcnn_shapes():
    net = LCNN(60, width=8, n_classes=3)  # MFM channels w = 4; 60 rows → 3 after four 2×2 poolings
    assert net(torch.zeros(2, 60, 51)).shape == (2, 3) and net.dim == 4 * 3
    baseline = LCNN(60)  # the recipe's width 64: the baseline's 64-channel first convolution, 32 after MFM
    assert baseline.trunk[0].conv.out_channels == 64 and baseline.dim == 32 * 3


def test_lcnn_lfcc_trains_byte_identically_and_resumes(tmp_path):
    m = cm_manifest(tmp_path / "data")

    def run(out, **kw):
        return train_model("LCNN-lfcc", m, settings=dict(TINY), out=tmp_path / out, log=lambda s: None, **kw)

    _, info = run("a")
    run("b", stop_after=1)
    run("b")
    assert (tmp_path / "a" / "checkpoint.pt").read_bytes() == (tmp_path / "b" / "checkpoint.pt").read_bytes()
    assert info["epochs_done"] == 2
    cm = load_cm("LCNN-lfcc", path=tmp_path / "a")
    assert cm.card.architecture == "lcnn" and cm.score([np.full(8000, 0.01, np.float32)]).shape == (1,)


def test_lcnn_ssl_needs_a_local_frontend_folder(tmp_path):
    m = cm_manifest(tmp_path / "data", per_class=1)
    with pytest.raises(
        EncoderError, match=r"^LCNN-wav2vec2: give the front end's Hugging Face folder \(--frontend-path\)$"
    ):
        train_model("LCNN-wav2vec2", m, settings=dict(TINY), out=tmp_path / "w", log=lambda s: None)
    with pytest.raises(EncoderError, match=r"^LCNN-wav2vec2: front-end folder .* has no config.json"):
        train_model(
            "LCNN-wav2vec2", m, settings=dict(TINY), out=tmp_path / "w", frontend_path=tmp_path, log=lambda s: None
        )
    assert {"LCNN-lfcc", "LCNN-wav2vec2", "GMM-lfcc", "ResNet18-lfcc"} <= set(CM_MODELS.names())
