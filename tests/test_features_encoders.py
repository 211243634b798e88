from __future__ import annotations

import numpy as np
import pytest
import torch

from interbias import audio
from interbias.encoders import ENCODERS, load_encoder
from interbias.encoders.features import fbank
from interbias.errors import EncoderError
from interbias.seeding import derive_rng


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


def test_unknown_encoder_lists_labels() -> None:
    with pytest.raises(EncoderError, match=r"unknown encoder 'CAMPP'; valid: .*CAM\+\+"):
        load_encoder("CAMPP")


def _margin(enc, corpus) -> float:
    utts = [u for u in corpus][:30]
    X = enc.embed([audio.load(corpus.resolve(u)).samples for u in utts])
    spk = np.array([u.speaker for u in utts])
    S = X @ X.T
    iu = np.triu_indices(len(utts), 1)
    same = (spk[:, None] == spk[None, :])[iu]
    return float(S[iu][same].mean() - S[iu][~same].mean())


@pytest.mark.slow  # test_encoders_packaged asserts a larger margin on the same weights in the default suite
def test_campplus_real_weights_separate_speakers(tiny_corpus) -> None:
    enc = load_encoder("CAM++")
    assert len(enc.checkpoint_sha256) == 64 and enc.checkpoint_sha256 == (
        "92f29b94e6948786a26778c9e302525d185bb08c8b9f5252ed98776902840199"
    )
    assert _margin(enc, tiny_corpus) > 0.08
    w = audio.load(tiny_corpus.resolve(tiny_corpus.utterances[0])).samples
    a, b = enc.embed([w]), enc.embed([w])
    assert a.shape == (1, 192) and a.tobytes() == b.tobytes()
    assert np.linalg.norm(a) == pytest.approx(1.0, abs=1e-5)


def test_mfcc_baseline_is_weight_free_and_separates(tiny_corpus) -> None:
    enc = load_encoder("mfcc-stats")
    assert enc.family == "baseline" and enc.checkpoint_sha256 == "none"
    assert _margin(enc, tiny_corpus) > 0.005


def test_registry_has_spine_labels() -> None:
    assert {"CAM++", "mfcc-stats"} <= set(ENCODERS.names())
