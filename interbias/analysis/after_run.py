"""The analyses a run writes beside its results (:mod:`interbias.run.rundir` names the files):
the spoofing table (DSR over encoders per cell) for spoofing experiments; text_pairs.csv
(:mod:`interbias.analysis.text_pairs`) when the experiment sets ``trials.text``; attributes.parquet and the fairness report when the run has dev trials; the attack tables and curves (:mod:`interbias.analysis.security.attacks`) when it has attacks.csv; sasv_fusion.csv (:mod:`interbias.analysis.security.sasv_run`) when its trials also have CM scores; for a
countermeasure run its results rows and tables (:mod:`interbias.analysis.security.cm_run`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from interbias.analysis.groups.fairness import fairness_for_run
from interbias.analysis.security.attacks import attack_analysis
from interbias.analysis.security.cm_run import cm_analyses
from interbias.analysis.security.sasv_run import write_sasv_fusion
from interbias.analysis.security.spoofing import dsr_by_cell
from interbias.analysis.text_pairs import text_pairs_table
from interbias.run.frame import Analyses, RunEnd
from interbias.run.rundir import ATTACKS, ATTRIBUTES, EXPERIMENT, TEXT_PAIRS
from interbias.utils import atomic
from interbias.utils.errors import AnalysisError, InterbiasError


def after_run(end: RunEnd) -> Analyses:
    """The after-run hook of every run kind (``RunOptions.after_run``, one signature:
    :data:`interbias.run.frame.AfterRun`): the analyses of :data:`ANALYSES` for the run's kind
    (none for a kind without); returns what run.json lists under ``analyses``."""
    analyses = ANALYSES.get(end.kind)
    return analyses(end) if analyses is not None else Analyses()


def run_analyses(end: RunEnd) -> Analyses:
    """The spoofing table (DSR over encoders per cell) for spoofing experiments; attributes.parquet
    and the fairness report (comparisons and per-group values) when dev trials exist. A
    failure here is reported like an errored cell; results.csv is already written."""
    run, results, trials, scored = end.run, end.results, end.trials, end.scored
    if results is None or trials is None or scored is None:
        raise AnalysisError(f"{run.path}: a verification run ends with its results, trials and corpus")
    out: dict[str, Any] = {}
    try:
        if end.spoofing and len(results):
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
        end.errored.append(f"analysis: {exc}")
    return Analyses(out)


#: The analyses of each run kind that has any (a tracks run writes its own report).
ANALYSES: dict[str, Callable[[RunEnd], Analyses]] = {"verification": run_analyses, "countermeasure": cm_analyses}
