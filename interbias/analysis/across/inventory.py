"""An inventory of a folder of runs (the seed paper's Tables 5/6): one row per run with its
kind (speaker verification, countermeasure, tracks: a CM's EER is not a speaker encoder's),
experiment, corpus, encoders, cells (done, and of how many when cells errored), scored rows
(results rows), trials (the trial list's length) and, per pooled metric, the mean ± SD
(ddof 1) over the run's results rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from interbias.analysis import read_results
from interbias.analysis.across.runs import expand, run_kind
from interbias.run.frame import errored_split
from interbias.run.rundir import EXPERIMENT, RUN_JSON, TRIALS_META, RunDir
from interbias.utils.errors import AnalysisError


def pooled_metrics() -> tuple[str, ...]:
    """The metrics the inventory pools, where present: the registry's summary metrics (the seed
    paper's Tables 5/6 and FRR at FAR 1 %, :func:`interbias.metrics.registry.summary_metrics`)."""
    from interbias.metrics.registry import summary_metrics

    return summary_metrics()


def _corpus(resolved: dict, results: pd.DataFrame) -> str:
    corpus = resolved.get("corpus")
    if isinstance(corpus, dict):
        corpus = corpus.get("name") or corpus.get("manifest")
    if not corpus and "dataset" in results.columns:
        corpus = ", ".join(dict.fromkeys(v for v in results["dataset"].astype(str) if v))
    return str(corpus or "")


def run_row(path: Path) -> dict:
    """One run's inventory row."""
    run = RunDir(path)
    results = read_results(path)
    resolved = run.read_json(EXPERIMENT, AnalysisError) or {}
    meta = run.read_json(TRIALS_META, AnalysisError) or {}
    models = list(dict.fromkeys(results["model"].astype(str)))
    done = set(results["cell"].astype(str)) if "cell" in results.columns else set()
    errored, _ = errored_split((run.read_json(RUN_JSON, AnalysisError) or {}).get("errored_cells", []))
    failed = {str(e)[5:].split(" / ", 1)[0] for e in errored if str(e).startswith("cell ")} - done
    row = {
        "run": path.name,
        "kind": run_kind(path),
        "experiment": ", ".join(dict.fromkeys(results["experiment"].astype(str))),
        "corpus": _corpus(resolved, results),
        "encoders": ", ".join(models),
        "n_encoders": len(models),
        "n_cells": len(done),
        "n_cells_errored": len(failed),
        "n_scored_rows": len(results),
        "n_trials": int(meta.get("n_trials", meta.get("n", 0)) or 0),
    }
    for metric in pooled_metrics():
        values = (
            pd.to_numeric(results[metric], errors="coerce") if metric in results.columns else pd.Series([], dtype=float)
        )
        values = values[np.isfinite(values)]
        row[metric] = float(values.mean()) if len(values) else np.nan
        row[f"{metric}_sd"] = float(values.std(ddof=1)) if len(values) > 1 else np.nan
    return row


def inventory(paths: list[Path]) -> pd.DataFrame:
    """One row per run found under ``paths`` (:func:`interbias.analysis.across.runs.expand`)."""
    return pd.DataFrame([run_row(p) for p in expand(paths)])


def display(frame: pd.DataFrame) -> pd.DataFrame:
    """The inventory as printed: counts under short names, each pooled metric as ``mean ± SD``."""
    from interbias.analysis.reporting.numbers import format_value

    out = frame[["run", "kind", "experiment", "corpus"]].copy()
    for col in ("n_encoders", "n_cells", "n_scored_rows", "n_trials"):
        out[col.removeprefix("n_").replace("scored_rows", "rows")] = frame[col]
    total = frame["n_cells"] + frame["n_cells_errored"]
    out["cells"] = [str(d) if d == t else f"{d} of {t}" for d, t in zip(frame["n_cells"], total, strict=True)]
    for metric in pooled_metrics():
        if frame[metric].notna().any():
            out[f"{metric} ± sd"] = [
                f"{format_value(m, 'v')} ± {format_value(s, 'v')}".rstrip(" ±")
                for m, s in zip(frame[metric], frame[f"{metric}_sd"], strict=True)
            ]
    return out
