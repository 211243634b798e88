"""Countermeasure metrics of ADD 2023 (Sections 3.2–3.4), pure functions of labels and scores
(the file readers are :mod:`interbias.analysis.security.cm`).

**Detection (Track 1.2).** Scores are higher for bona fide audio; label 1 = bona fide, 0 =
spoof. The EER is :func:`interbias.metrics.verification.eer` (interpolated crossing). The weighted EER over
rounds is WEER = Σ_r w_r · EER_r with ADD 2023's w = (0.4, 0.6) for two rounds (Eq. 4).

**Manipulated-region location (Track 2).** Segment label files (reference and prediction)
hold one utterance per line, in the layout of the Half-Truth (HAD) corpus that Track 2 is built
from::

    UTT_ID  START-END-T/START-END-F/...  LABEL

Segments are ``start-end-flag`` in seconds, joined by ``/``, in time order and not overlapping;
flag ``T`` marks genuine audio and ``F`` a manipulated (fake) region; time no segment covers
counts as genuine. ``LABEL`` is the utterance decision: ``1`` genuine, ``0`` fake. In a
reference file the label must agree with the segments (0 exactly when some segment is ``F``);
in a prediction the label is the sentence decision and the ``F`` segments the located regions.

- Sentence accuracy A = (TP + TN) / N over all utterances, fake as the positive class (Eq. 5).
- Segment precision, recall and F1 (Eqs. 6–8) over the reference-fake utterances only (a
  genuine utterance's predicted regions are false alarms that enter the sentence accuracy):
  TP = time fake in both, FP = predicted fake but genuine, FN = fake but predicted genuine.
  The resolution is stated and selectable: ``seconds`` counts continuous time (a frame count at
  infinitely fine resolution); a frame length ``r`` (the challenge's labels are frame-based, e.g.
  r = 0.01 s) cuts time into frames ``[k·r, (k+1)·r)`` and counts a frame as fake when its
  centre ``(k + ½)·r`` lies in a fake segment ``[start, end)``; TP/FP/FN are then frame counts
  × r (still seconds). The reference covers the whole audio: a predicted segment past the
  reference's last end is cut there, and the fake seconds cut off (audio that does not exist)
  are counted in a note, never as false positives.
- Score = 0.3 · A + 0.7 · F1 (Eq. 9).

**Algorithm recognition (Track 3, open set).** Over the C known classes, P = (1/C) Σ TP_i /
(TP_i + FP_i), R = (1/C) Σ TP_i / (TP_i + FN_i), F1 = 2PR / (P + R) (Eqs. 10–12) — the
harmonic mean of macro precision and macro recall. Samples of the unknown class count in FP_i
when predicted as class i, and a known-class sample predicted unknown counts in FN_i. A class
with no predictions (or no samples) has a 0/0 term: it counts as 0 and is reported.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from interbias.metrics.segments import SegmentLabel, read_segment_line
from interbias.utils.errors import MetricError

#: ADD 2023 weights of EER rounds 1 and 2 (Eq. 4) and of the location score (Eq. 9).
ADD_ROUND_WEIGHTS = (0.4, 0.6)
LOCATION_WEIGHTS = (0.3, 0.7)


# ---- detection ----------------------------------------------------------------------------------


def weighted_eer(eers: Sequence[float], weights: Sequence[float] = ADD_ROUND_WEIGHTS) -> float:
    """WEER = Σ w_r · EER_r; the weights must be non-negative and sum to 1."""
    e = np.asarray(eers, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    if len(e) != len(w) or len(e) == 0:
        raise MetricError(f"weighted EER: {len(e)} round(s) but {len(w)} weight(s)")
    if (w < 0).any() or abs(w.sum() - 1) > 1e-9:
        raise MetricError(f"weighted EER: weights must be >= 0 and sum to 1, got {w.tolist()}")
    if not np.isfinite(e).all() or (e < 0).any() or (e > 1).any():
        raise MetricError("weighted EER: every EER must be a fraction in [0, 1]")
    return float(np.dot(w, e))


# ---- manipulated-region location -----------------------------------------------------------------


def parse_segment_line(line: str, *, where: str, reference: bool) -> SegmentLabel:
    """One line of a segment label file (module docstring); bad input is a :class:`MetricError`."""
    return read_segment_line(line, where=where, reference=reference, error=MetricError)


def _length(regions: list[tuple[float, float]] | list[tuple[int, int]]) -> float:
    return float(sum(b - a for a, b in regions))


def _overlap(x: list, y: list) -> float:
    return float(sum(max(0.0, min(b, d) - max(a, c)) for a, b in x for c, d in y))


@dataclass(frozen=True)
class LocationScores:
    n_utterances: int
    sentence_tp: int
    sentence_tn: int
    sentence_fp: int
    sentence_fn: int
    sentence_accuracy: float
    segment_tp_s: float
    segment_fp_s: float
    segment_fn_s: float
    segment_precision: float
    segment_recall: float
    segment_f1: float
    score: float
    #: ``seconds`` (continuous) or the frame length in seconds, as text (e.g. ``0.01``).
    resolution: str = "seconds"
    notes: tuple[str, ...] = field(default=())

    def as_dict(self) -> dict:
        d = asdict(self)
        d["notes"] = "; ".join(self.notes)
        return d


def _match(ref: dict, pred: dict, what: str) -> None:
    missing = sorted(set(ref) - set(pred))
    extra = sorted(set(pred) - set(ref))
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"{len(missing)} reference utterance(s) have no prediction (first: {', '.join(missing[:5])})")
        if extra:
            parts.append(f"{len(extra)} prediction(s) are not in the reference (first: {', '.join(extra[:5])})")
        raise MetricError(f"{what}: " + "; ".join(parts))


def parse_resolution(text: str | float | None) -> float | None:
    """``seconds`` (or None) → None; a frame length: ``0.01``, ``10ms`` or ``0.01s`` → seconds."""
    if text is None or str(text).strip().lower() in ("seconds", "continuous", ""):
        return None
    raw = str(text).strip().lower()
    try:
        value = float(raw[:-2]) / 1000 if raw.endswith("ms") else float(raw.removesuffix("s"))
    except ValueError:
        raise MetricError(f"--resolution {text!r}: give 'seconds' or a frame length such as 0.01 or 10ms") from None
    if not 0 < value <= 10:
        raise MetricError(f"--resolution {text!r}: a frame length must lie in (0, 10] seconds")
    return value


def to_frames(regions: list[tuple[float, float]], r: float) -> list[tuple[int, int]]:
    """Frames ``[k0, k1)`` whose centres (k + ½)·r lie in each region ``[a, b)``."""
    first = lambda t: math.ceil(round(t / r - 0.5, 6))  # noqa: E731 - the first frame whose centre is >= t
    return [(first(a), first(b)) for a, b in regions]


def clipped_to_reference(
    ref: dict[str, SegmentLabel], pred: dict[str, SegmentLabel]
) -> tuple[dict[str, SegmentLabel], dict[str, float]]:
    """``pred`` with every segment cut at its utterance's end (the reference's last segment end:
    the reference covers the whole audio), and the fake seconds cut off per utterance that had any."""
    out, beyond = {}, {}
    for utt, p in pred.items():
        end = max(b for _, b, _ in ref[utt].segments)
        past = sum(b - max(a, end) for a, b, fake in p.segments if fake and b > end + 1e-9)
        if past <= 0:
            out[utt] = p
            continue
        beyond[utt] = past
        kept = tuple((a, min(b, end), f) for a, b, f in p.segments if a < end - 1e-9)
        out[utt] = replace(p, segments=kept)
    return out, beyond


def location_scores(
    ref: dict[str, SegmentLabel],
    pred: dict[str, SegmentLabel],
    *,
    weights: tuple[float, float] = LOCATION_WEIGHTS,
    resolution_s: float | None = None,
) -> LocationScores:
    """Sentence accuracy, segment P/R/F1 (over reference-fake utterances, continuous seconds or
    frames of ``resolution_s``) and the weighted score of ADD 2023 Track 2 (module docstring)."""
    _match(ref, pred, "location")
    r = resolution_s
    regions = (lambda x: x) if r is None else (lambda x: to_frames(x, r))
    unit = 1.0 if r is None else r
    tp = tn = fp = fn = 0
    s_tp = s_fp = s_fn = 0.0
    notes = []
    pred, beyond = clipped_to_reference(ref, pred)
    if beyond:
        seconds = sum(beyond.values())
        notes.append(
            f"{len(beyond)} utterance(s) have predicted fake regions past the reference's end (first: "
            f"{min(beyond)}): {seconds:.6g} s of audio that does not exist clipped off, not counted"
        )
    for utt, rl in ref.items():
        p = pred[utt]
        if rl.fake and p.fake:
            tp += 1
        elif rl.fake:
            fn += 1
        elif p.fake:
            fp += 1
        else:
            tn += 1
        if rl.fake:
            rf, pf = regions(rl.fake_regions), regions(p.fake_regions)
            both = _overlap(rf, pf)
            s_tp += both
            s_fp += _length(pf) - both
            s_fn += _length(rf) - both
    n = tp + tn + fp + fn
    acc = (tp + tn) / n
    if s_tp + s_fp > 0:  # counts in seconds, or in frames until the end
        prec = s_tp / (s_tp + s_fp)
    else:
        prec = 0.0
        notes.append("no predicted fake duration in reference-fake utterances: segment precision set to 0")
    if s_tp + s_fn > 0:
        rec = s_tp / (s_tp + s_fn)
    else:
        rec = 0.0
        notes.append("no reference fake duration: segment recall set to 0")
    f1 = 2 * prec * rec / (prec + rec) if prec + rec > 0 else 0.0
    if prec + rec == 0:
        notes.append("segment precision and recall are 0: F1 set to 0")
    a, b = weights
    res = "seconds" if r is None else f"{r:g}"
    s_tp, s_fp, s_fn = s_tp * unit, s_fp * unit, s_fn * unit
    return LocationScores(n, tp, tn, fp, fn, acc, s_tp, s_fp, s_fn, prec, rec, f1, a * acc + b * f1, res, tuple(notes))


# ---- open-set algorithm recognition ----------------------------------------------------------


@dataclass(frozen=True)
class OpenSetScores:
    precision: float
    recall: float
    f1: float
    per_class: pd.DataFrame
    n_samples: int
    n_unknown: int
    notes: tuple[str, ...] = ()


def open_set_f1(y_true: Sequence[str], y_pred: Sequence[str], known: Sequence[str]) -> OpenSetScores:
    """Macro precision, recall and F1 over the ``known`` classes (module docstring)."""
    t = np.asarray([str(v) for v in y_true], dtype=object)
    p = np.asarray([str(v) for v in y_pred], dtype=object)
    if len(t) != len(p) or len(t) == 0:
        raise MetricError(f"open-set F1: {len(t)} reference and {len(p)} predicted labels")
    classes = [str(k) for k in known]
    if not classes:
        raise MetricError("open-set F1: no known class given")
    if len(set(classes)) != len(classes):
        raise MetricError("open-set F1: give each known class once")
    rows, notes = [], []
    for c in classes:
        tp = int(((t == c) & (p == c)).sum())
        fp = int(((t != c) & (p == c)).sum())
        fn = int(((t == c) & (p != c)).sum())
        prec = tp / (tp + fp) if tp + fp else 0.0
        rec = tp / (tp + fn) if tp + fn else 0.0
        if tp + fp == 0:
            notes.append(f"class {c}: never predicted, precision term 0")
        if tp + fn == 0:
            notes.append(f"class {c}: no reference samples, recall term 0")
        rows.append({"class": c, "tp": tp, "fp": fp, "fn": fn, "precision": prec, "recall": rec})
    per = pd.DataFrame(rows)
    P, R = float(per["precision"].mean()), float(per["recall"].mean())
    f1 = 2 * P * R / (P + R) if P + R > 0 else 0.0
    n_unknown = int((~np.isin(t, classes)).sum())
    return OpenSetScores(P, R, f1, per, len(t), n_unknown, tuple(notes))


def recognition_record(res: OpenSetScores, classes: list[str]) -> dict[str, Any]:
    """The JSON record of an open-set result (``interbias scores cm-eval recognition``, Track 3)."""
    return {
        "precision": res.precision,
        "recall": res.recall,
        "f1": res.f1,
        "known": classes,
        "n_samples": res.n_samples,
        "n_unknown": res.n_unknown,
        "per_class": res.per_class.to_dict(orient="records"),
        "notes": list(res.notes),
    }
