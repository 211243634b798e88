"""What ``interbias scores cm-eval`` computes from score and label files (the CLI parses and prints):
ADD 2023's per-round EER and weighted EER, DSR over detectors, open-set recognition; the
metrics themselves are in :mod:`interbias.analysis.security.cm` and :mod:`interbias.analysis.security.sasv`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from interbias.analysis.security.cm import (
    ADD_ROUND_WEIGHTS,
    OpenSetScores,
    dsr_at_eer,
    open_set_f1,
    read_class_labels,
    read_cm_frame,
    read_cm_scores,
    weighted_eer,
)
from interbias.cm.openset import UNKNOWN
from interbias.metrics.verification import eer_from_sweep, threshold_sweep
from interbias.utils.errors import MetricError
from interbias.utils.keyvalue import comma_list, parse_key_values
from interbias.utils.numbers import require


def parse_floats(text: str, what: str) -> list[float]:
    """A comma-separated list of numbers (``what`` names the option in the error)."""
    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise MetricError(f"{what}: {text!r} is not a comma-separated list of numbers") from None
    return [require(f"{what}: each value", v, low=0.0, error=MetricError) for v in values]


def round_eers(paths: Sequence[Path], weights: str | None = None) -> dict[str, Any]:
    """``rounds``: per score file its EER (higher score = bona fide; interpolated crossing),
    threshold and class counts, and ``eer_undefined`` (:func:`interbias.metrics.spoof.eer_undefined`:
    why a round has no EER, e.g. a constant score; its ``eer`` and ``threshold`` are then NaN, or
    "" when it has one); with several rounds or ``weights`` (comma-separated; default ADD 2023's
    0.4,0.6 for two rounds) also ``weights`` and ``weer`` = Σ w_r·EER_r / Σ w_r (NaN when a
    round has no EER)."""
    from interbias.metrics.spoof import eer_undefined

    rounds = []
    for path in paths:
        s, lab = read_cm_scores(path)
        for label, name in ((1, "bona fide"), (0, "spoof")):
            if not (lab == label).any():
                raise MetricError(
                    f"{path}: no {name} trials ({len(lab)} trial(s), all of one class): the EER is undefined"
                )
        undefined = eer_undefined(s[lab == 1], s[lab == 0])
        e, thr = (math.nan, math.nan) if undefined else eer_from_sweep(threshold_sweep(s, lab))
        rounds.append(
            {
                "file": str(path),
                "eer": e,
                "threshold": thr,
                "eer_undefined": undefined or "",
                "n_bonafide": int(lab.sum()),
                "n_spoof": int((lab == 0).sum()),
            }
        )
    out: dict[str, Any] = {"rounds": rounds}
    if len(rounds) > 1 or weights:
        if weights:
            w = parse_floats(weights, "--weights")
        elif len(rounds) == 2:
            w = list(ADD_ROUND_WEIGHTS)
        else:
            raise MetricError(f"{len(rounds)} rounds: give --weights (ADD 2023 defines 0.4,0.6 for two rounds)")
        out["weights"] = w
        weer = weighted_eer([0.0 if r["eer_undefined"] else r["eer"] for r in rounds], w)  # checks the weights
        out["weer"] = math.nan if any(r["eer_undefined"] for r in rounds) else weer
    return out


def dsr_of_files(paths: Sequence[Path], attack: str | None = None) -> dict[str, Any]:
    """DSR (:func:`interbias.analysis.security.cm.dsr_at_eer`) of one score file per detector; ``attack``
    COLUMN=VALUE selects the attack samples (default: every spoof sample)."""
    sets, masks = [], []
    for path in paths:
        frame = read_cm_frame(path)
        if attack:
            ((col, value),) = parse_key_values(
                [attack], option="--attack", error=MetricError, key_name="COLUMN"
            ).items()
            if col not in frame.columns:
                raise MetricError(
                    f"--attack {attack!r}: expected COLUMN=VALUE with a column of {path}; found: {', '.join(frame.columns)}"
                )
            masks.append((frame[col].astype(str) == value).to_numpy() & (frame["label"] == 0).to_numpy())
        sets.append((frame["score"].to_numpy(), frame["label"].to_numpy()))
    return dsr_at_eer(sets, masks if attack else None)


def recognition_of_files(
    reference: Path, prediction: Path, known: str | None = None, unknown: str | None = None
) -> tuple[OpenSetScores, list[str]]:
    """Open-set recognition scores of a prediction file against a reference file (the same
    utterances, else an error naming the first differences) and the known classes: ``known``
    (comma-separated) or every reference class but ``unknown`` (exactly one of the two)."""
    ref = read_class_labels(reference)
    pred = read_class_labels(prediction)
    missing, extra = sorted(set(ref) - set(pred)), sorted(set(pred) - set(ref))
    if missing or extra:
        raise MetricError(
            f"recognition: {len(missing)} reference utterance(s) without prediction (first: {', '.join(missing[:5]) or '-'}); "
            f"{len(extra)} prediction(s) not in the reference (first: {', '.join(extra[:5]) or '-'})"
        )
    if (known is None) == (unknown is None):
        raise MetricError("give exactly one of --known or --unknown")
    labels = sorted(set(ref.values()))
    if known is not None:
        classes = comma_list(known)
        absent = [c for c in classes if c not in labels and c not in pred.values()]
        if absent:
            raise MetricError(
                f"--known: class {absent[0]!r} is in neither file; the reference's labels are {', '.join(labels)}"
            )
        unk = set(labels) - set(classes)
    else:
        unk = set(comma_list(unknown or ""))
        stray = sorted(unk - set(labels) - set(pred.values()))
        if stray:
            raise MetricError(
                f"--unknown: {stray[0]!r} is in neither file; the reference's labels are {', '.join(labels)}"
            )
        classes = sorted(set(labels) - unk)
        if not classes:
            raise MetricError(
                f"--unknown {unknown} leaves no known class: the reference's labels are {', '.join(labels)}"
            )
    check_predicted_labels(pred, classes, unk | ({UNKNOWN} if known is not None else set()), prediction)
    ids = sorted(ref)
    res = open_set_f1([ref[i] for i in ids], [pred[i] for i in ids], classes)
    if known is not None and len(unk) > 1:  # several labels pooled as the unknown class: name them
        counts = ", ".join(f"{u} ({sum(v == u for v in ref.values())})" for u in sorted(unk))
        res = replace(res, notes=(*res.notes, f"reference labels counted as the unknown class: {counts}"))
    return res, classes


def check_predicted_labels(pred: dict[str, str], classes: list[str], unknown: set[str], path: Path) -> None:
    """Refuse a predicted label that is neither a known class nor an unknown-class label (a typo
    would count as a wrong answer with no word). With ``--known``, the unknown-class labels are
    the reference's other labels and ``unknown`` (what the project's recognisers predict)."""
    valid = set(classes) | unknown
    bad = sorted({v for v in pred.values() if v not in valid})
    if bad:
        n = sum(v in bad for v in pred.values())
        raise MetricError(
            f"{path}: {n} prediction(s) with a label that is neither a known class nor the unknown class "
            f"(first: {bad[0]!r}); valid: {', '.join(sorted(valid))}"
        )


def read_dsr(value: str, option: str) -> float:
    """A DSR given on the command line: a number in [0, 1], or a JSON file with a ``dsr`` entry
    (``cm-eval dsr --json`` output)."""
    import json

    try:
        dsr = float(value)
    except ValueError:
        path = Path(value)
        if not path.is_file():
            raise MetricError(f"{option} {value!r}: neither a number nor a file") from None
        try:
            dsr = float(json.loads(path.read_text())["dsr"])
        except (ValueError, KeyError, TypeError):
            raise MetricError(f"{option} {path}: not the JSON of `cm-eval dsr --json` (no numeric 'dsr')") from None
    if not (math.isfinite(dsr) and 0.0 <= dsr <= 1.0):
        raise MetricError(f"{option}: a DSR is a rate in [0, 1], got {dsr}")
    return dsr
