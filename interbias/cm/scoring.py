"""Scoring stage of a CM experiment: every dev and eval utterance of a CM manifest through each
cell's operator chain and each CM, into one long score table.

The clean (reference) cell scores dev and eval utterances; other cells score eval only, since
the deployment threshold is chosen once, on the clean dev scores. A chain that fails on an
utterance (an operator error, audio that cannot be read or holds less than :data:`MIN_SIGNAL_S`
of signal, or a chain output
that is near-silence: the checks of the SV path, :mod:`interbias.operators.silence`) drops that
utterance from that cell and is counted (``n_failed``), never replaced by unchanged audio.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from interbias.corpora.manifest import Manifest
from interbias.operators.silence import check_chain_output
from interbias.utils.errors import AudioError, OperatorError

#: The least audio holding signal (:func:`interbias.audio.frontend.signal_duration_s`) that a CM
#: judges, in ``cm score`` and in CM runs alike: a click or a burst in digital silence holds no
#: speech, and the input policy would tile it into a click train.
MIN_SIGNAL_S = 0.5

#: Columns of ``cm_scores.csv``.
SCORE_COLUMNS = (
    "model", "cell", "split", "id", "speaker", "gender", "label", "attack", "score", "log_odds",
)  # fmt: skip


@dataclass
class CellWaves:
    """The degraded waveforms of one cell, and the failures."""

    ids: list[str] = field(default_factory=list)
    waves: list[np.ndarray] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def check_cm_signal(x: np.ndarray, sample_rate_hz: int, where: str) -> None:
    """Refuse (:class:`AudioError`) audio with less than :data:`MIN_SIGNAL_S` of signal."""
    from interbias.audio.frontend import check_signal_duration

    check_signal_duration(x, sample_rate_hz, MIN_SIGNAL_S, where=where, purpose="nothing for a CM to judge")


def degrade(manifest: Manifest, utts: list[Any], chain: Any, cache_dir: Any, fe: Any = None) -> CellWaves:
    """Load each utterance with the front end ``fe`` (the CMs' rate, no duration limits, the
    run's resampler), apply ``chain`` (derived seeds) and check its output as the SV path does;
    failures are counted, one line each. ``fe`` None: 16 kHz, polyphase, no duration limits."""
    from interbias.audio.frontend import FrontEnd, load
    from interbias.operators import OpContext

    fe = fe or FrontEnd(min_duration_s=0.0, max_duration_s=None)
    out = CellWaves()
    key = chain.key()
    for u in utts:
        try:
            x = load(manifest.resolve(u), fe, span=u.span).samples
            check_cm_signal(x, fe.sample_rate_hz, str(manifest.resolve(u)))
            y, _ = chain.apply(
                x,
                utterance_sha256=u.sha256 or u.id,
                key=key,
                make_ctx=lambda rng, u=u: OpContext(
                    sample_rate_hz=fe.sample_rate_hz, utterance_id=u.id, speaker=u.speaker, rng=rng, corpus=manifest,
                    exclude_speakers=frozenset({u.speaker}), frontend=fe, cache_dir=cache_dir,
                ),
            )  # fmt: skip
            if chain.effective:
                check_chain_output(x, y, fe.sample_rate_hz)
        except (AudioError, OperatorError) as exc:
            out.failed.append(f"{u.id}: {exc}")
            continue
        out.ids.append(u.id)
        out.waves.append(y)
    return out


def score_cell(
    models: dict[str, Any], manifest: Manifest, utts: list[Any], cell: Any, cache_dir: Any, fe: Any
) -> tuple[pd.DataFrame, list[str]]:
    """Scores of ``utts`` under ``cell``'s test chain for every model, and the failures."""
    cw = degrade(manifest, utts, cell.test_chain, cache_dir, fe)
    by_id = manifest.by_id()
    rows = []
    from interbias.cm.models import posterior

    for label, cm in models.items():
        logits = cm.logits(cw.waves) if cw.waves else np.zeros((0, 2))
        scores, log_odds = posterior(logits), logits[:, 1] - logits[:, 0]
        for uid, s, lo in zip(cw.ids, scores, log_odds, strict=True):
            u = by_id[uid]
            rows.append(
                {
                    "model": label, "cell": cell.id, "split": u.get("split"), "id": uid, "speaker": u.speaker,
                    "gender": u.gender, "label": u.get("label"), "attack": u.get("attack") or "", "score": float(s),
                    "log_odds": float(lo),
                }
            )  # fmt: skip
    return pd.DataFrame(rows, columns=list(SCORE_COLUMNS)), cw.failed
