"""WADA-SNR: its error on operator-made Gaussian noise from −5 to 30 dB, on signals that follow
its speech model (Gamma amplitudes) and on the synthetic corpus's speech (docs/calibration.md
reports both)."""

from __future__ import annotations

import numpy as np
import pytest

from interbias.audio import frontend as audio
from interbias.audio.quality import trial_features, wave_measures
from interbias.audio.wada_snr import G_TABLE, SNR_GRID_DB, wada_snr, wada_statistic
from interbias.operators import OpContext, make_operator
from interbias.utils.seeding import derive_rng

RATE = 16000
SNRS = [-5.0, 0.0, 5.0, 10.0, 15.0, 20.0, 25.0, 30.0]


def noisy(x: np.ndarray, snr: float, seed: str) -> np.ndarray:
    y, rec = make_operator("noise", {"kind": "gaussian", "snr_db": snr}).apply(
        x, OpContext(RATE, "u", "s", derive_rng("wada", seed, str(snr)))
    )
    assert rec["snr_db_achieved"] == pytest.approx(snr, abs=1e-6)
    return y


def gamma_speech(seed: str, n: int = 3 * RATE) -> np.ndarray:
    """Random-sign Gamma(0.4) amplitudes: the clean-speech model of Kim & Stern."""
    rng = derive_rng("gamma-speech", seed)
    return (0.05 * rng.gamma(0.4, 1.0, n) * rng.choice([-1.0, 1.0], n)).astype(np.float32)


@pytest.mark.parametrize("snr", SNRS)
def test_wada_recovers_operator_snr_on_its_speech_model_within_1_db(snr: float) -> None:
    errors = [wada_snr(noisy(gamma_speech(s), snr, s)) - snr for s in ("a", "b", "c")]
    assert max(abs(e) for e in errors) < 1.0


def test_wada_on_corpus_speech_tracks_operator_snr(tiny_corpus) -> None:
    """Bias at most 3 dB from −5 to 10 dB; the estimate rises with the operator's SNR up to
    the corpus's own noise floor (its clean files estimate 13–39 dB, which caps high SNRs)."""
    waves = [audio.load(tiny_corpus.resolve(u), audio.FrontEnd(), vad=True).samples for u in tiny_corpus.utterances[:8]]
    est = np.array([[wada_snr(noisy(x, snr, str(i))) for snr in SNRS] for i, x in enumerate(waves)])
    bias = est.mean(axis=0) - np.array(SNRS)
    assert np.all(np.abs(bias[:4]) < 3.0)
    assert np.all(np.diff(est.mean(axis=0)) > 0)


def test_wada_statistic_is_the_published_formula_and_reads_the_table() -> None:
    x = gamma_speech("f")
    a = np.maximum(np.abs(x.astype(np.float64)) / np.abs(x).max(), 1e-10)
    assert wada_statistic(x) == pytest.approx(np.log(a.mean()) - np.log(a).mean(), rel=1e-12)
    assert len(G_TABLE) == len(SNR_GRID_DB) == 121
    assert np.all(np.diff(G_TABLE[5:]) > 0)  # monotone above −15 dB
    assert np.isnan(wada_snr(np.zeros(100)))
    assert wada_snr(np.zeros(0)) != wada_snr(np.zeros(0))  # NaN


def test_measures_and_trial_min_max() -> None:
    m = wave_measures(np.ones(8000, np.float32) * 0.1, RATE)
    assert m["duration"] == 0.5
    feats = trial_features([{"snr": 5.0}, {"snr": 20.0}], [{"snr": 10.0}, {"snr": 1.0}], ["snr"])
    assert feats["q_snr_min"].tolist() == [5.0, 1.0]
    assert feats["q_snr_max"].tolist() == [10.0, 20.0]
