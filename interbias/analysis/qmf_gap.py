"""Does quality-aware calibration close a subgroup gap? The act_dcf gap between a population
factor's groups per acoustic level, under the run's linear and QMF calibrations, and its change.

For each model and acoustic level L, with groups R (the population factor's reference) and G
(each other level): gap_k = act_dcf_k(G, L) − act_dcf_k(R, L) for calibration k ∈ {linear, qmf},
both computed from the cells' eval trials with the calibrations recorded in calibration.json
(act_dcf at the run's first operating point). The change is |gap_qmf| − |gap_linear| (negative:
QMF narrows the gap). Its interval is the findings' rule (:mod:`interbias.analysis.effect_rule`):
the corrected-SE Student-t 95 % interval from speaker and non-target-pair resamples (the same
resample for both calibrations and both groups, the calibrations held fixed), Holm over the
table's rows, "too few speakers" (never resolved) when either group's trials hold fewer than 5
speakers. A |gap| is biased away from 0 when the gap is small: ``bias`` (replicate mean − the
estimate) states it; the interval is centred on the estimate.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from interbias.analysis.effect_rule import (
    FIELDS,
    RESOLVED,
    TOO_FEW,
    UNRESOLVED,
    Resamplers,
    corrected_interval,
    decide,
)
from interbias.analysis.reporting.registry import report_section
from interbias.analysis.stats.bootstrap import TrialDesign, check_replicates
from interbias.metrics.weighted_llr import SharedCalibration
from interbias.run.measured import measured
from interbias.run.rundir import RunDir
from interbias.utils.errors import AnalysisError

if TYPE_CHECKING:
    from interbias.analysis.reporting.document import Report
    from interbias.analysis.suite import Analysis
    from interbias.experiments.decision_spec import OperatingPoint
    from interbias.experiments.schema import Cell, Experiment

COLUMNS = ["model", "level", "group", "reference", "gap_linear", "gap_qmf", "change", *FIELDS]


def weighted_act_dcf(llr: np.ndarray, labels: np.ndarray, weights: np.ndarray, point: OperatingPoint) -> np.ndarray:
    """act_dcf of ``llr`` under each row of trial ``weights`` (B × N multiplicities):
    :meth:`interbias.metrics.weighted_llr.SharedCalibration.batch` with the identity map."""
    return SharedCalibration("llr", 1.0, 0.0, point.cost).batch("act_dcf", llr, labels, weights)


def _llrs(
    run: RunDir, record: dict[str, Any], model: str, cell: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(trial ids, labels, linear llr, qmf llr) of a cell's eval trials."""
    frame = run.read_scores(model, cell)
    frame = frame[measured(frame)]
    lin = record.get("slope"), record.get("offset")
    qmf = record.get("qmf") or {}
    if lin[0] is None or "weights" not in qmf:
        raise AnalysisError(f"{model}: the run has no shared linear and QMF calibration (calibration.json)")
    s = frame["score"].to_numpy(np.float64)
    x = frame[list(qmf["features"])].to_numpy(np.float64)
    return (
        frame["trial_id"].to_numpy(),
        frame["label"].to_numpy().astype(bool),
        float(lin[0]) * s + float(lin[1]),
        x @ np.asarray(qmf["weights"], dtype=np.float64) + float(qmf["offset"]),
    )


def gap_pairs(exp: Experiment) -> list[tuple[str, str, str, Cell, Cell]]:
    """(acoustic level, group, reference group, group's cell, reference's cell) for the first
    population factor and every combination of the acoustic factors' levels."""
    pops = exp.population_factors
    if not pops or not exp.acoustic_factors:
        return []
    pop = pops[0]
    by_key: dict[tuple[tuple[str, str], ...], dict[str, Cell]] = {}
    for cell in exp.cells():
        levels = dict(cell.levels)
        key = tuple((f.name, levels[f.name]) for f in exp.acoustic_factors)
        by_key.setdefault(key, {})[levels[pop.name]] = cell
    out = []
    for key, groups in by_key.items():
        if pop.reference not in groups:
            continue
        label = ",".join(level for _, level in key)
        for name, cell in groups.items():
            if name != pop.reference:
                out.append((label, name, pop.reference, cell, groups[pop.reference]))
    return out


def qmf_gaps(run_path: str | Any, *, n_boot: int = 500, seed: int = 0) -> pd.DataFrame:
    """The table of the module doc (:data:`COLUMNS`), one row per model × level × group; empty
    when the run has no QMF calibration or no population × acoustic design."""
    run = RunDir(run_path)
    exp = run.experiment(AnalysisError)
    calibration = run.read_calibration(AnalysisError)
    if exp is None or calibration is None or exp.scoring.calibration.kind != "qmf":
        return pd.DataFrame(columns=COLUMNS)
    check_replicates(n_boot)
    point = exp.operating_points[0]
    boot = Resamplers.of(TrialDesign.from_frame(run.read_trials().frame), n_boot, seed)
    rows = []
    for model, record in sorted((calibration.models or {}).items()):
        if "qmf" not in record or "error" in record.get("qmf", {}):
            continue
        for level, group, ref, cell, ref_cell in gap_pairs(exp):
            rows.append({"model": model, "level": level, "group": group, "reference": ref,
                         **_change(run, model, record, (cell.id, ref_cell.id), boot, point)})  # fmt: skip
    if not rows:
        return pd.DataFrame(columns=COLUMNS)
    return decide(pd.DataFrame(rows), "").reindex(columns=COLUMNS)


