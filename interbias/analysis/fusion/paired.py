"""The fused model against each component with intervals: per cell and macro (mean over cells),
the EER change fused − component (negative: fusion better) on the same eval trials.

Each change is a paired difference: both models' EERs are read on the trials the fused model
measured (eval, no model of the fusion dropped them; with no dropped trial these are the trials of
both models' results rows) and every replicate weights both alike. Its interval is the rule of
the effects outside findings.csv (:mod:`interbias.analysis.effect_rule`, as the CM's a-DCF change
and the QMF gap change): the corrected-SE Student-t 95 % interval from speaker and
non-target-pair replicates, "too few speakers" (never resolved) under 5 speakers, the bias stated.
The macro change is the mean of the cells' changes, its replicates the mean of theirs (one
resample for every cell and both models). Holm runs over two families: the macro rows (one per
component) and the per-cell rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from interbias.analysis.effect_rule import FIELDS, Resamplers, corrected_interval, decide
from interbias.analysis.scored_run import ScoredRun
from interbias.analysis.stats.bootstrap import check_replicates
from interbias.metrics import verification
from interbias.metrics.weighted import metric_batch, sort_cell
from interbias.run.measured import measured
from interbias.run.rundir import RunDir

#: fusion_comparison.csv's columns: ``fused`` the fused model's label; ``cell`` is :data:`MACRO`
#: on a component's macro row.
COLUMNS = ["fused", "component", "cell", "eer", "fused_eer", "change", *FIELDS]
#: The ``cell`` of the macro rows.
MACRO = "macro"
#: Replicates when not told (as ``analyze``) and the seed of the resamples.
N_BOOT, SEED = 1000, 0


@dataclass(frozen=True)
class CellEers:
    """One model's EER on a cell's compared trials: the estimate and its speaker and
    non-target-pair replicates."""

    eer: float
    reps_s: np.ndarray
    reps_n: np.ndarray


@dataclass(frozen=True)
class Trials:
    """A cell's compared trials: their positions in the design and each model's frame rows."""

    rows: np.ndarray
    keep: np.ndarray
    labels: np.ndarray


def _eers(scores: np.ndarray, labels: np.ndarray, rows: np.ndarray, boot: Resamplers) -> CellEers:
    cell = sort_cell(scores, labels)
    return CellEers(
        verification.eer(scores, labels),
        metric_batch("eer", cell, boot.speaker.weights(rows)),
        metric_batch("eer", cell, boot.pairs.weights(rows)),
    )


def _row(component: str, cell: str, own: float, fused: float, found: dict) -> dict:
    return {
        "fused": "",
        "component": component,
        "cell": cell,
        "eer": own,
        "fused_eer": fused,
        "change": fused - own,
        **found,
    }


def paired_comparison(
    run: RunDir, label: str, models: Sequence[str], *, n_boot: int = N_BOOT, seed: int = SEED
) -> pd.DataFrame:
    """:data:`COLUMNS` per component: its macro row, then one row per cell the fused model holds
    (the module doc); ``run``: the fused copy."""
    results = run.read_results(keep_default_na=False, na_values=[""])
    cells = list(dict.fromkeys(results.loc[results["model"] == label, "cell"].astype(str)))
    if not cells:
        return pd.DataFrame(columns=COLUMNS)
    design = ScoredRun.open(run.path).design()  # the measured trials, as the analysis resamples them
    boot = Resamplers.of(design, check_replicates(n_boot, "corrected"), seed)
    trials: dict[str, Trials] = {}
    fused: dict[str, CellEers] = {}
    for cell in cells:
        frame = run.read_scores(label, cell)
        keep = measured(frame)
        labels = frame["label"].to_numpy()[keep].astype(bool)
        trials[cell] = Trials(boot.design.rows(frame["trial_id"].to_numpy()[keep]), keep, labels)
        fused[cell] = _eers(frame["score"].to_numpy(np.float64)[keep], labels, trials[cell].rows, boot)
    macro, per_cell = [], []
    for m in models:
        own = {}
        for cell in cells:
            t = trials[cell]
            scores = run.read_scores(m, cell)["score"].to_numpy(np.float64)[t.keep]
            own[cell] = _eers(scores, t.labels, t.rows, boot)
            per_cell.append(_row(m, cell, own[cell].eer, fused[cell].eer, _interval(fused[cell], own[cell], t, boot)))
        macro.append(_macro(m, cells, own, fused, trials, boot))
    parts = [decide(pd.DataFrame(rows, columns=COLUMNS), "") for rows in (macro, per_cell) if rows]
    table = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=COLUMNS)
    order = {m: i for i, m in enumerate(models)}
    table = table.assign(_o=table["component"].map(order), _c=(table["cell"] != MACRO).astype(int))
    table = table.sort_values(["_o", "_c"], kind="stable").drop(columns=["_o", "_c"]).reindex(columns=COLUMNS)
    return table.assign(fused=label).reset_index(drop=True)


def _interval(fused: CellEers, own: CellEers, t: Trials, boot: Resamplers) -> dict:
    """The change's interval on one cell (:func:`~interbias.analysis.effect_rule.corrected_interval`)."""
    return corrected_interval(
        fused.eer - own.eer,
        fused.reps_s - own.reps_s,
        fused.reps_n - own.reps_n,
        boot.correction([t.rows]),
        boot.speakers(t.rows),
    )


def _macro(
    model: str,
    cells: Sequence[str],
    own: dict[str, CellEers],
    fused: dict[str, CellEers],
    trials: dict[str, Trials],
    boot: Resamplers,
) -> dict:
    """The macro row of one component: means over the cells of the EERs, the change and its replicates."""
    own_eer = float(np.mean([own[c].eer for c in cells]))
    fused_eer = float(np.mean([fused[c].eer for c in cells]))
    reps_s = np.mean([fused[c].reps_s - own[c].reps_s for c in cells], axis=0)
    reps_n = np.mean([fused[c].reps_n - own[c].reps_n for c in cells], axis=0)
    rows = [trials[c].rows for c in cells]
    found = corrected_interval(
        fused_eer - own_eer, reps_s, reps_n, boot.correction(rows), boot.speakers(np.unique(np.concatenate(rows)))
    )
    return _row(model, MACRO, own_eer, fused_eer, found)
