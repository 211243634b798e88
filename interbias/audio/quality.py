"""Blind quality measures per utterance and per trial.

Per (utterance, chain, encoder): ``duration`` — seconds of audio the encoder received (after
the front end's VAD and the operator chain); ``snr`` — the WADA-SNR estimate of that audio
(dB, :mod:`interbias.audio.wada_snr`); ``magnitude`` — the L2 norm of the encoder's embedding
before normalisation. A trial's measure ``m`` becomes two features, ``q_m_min`` and ``q_m_max``:
the min and max over its enrolment and test sides (the enrolment side of a K-utterance trial is
its first utterance's).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from interbias.audio.wada_snr import wada_snr

#: The measures a QMF calibration may use, in this order.
MEASURES = ("duration", "snr", "magnitude")


def wave_measures(wave: np.ndarray, sample_rate_hz: int) -> dict[str, float]:
    """``duration`` (s) and ``snr`` (dB, WADA) of the audio an encoder receives."""
    x = np.asarray(wave).reshape(-1)
    return {"duration": x.size / float(sample_rate_hz), "snr": wada_snr(x)}


def feature_names(measures: Sequence[str]) -> list[str]:
    """The trial feature columns of ``measures``: ``q_<m>_min``, ``q_<m>_max`` each."""
    return [f"q_{m}_{side}" for m in measures for side in ("min", "max")]


def trial_features(
    enrol: Sequence[Mapping[str, float]], test: Sequence[Mapping[str, float]], measures: Sequence[str] = MEASURES
) -> dict[str, np.ndarray]:
    """Per trial, min and max over (enrolment, test) of each measure (see the module doc);
    ``enrol[i]`` and ``test[i]`` are trial i's sides' measure records."""
    out: dict[str, np.ndarray] = {}
    for m in measures:
        e = np.array([float(r[m]) for r in enrol], dtype=np.float64)
        t = np.array([float(r[m]) for r in test], dtype=np.float64)
        out[f"q_{m}_min"] = np.minimum(e, t)
        out[f"q_{m}_max"] = np.maximum(e, t)
    return out


def trial_columns(
    enrol_ids: Sequence[str],
    test_ids: Sequence[str],
    enrol_side: Mapping[str, Mapping[str, float]],
    test_side: Mapping[str, Mapping[str, float]],
) -> dict[str, np.ndarray]:
    """Every measure's ``q_<m>_min`` / ``q_<m>_max`` column for trials (``enrol_ids[i]``,
    ``test_ids[i]``); ``*_side`` map an utterance id to its measures under that side's chain
    and the scoring encoder. A trial whose side has no measures gets NaN."""
    blank = dict.fromkeys(MEASURES, float("nan"))
    return trial_features(
        [enrol_side.get(u, blank) for u in enrol_ids], [test_side.get(u, blank) for u in test_ids], MEASURES
    )
