"""The analyses a run writes beside its results: spoofing.csv (DSR over encoders per cell) for
spoofing experiments; attributes.parquet and the fairness report when the run has dev trials."""

from __future__ import annotations

from typing import Any

import pandas as pd

from interbias.analysis.fairness import fairness_for_run
from interbias.analysis.spoofing import dsr_by_cell
from interbias.corpora.manifest import Manifest
from interbias.run.rundir import ATTRIBUTES, RunDir
from interbias.trials.sampler import TrialList
from interbias.utils import atomic
from interbias.utils.errors import InterbiasError


def run_analyses(
    run: RunDir, results: pd.DataFrame, trials: TrialList, scored: Manifest, spoofing: bool, errored: list[str]
) -> dict[str, Any]:
    """spoofing.csv (DSR over encoders per cell) for spoofing experiments; attributes.parquet
    and the fairness report (fairness.csv, fairness_groups.csv) when dev trials exist. A
    failure here is reported like an errored cell; results.csv is already written."""
    out: dict[str, Any] = {}
    try:
        if spoofing and len(results):
            atomic.write_csv(run.file("spoofing.csv"), dsr_by_cell(results))
            out["spoofing"] = "spoofing.csv"
        if "split" in trials.frame.columns:
            by_id = scored.by_id()
            ids = sorted(trials.utterance_ids())
            table = pd.DataFrame([{k: v for k, v in by_id[u].to_dict().items() if k != "path"} for u in ids])
            atomic.write_parquet(run.file(ATTRIBUTES), table.astype(object).where(table.notna(), None))
            report = fairness_for_run(run.path) if len(results) else None
            if report is not None:
                out["fairness"] = [p.name for p in report.write(run.path)]
    except InterbiasError as exc:
        errored.append(f"analysis: {exc}")
    return out
