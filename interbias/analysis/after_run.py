"""The analyses a run writes beside its results (:mod:`interbias.run.rundir` names the files):
the spoofing table (DSR over encoders per cell) for spoofing experiments; text_pairs.csv
(:mod:`interbias.analysis.text_pairs`) when the experiment sets ``trials.text``; attributes.parquet and the fairness report when the run has dev trials; the attack tables and curves (:mod:`interbias.analysis.security.attacks`) when it has attacks.csv; sasv_fusion.csv (:mod:`interbias.analysis.security.sasv_run`) when its trials also have CM scores."""

from __future__ import annotations

from typing import Any

import pandas as pd

from interbias.analysis.fairness import fairness_for_run
from interbias.analysis.security.attacks import attack_analysis
from interbias.analysis.security.sasv_run import write_sasv_fusion
from interbias.analysis.security.spoofing import dsr_by_cell
from interbias.analysis.text_pairs import text_pairs_table
from interbias.corpora.manifest import Manifest
from interbias.run.rundir import ATTACKS, ATTRIBUTES, EXPERIMENT, TEXT_PAIRS, RunDir
from interbias.trials.sampler import TrialList
from interbias.utils import atomic
from interbias.utils.errors import InterbiasError


def after_run(*args: Any, kind: str = "verification", **kwargs: Any) -> dict[str, Any]:
    """The after-run hook of every run kind (``RunOptions.after_run``): :func:`run_analyses` for a
    verification run, :func:`interbias.analysis.security.cm_run.cm_analyses` for a countermeasure run
    (``kind="countermeasure"``); returns what run.json lists under ``analyses``."""
    if kind == "countermeasure":
        from interbias.analysis.security.cm_run import cm_analyses

        return cm_analyses(*args, **kwargs)
    return run_analyses(*args, **kwargs)


def run_analyses(
    run: RunDir, results: pd.DataFrame, trials: TrialList, scored: Manifest, spoofing: bool, errored: list[str]
) -> dict[str, Any]:
    """The spoofing table (DSR over encoders per cell) for spoofing experiments; attributes.parquet
    and the fairness report (comparisons and per-group values) when dev trials exist. A
    failure here is reported like an errored cell; results.csv is already written."""
    out: dict[str, Any] = {}
    try:
        if spoofing and len(results):
            out["spoofing"] = run.write_spoofing(dsr_by_cell(results))
        if "text_pairs" in trials.info and len(results):
            atomic.write_csv(run.file(TEXT_PAIRS), text_pairs_table(run, results, trials, scored))
            out["text_pairs"] = TEXT_PAIRS
        if "split" in trials.frame.columns:
            by_id = scored.by_id()
            ids = sorted(trials.utterance_ids())
            table = pd.DataFrame([{k: v for k, v in by_id[u].to_dict().items() if k != "path"} for u in ids])
            atomic.write_parquet(run.file(ATTRIBUTES), table.astype(object).where(table.notna(), None))
            report = fairness_for_run(run.path) if len(results) else None
            if report is not None:
                out["fairness"] = [p.name for p in report.write(run.path)]
        if run.file(ATTACKS).is_file():
            out["attacks"] = attack_analysis(run.path, run.read_json(EXPERIMENT) or {})
        if len(results) and (fused := write_sasv_fusion(run)) is not None:
            out["sasv_fusion"] = fused
    except InterbiasError as exc:
        errored.append(f"analysis: {exc}")
    return out
