"""``interbias scores cm-eval track1``: ASVspoof 5 Track 1 metrics of a CM score file
(:func:`interbias.metrics.spoof.track1_metrics`), pooled and broken down by a column.

A breakdown column that describes spoofs only (every bona fide row holds one value, e.g.
``attack`` = ``bonafide``, ``-`` or empty) pairs each other value's spoofs with every bona fide
score, as the ASVspoof 5 per-attack tables do; a column that describes both classes (``codec``)
splits both, so each value's bona fide and spoof scores are scored together. A group lacking a
class has its counts and empty metrics.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from interbias.metrics.spoof import Track1Cost, track1_metrics
from interbias.utils.errors import MetricError

METRICS = ("min_dcf", "act_dcf", "cllr", "eer")


def read_track1(path: Path, score_column: str | None = None) -> pd.DataFrame:
    """The score file (:func:`interbias.analysis.security.cm.read_cm_frame`), its ``score`` replaced by
    ``score_column`` when given (e.g. ``log_odds`` of ``cm score``: LLR-like, for C_llr and actDCF)."""
    from interbias.analysis.security.cm import read_cm_frame

    frame = read_cm_frame(path)
    if score_column is not None and score_column != "score":
        if score_column not in frame.columns:
            raise MetricError(
                f"--score-column {score_column!r}: {path} has no such column; found: {', '.join(map(str, frame.columns))}"
            )
        values = pd.to_numeric(frame[score_column], errors="coerce").to_numpy(dtype=np.float64)
        if not np.isfinite(values).all():
            raise MetricError(f"{path}: column {score_column!r} holds values that are not finite numbers")
        frame = frame.assign(score=values)
    return frame


def _row(group: str, value: str, bona: np.ndarray, spoof: np.ndarray, cost: Track1Cost) -> dict[str, Any]:
    row: dict[str, Any] = {"group": group, "value": value, "n_bonafide": len(bona), "n_spoof": len(spoof)}
    if len(bona) and len(spoof):
        m = track1_metrics(bona, spoof, cost)
        row.update({k: m[k] for k in METRICS}, note=m["eer_undefined"])
    else:
        row.update({k: float("nan") for k in METRICS}, note="no bona fide score" if not len(bona) else "no spoof score")
    return row


def undefined_notes(out: dict[str, Any]) -> list[str]:
    """One line per place of :func:`track1_of_file`'s result whose EER is undefined: the pooled
    scores, and per breakdown column how many of its rows (with the first reason)."""
    lines = []
    if out["pooled"]["eer_undefined"]:
        lines.append(f"EER undefined on the pooled scores: {out['pooled']['eer_undefined']}")
    for col, rows in out["tables"].items():
        notes = [r["note"] for r in rows if r["note"]]
        if notes:
            lines.append(f"EER undefined in {len(notes)} of {len(rows)} rows by {col} (first: {notes[0]})")
    return lines


def breakdown(frame: pd.DataFrame, by: str, cost: Track1Cost, *, where: str = "scores") -> list[dict[str, Any]]:
    """One row per value of column ``by`` (module docstring)."""
    if by not in frame.columns:
        raise MetricError(f"--by {by!r}: {where} has no such column; found: {', '.join(map(str, frame.columns))}")
    col = frame[by].fillna("").astype(str)
    is_bona = frame["label"].to_numpy() == 1
    scores = frame["score"].to_numpy()
    spoof_only = col[is_bona].nunique() <= 1
    bona_all = scores[is_bona]
    rows = []
    values = sorted(set(col[~is_bona])) if spoof_only else sorted(set(col))
    for value in values:
        here = (col == value).to_numpy()
        bona = bona_all if spoof_only else scores[here & is_bona]
        rows.append(_row(by, value, bona, scores[here & ~is_bona], cost))
    return rows


def track1_of_file(
    path: Path, by: list[str], cost: Track1Cost = Track1Cost(), score_column: str | None = None
) -> dict[str, Any]:
    """``pooled`` metrics (with thresholds) and a ``tables`` entry per ``by`` column."""
    frame = read_track1(path, score_column)
    tables = {col: breakdown(frame, col, cost, where=str(path)) for col in by}
    is_bona = frame["label"].to_numpy() == 1
    pooled = track1_metrics(frame["score"].to_numpy()[is_bona], frame["score"].to_numpy()[~is_bona], cost)
    return {"file": str(path), "cost": vars(cost), "pooled": pooled, "tables": tables}


def json_ready(value: Any) -> Any:
    """``value`` with every NaN float as None (JSON has no NaN)."""
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_ready(v) for v in value]
    if isinstance(value, float) and value != value:
        return None
    return value


def run_table(scores: pd.DataFrame, cost: Track1Cost = Track1Cost()) -> pd.DataFrame:
    """A CM run's Track 1 table (``cm_track1.csv``): per model × cell of the eval split, the
    pooled metrics (``group`` = ``all``) and one row per attack, on ``log_odds``; ``note`` says
    why a row's metrics are empty."""
    rows = []
    ev = scores[scores["split"] == "eval"]
    for (model, cell), g in ev.groupby(["model", "cell"], sort=False):
        frame = pd.DataFrame(
            {
                "score": g["log_odds"].to_numpy(dtype=np.float64),
                "label": (g["label"] == "bonafide").to_numpy().astype(int),
                "attack": g["attack"].fillna("").astype(str).to_numpy(),
            }
        )
        is_bona = frame["label"].to_numpy() == 1
        s = frame["score"].to_numpy()
        pooled = [_row("all", "", s[is_bona], s[~is_bona], cost)]
        for r in pooled + breakdown(frame, "attack", cost):
            rows.append({"model": model, "cell": cell, **r})
    return pd.DataFrame(rows, columns=["model", "cell", "group", "value", "n_bonafide", "n_spoof", *METRICS, "note"])
