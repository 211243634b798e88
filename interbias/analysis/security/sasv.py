"""Spoofing-aware verification score files (ASVspoof 5 track 2) and their a-DCF.

A file holds one verification score per trial and its class: the ASVspoof 5 layout
``ENROL TEST SCORE KEY`` (whitespace-separated; KEY target|nontarget|spoof), or a CSV with
columns ``score`` and ``key`` (or ``label``) holding those three classes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from interbias.metrics.sasv import ADCFCost, TDCFCost, a_dcf, min_t_dcf, t_eer
from interbias.utils.csvfile import read_frame
from interbias.utils.errors import MetricError
from interbias.utils.textfile import read_utf8

KEYS = ("target", "nontarget", "spoof")


def read_sasv_scores(path: Path) -> pd.DataFrame:
    """``score`` (float) and ``key`` (target|nontarget|spoof) of every trial in ``path``."""
    path = Path(path)
    text = read_utf8(path, what="scores file", error=MetricError)
    head = text.lstrip().split("\n", 1)[0]
    if "," in head:
        frame = read_frame(path, what="scores file", error=MetricError)
        key = "key" if "key" in frame.columns else "label"
        if "score" not in frame.columns or key not in frame.columns:
            raise MetricError(f"{path}: needs columns score and key; found: {', '.join(frame.columns)}")
        frame = frame.rename(columns={key: "key"})[["score", "key"]]
        first = 2
    else:
        rows = []
        for lineno, line in enumerate(text.splitlines(), 1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 4:
                raise MetricError(f"{path}:{lineno}: expected 'ENROL TEST SCORE KEY', got {line!r}")
            rows.append(parts[2:])
        frame = pd.DataFrame(rows, columns=["score", "key"])
        first = 1
    if not len(frame):
        raise MetricError(f"scores file {path} has no rows")
    keys = frame["key"].astype(str).str.strip().str.lower()
    bad = ~keys.isin(KEYS)
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise MetricError(f"{path}: row {i + first}: key {frame['key'].iloc[i]!r} is not one of {', '.join(KEYS)}")
    scores = pd.to_numeric(frame["score"], errors="coerce")
    if scores.isna().any():
        i = int(np.flatnonzero(scores.isna().to_numpy())[0])
        raise MetricError(f"{path}: row {i + first}: score {frame['score'].iloc[i]!r} is not a number")
    return pd.DataFrame({"score": scores.astype(np.float64), "key": keys})


def a_dcf_of_file(path: Path, cost: ADCFCost) -> dict[str, float | int | str]:
    """a-DCF of a score file (see :mod:`interbias.metrics.sasv`) with its threshold and counts."""
    frame = read_sasv_scores(path)
    parts = [frame.loc[frame["key"] == k, "score"].to_numpy() for k in KEYS]
    for k, p in zip(KEYS, parts, strict=True):
        if not len(p):
            raise MetricError(f"{path}: no {k} trials: the a-DCF needs target, nontarget and spoof trials")
    value, thr = a_dcf(*parts, cost)
    counts = {f"n_{k}": len(p) for k, p in zip(KEYS, parts, strict=True)}
    return {"file": str(path), "a_dcf": value, "threshold": thr, **counts}


#: How ``cm-eval tdcf`` places the ASV's operating point; the first is the default.
ASV_THRESHOLDS = ("interpolated", "package")


def asv_threshold_of(tar: np.ndarray, non: np.ndarray, rule: str) -> float:
    """The ASV's bona fide EER threshold: ``interpolated`` (the interpolated crossing,
    :func:`interbias.metrics.verification.eer_from_sweep`) or ``package`` (the ASVspoof 5
    package's sorted score, :func:`interbias.metrics.sasv.package_eer_threshold`)."""
    from interbias.metrics import verification as metrics
    from interbias.metrics.sasv import package_eer_threshold

    if rule == "package":
        return package_eer_threshold(tar, non)
    if rule != "interpolated":
        raise MetricError(f"--asv-threshold: {rule!r} is not one of {', '.join(ASV_THRESHOLDS)}")
    labels = np.r_[np.ones(len(tar)), np.zeros(len(non))]
    return float(metrics.eer_from_sweep(metrics.threshold_sweep(np.r_[tar, non], labels))[1])


def min_t_dcf_of_files(
    asv_path: Path, cm_path: Path, cost: TDCFCost, asv_threshold: str = "interpolated"
) -> dict[str, float | int | str]:
    """min t-DCF of a CM score file (bonafide|spoof) in tandem with the ASV system of an ASV
    score file (target|nontarget|spoof): the ASV's error rates (accept >= threshold) at its bona
    fide EER threshold placed by ``asv_threshold`` (:func:`asv_threshold_of`)."""
    from interbias.analysis.security.cm import read_cm_scores

    asv = read_sasv_scores(asv_path)
    tar, non, spf = (asv.loc[asv["key"] == k, "score"].to_numpy() for k in KEYS)
    if not (len(tar) and len(non) and len(spf)):
        raise MetricError(f"{asv_path}: the ASV file needs target, nontarget and spoof trials")
    thr = asv_threshold_of(tar, non, asv_threshold)
    rates = {"pfa_asv": float((non >= thr).mean()), "pmiss_asv": float((tar < thr).mean()),
             "pfa_spoof_asv": float((spf >= thr).mean())}  # fmt: skip
    cm_scores, cm_labels = read_cm_scores(cm_path)
    if cm_labels.all() or not cm_labels.any():
        raise MetricError(f"{cm_path}: the CM file needs bona fide and spoof trials")
    value, cm_thr = min_t_dcf(cm_scores[cm_labels == 1], cm_scores[cm_labels == 0], **rates, cost=cost)
    return {"asv": str(asv_path), "cm": str(cm_path), "min_t_dcf": value, "cm_threshold": cm_thr,
            "asv_threshold": thr, "asv_threshold_rule": asv_threshold, **rates}  # fmt: skip


def t_eer_of_files(asv_path: Path, cm_path: Path) -> dict[str, float | int | str]:
    """Concurrent t-EER (:func:`interbias.metrics.sasv.t_eer`) of a CM score file (bonafide|spoof)
    in tandem with the ASV system of an ASV score file (target|nontarget|spoof), with the
    operating point (thresholds, tandem rates) and the trial counts."""
    from interbias.analysis.security.cm import read_cm_scores

    asv = read_sasv_scores(asv_path)
    tar, non, spf = (asv.loc[asv["key"] == k, "score"].to_numpy() for k in KEYS)
    if not (len(tar) and len(non) and len(spf)):
        raise MetricError(f"{asv_path}: the ASV file needs target, nontarget and spoof trials")
    cm_scores, cm_labels = read_cm_scores(cm_path)
    if cm_labels.all() or not cm_labels.any():
        raise MetricError(f"{cm_path}: the CM file needs bona fide and spoof trials")
    res = t_eer(tar, non, spf, cm_scores[cm_labels == 1], cm_scores[cm_labels == 0])
    return {"asv": str(asv_path), "cm": str(cm_path), **vars(res), "n_target": len(tar), "n_nontarget": len(non),
            "n_spoof": len(spf), "n_bonafide_cm": int(cm_labels.sum()), "n_spoof_cm": int((cm_labels == 0).sum())}  # fmt: skip