def _change(
    run: RunDir, model: str, record: dict[str, Any], cells: tuple[str, str], boot: Resamplers, point: Any
) -> dict:
    """Both gaps, the |gap| change and its interval (:mod:`interbias.analysis.effect_rule`) of one
    group's cell against the reference's: the same speaker and non-target resamples for both
    calibrations and both groups."""
    reps: dict[str, dict[str, np.ndarray]] = {"s": {}, "n": {}}
    est: dict[str, float] = {}
    at, speakers = [], []
    for side, cell in zip(("g", "r"), cells, strict=True):
        ids, lab, lin, qmf = _llrs(run, record, model, cell)
        rows = boot.design.rows(ids)
        at.append(rows)
        speakers.append(boot.speakers(rows))
        one = np.ones((1, len(ids)))
        for kind, llr in (("lin", lin), ("qmf", qmf)):
            est[side + kind] = float(weighted_act_dcf(llr, lab, one, point)[0])
            for unit, resampler in (("s", boot.speaker), ("n", boot.pairs)):
                reps[unit][side + kind] = weighted_act_dcf(llr, lab, resampler.weights(rows), point)
    gap_lin, gap_qmf = est["glin"] - est["rlin"], est["gqmf"] - est["rqmf"]

    def change(v: dict[str, np.ndarray]) -> np.ndarray:
        return np.abs(v["gqmf"] - v["rqmf"]) - np.abs(v["glin"] - v["rlin"])

    found = corrected_interval(abs(gap_qmf) - abs(gap_lin), change(reps["s"]), change(reps["n"]),
                               boot.correction(at), min(speakers))  # fmt: skip
    return {"gap_linear": gap_lin, "gap_qmf": gap_qmf, "change": abs(gap_qmf) - abs(gap_lin), **found}


def lowest_snr_levels(exp: Experiment) -> list[str]:
    """The acoustic levels whose noise is at the experiment's lowest SNR (E25: the 5 dB levels)."""
    snrs: dict[str, float] = {}
    for f in exp.acoustic_factors:
        for lv in f.levels:
            for op in getattr(getattr(lv, "test", None), "effective", ()):
                if op.name == "noise":
                    snrs[lv.name] = min(snrs.get(lv.name, np.inf), float(op.snr_db))
    if not snrs:
        return []
    low = min(snrs.values())
    return [name for name, v in snrs.items() if v == low]


def answer_lines(table: pd.DataFrame, levels: Sequence[str]) -> list[str]:
    """One sentence per model × level in ``levels``: the gap under both calibrations and the change."""
    out = []
    for r in table[table["level"].isin(levels)].itertuples(index=False):
        if r.gap_linear == r.gap_qmf == 0 and r.bias == 0:
            out.append(
                f"{r.model}, {r.level}: no act_dcf gap {r.group} − {r.reference} under either calibration "
                "(the resamples' mean change is 0 too): nothing for QMF to close."
            )
            continue
        verdict = {
            RESOLVED: ("narrows" if r.change < 0 else "widens") + " it (resolved after Holm)",
            UNRESOLVED: "leaves it unresolved",
            TOO_FEW: f"cannot be judged: too few speakers ({r.speakers}; 5 needed)",
        }.get(r.status, "cannot be judged: no interval (the corrected variance is not positive)")
        ci = f"95 % CI {r.lo:+.3f} to {r.hi:+.3f}" if np.isfinite(r.lo) else "no interval"
        bias = f"; bootstrap bias {r.bias:+.3f} (|gap| is biased away from 0)" if abs(r.bias) > 0.001 else ""
        out.append(
            f"{r.model}, {r.level}: act_dcf gap {r.group} − {r.reference} {r.gap_linear:+.3f} with linear, "
            f"{r.gap_qmf:+.3f} with QMF calibration; |gap| change {r.change:+.3f} ({ci}{bias}): QMF {verdict}."
        )
    return out


def qmf_section(run_path: str | Any, n_boot: int, rep: Any) -> None:
    """The report's section "Quality-aware calibration and the subgroup gap" (runs with
    ``scoring.calibration.kind: qmf``): the answer at the lowest SNR first, then the table."""
    exp = RunDir(run_path).experiment(AnalysisError)
    if exp is None or exp.scoring.calibration.kind != "qmf":
        return
    table = qmf_gaps(run_path, n_boot=max(n_boot, 200))
    rep.heading("Quality-aware calibration and the subgroup gap")
    if table.empty:
        rep.para("Not measured: no model has both a shared linear and a QMF calibration in calibration.json.")
        return
    lines = answer_lines(table, lowest_snr_levels(exp) or list(dict.fromkeys(table["level"])))
    rep.para(" ".join(lines))
    rep.para(
        f"act_dcf gap = group − reference at the run's first operating point, per acoustic level, with the linear "
        f"calibration and with QMF (measures: {', '.join(exp.scoring.calibration.measures)}); change = |gap_qmf| − "
        f"|gap_linear| (negative: QMF narrows the gap), the findings' 95 % corrected-SE t interval "
        f"({max(n_boot, 200)} speaker and non-target replicates), Holm over the table's rows; fewer than 5 "
        "speakers in a group: too few speakers, never resolved; bias = replicate mean − estimate."
    )
    rep.table(table, ["model", "level", "group", "reference", "gap_linear", "gap_qmf", "change", "lo", "hi",
                      "p_holm", "bias", "speakers", "status"])  # fmt: skip


@report_section("qmf", 110)
def qmf_report_section(a: Analysis, rep: Report) -> None:
    """:func:`qmf_section` of the analysed run (at least 200 bootstrap replicates)."""
    qmf_section(a.run.path, a.options.n_boot, rep)
