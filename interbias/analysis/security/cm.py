"""Countermeasure score and label files of ADD 2023 read for ``interbias cm-eval``, and the DSR
of an attack set over detectors. The metrics themselves (weighted EER, location scores,
open-set F1, segment labels) are :mod:`interbias.metrics.cm`, re-exported here."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from interbias.metrics import verification as metrics
from interbias.metrics.cm import (
    ADD_ROUND_WEIGHTS,
    LOCATION_WEIGHTS,
    LocationScores,
    OpenSetScores,
    location_scores,
    open_set_f1,
    parse_resolution,
    parse_segment_line,
    recognition_record,
    to_frames,
    weighted_eer,
)
from interbias.metrics.segments import SegmentLabel
from interbias.run.measured import CM_LINE, read_score_file
from interbias.utils.errors import MetricError

__all__ = [
    "ADD_ROUND_WEIGHTS",
    "LOCATION_WEIGHTS",
    "LocationScores",
    "OpenSetScores",
    "SegmentLabel",
    "dsr_at_eer",
    "location_scores",
    "open_set_f1",
    "parse_resolution",
    "parse_segment_line",
    "read_class_labels",
    "read_cm_frame",
    "read_cm_scores",
    "read_segment_labels",
    "recognition_record",
    "to_frames",
    "weighted_eer",
]


def read_cm_frame(path: Path) -> pd.DataFrame:
    """A CM score file as a frame with float ``score`` and int ``label`` (1 = bona fide) plus
    any other columns: a CSV with ``score,label`` or a whitespace file ``ID SCORE LABEL``;
    labels bonafide|spoof in :data:`interbias.run.measured.LABELS`'s vocabulary."""
    return read_score_file(path, error=MetricError, layout=CM_LINE)


def read_cm_scores(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(scores, labels with 1 = bona fide) of :func:`read_cm_frame`."""
    frame = read_cm_frame(path)
    return frame["score"].to_numpy(), frame["label"].to_numpy()


def dsr_at_eer(score_sets: Sequence[tuple[np.ndarray, np.ndarray]], attack: Sequence[np.ndarray] | None = None) -> dict:
    """DSR of an attack set against N detectors, each at its own EER threshold.

    ``score_sets``: per detector (scores, labels with 1 = bona fide) on one evaluation set;
    ``attack``: per detector, a mask of the attack samples (default: every spoof sample). W =
    attack samples scoring ≥ the detector's EER threshold (accepted as bona fide)."""
    from interbias.analysis.security.spoofing import deception_success_rate

    wrong, sizes, thresholds = [], [], []
    for i, (s, lab) in enumerate(score_sets):
        _, thr = metrics.eer_from_sweep(metrics.threshold_sweep(s, lab))
        mask = (np.asarray(lab) == 0) if attack is None else np.asarray(attack[i], dtype=bool)
        wrong.append(int((np.asarray(s)[mask] >= thr).sum()))
        sizes.append(int(mask.sum()))
        thresholds.append(float(thr))
    if len(set(sizes)) != 1:
        raise MetricError(f"DSR: detectors were given different numbers of attack samples {sizes}")
    return {
        "dsr": deception_success_rate(wrong, sizes[0]),
        "wrong": wrong,
        "n_samples": sizes[0],
        "n_models": len(wrong),
        "thresholds": thresholds,
    }


def read_segment_labels(path: Path, *, reference: bool) -> dict[str, SegmentLabel]:
    path = Path(path)
    if not path.is_file():
        raise MetricError(f"segment label file {path} does not exist")
    out: dict[str, SegmentLabel] = {}
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        lab = parse_segment_line(line, where=f"{path}:{lineno}", reference=reference)
        if lab.utterance in out:
            raise MetricError(f"{path}:{lineno}: utterance {lab.utterance!r} is listed twice")
        out[lab.utterance] = lab
    if not out:
        raise MetricError(f"segment label file {path} has no lines")
    return out


def read_class_labels(path: Path) -> dict[str, str]:
    """``UTT_ID LABEL`` per line (whitespace)."""
    path = Path(path)
    if not path.is_file():
        raise MetricError(f"label file {path} does not exist")
    out: dict[str, str] = {}
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 2:
            raise MetricError(f"{path}:{lineno}: expected 'UTT_ID LABEL', got {line.strip()!r}")
        if parts[0] in out:
            raise MetricError(f"{path}:{lineno}: utterance {parts[0]!r} is listed twice")
        out[parts[0]] = parts[1]
    if not out:
        raise MetricError(f"label file {path} has no lines")
    return out
