"""``interbias metrics``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import numpy as np
import typer

from interbias.cli import app, guarded
from interbias.csvfile import read_frame
from interbias.errors import MetricError
from interbias.textfile import read_utf8

_LABELS = {"1": 1, "0": 0, "target": 1, "nontarget": 0, "true": 1, "false": 0}


def read_scores(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Scores and labels from a CSV (``score``, ``label``) or a whitespace file
    ``enrol test score target|nontarget``."""
    text = read_utf8(path, what="scores file", error=MetricError)
    head = text.lstrip().split("\n", 1)[0]
    if "," in head:
        frame = read_frame(path, what="scores file", error=MetricError)
        missing = [c for c in ("score", "label") if c not in frame.columns]
        if missing:
            raise MetricError(f"{path}: missing column(s) {', '.join(missing)}; found: {', '.join(frame.columns)}")
        raw_scores, raw_labels = frame["score"].tolist(), frame["label"].tolist()
        first_line = 2
    else:
        raw_scores, raw_labels = [], []
        for lineno, line in enumerate(text.splitlines(), 1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 4:
                raise MetricError(f"{path}:{lineno}: expected 'enrol test score target|nontarget', got {line!r}")
            raw_scores.append(parts[2])
            raw_labels.append(parts[3])
        first_line = 1
    labels = []
    for i, lab in enumerate(raw_labels):
        v = _LABELS.get(str(lab).strip().lower())
        if v is None:
            raise MetricError(f"{path}: line {i + first_line}: label {lab!r} is not 1/0 or target/nontarget")
        labels.append(v)
    try:
        scores = np.array([float(s) for s in raw_scores], dtype=np.float64)
    except ValueError as exc:
        raise MetricError(f"{path}: a score is not a number ({exc})") from None
    return scores, np.array(labels, dtype=np.int8)


@app.command(epilog="Example: interbias metrics scores.txt --json")
@guarded
def metrics(
    scores: Annotated[Path, typer.Argument(help="CSV with score,label or 'enrol test score target|nontarget'.")],
    p_target: Annotated[float, typer.Option(help="Target prior for minDCF.")] = 0.01,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """EER (interpolated and legacy), minDCF and AUC of a score file."""
    from interbias.metrics import summarize

    s, lab = read_scores(scores)
    summ = summarize(s, lab, p_target=p_target)
    out = summ.as_dict()
    if as_json:
        typer.echo(json.dumps(out))
    else:
        for k, v in out.items():
            typer.echo(f"{k:12s} {v:.6f}" if isinstance(v, float) else f"{k:12s} {v}")
