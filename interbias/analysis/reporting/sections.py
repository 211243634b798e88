"""Report sections read from what a run wrote besides results.csv: calibration (with the Bayes
error-rate plot), the robustness profile, repeated operator draws, what the operators realised
(the operations record), fairness and spoofing at the deployment threshold, and the geometry audit.
Each adds nothing when its input is absent.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from interbias.analysis.groups.fairness import METRICS as FAIRNESS_METRICS
from interbias.analysis.groups.fairness import SPOOF_METRIC
from interbias.analysis.groups.fairness_cross_summary import crossed_lines
from interbias.analysis.reporting.document import Figure, Report
from interbias.analysis.reporting.registry import report_section
from interbias.analysis.robustness import profile_figure, profile_table
from interbias.analysis.suite import Analysis
from interbias.run.operations import kept_whole_summary, snr_summary
from interbias.run.rundir import FAIRNESS, FAIRNESS_GROUPS, CalibrationRecord, RunDir


def geometry_section(folder: Path, rep: Report) -> None:
    """The geometry audit (``interbias audit geometry``) when ``folder`` holds a geometry.csv."""
    from interbias.analysis.geometry import report_section

    section = report_section(folder)
    if section is None:
        return
    rep.heading("Geometry audit (TRIAD/ORCA)")
    notes = section.markdown.split("\n\n", 1)[1] if "\n\n" in section.markdown else ""
    rep.table(section.table)
    if notes.strip():
        rep.para(notes.strip().split("\n\n![")[0])
    if section.figure is not None:
        rep.figure(
            Figure("geometry", "Geometry audit", f"From {folder / 'geometry.csv'}.", section.figure.read_bytes())
        )


@report_section("deployment", 120)
def deployment_section(a: Analysis, rep: Report) -> None:
    """Fairness at the dev threshold (the fairness report's groups and comparisons) and the
    spoofing DSR, when the run wrote them."""
    run = RunDir(a.run.path)
    g, c = run.read_fairness()
    spoofing = run.read_spoofing()
    if g is not None:
        rep.heading("Fairness at the deployment threshold")
        rule = ", ".join(dict.fromkeys(g["threshold_rule"].astype(str))) if "threshold_rule" in g else "?"
        rep.para(
            f"One threshold per model ({rule}) chosen on the development speakers of the reference condition and "
            f"applied unchanged to the speaker-disjoint evaluation trials of every condition ({FAIRNESS_GROUPS})."
        )
        for line in crossed_lines(g, c):
            rep.para(line[0].upper() + line[1:] + ".")
        keep = ["model", "condition", "group_by", "group", "n", "speakers", "threshold", "far", "frr"]
        rep.table(g, [*keep, *FAIRNESS_METRICS, SPOOF_METRIC, "act_dcf", "calibration_loss"])  # the present ones
        if c is not None:
            if len(c) and "significant" in c:
                sig = c[c["significant"].astype(str).str.lower() == "true"]
                tests = set(c["test"].astype(str)) if "test" in c else {"trial-z"}
                how = "speaker-clustered tests" if tests == {"speaker"} else "two-proportion z-tests on trial counts"
                rep.para(
                    f"Family and test: the {len(c)} group comparisons of {FAIRNESS} (every model, condition, "
                    f"grouping and rate at the deployment threshold), {how}, Holm-adjusted over those "
                    f"{len(c)}; {len(sig)} significant. This family is separate from the findings (Findings above: "
                    "effects on the threshold-free metric over the experiment's family, speaker bootstrap), so the "
                    "two counts answer different questions and need not agree. The significant comparisons:"
                )
                cols = ["model", "condition", "group_by", "metric", "group_a", "group_b", "value_a", "value_b"]
                rep.table(sig, [*cols, "difference", "p_holm"])
    if spoofing is not None:
        rep.heading("Spoofing")
        rep.para("DSR = accepted spoof trials / (spoof trials × encoders), per cell, at each encoder's threshold.")
        rep.table(spoofing, ["cell", "n_models", "n_spoof", "n_spoof_accepted", "dsr"])


@report_section("calibration", 100)
def calibration_section(a: Analysis, rep: Report) -> None:
    """What one calibration costs per cell (results' calibration columns) and the Bayes
    error-rate plot; says why when the run has no calibration."""
    from interbias.analysis import calibration as cal

    rep.heading("Calibration")
    record = a.run.calibration_record
    if not cal.has_calibration(a.results):
        rep.para(f"Not measured: {not_measured_reason(record)}.")
        return
    fit_on, split = (record.fit_on, record.split) if record is not None else ("?", "dev")
    named = a.results["dcf_point"].astype(str).str.strip() if "dcf_point" in a.results.columns else pd.Series([])
    point = ", ".join(dict.fromkeys(v for v in named if v and v != "nan")) or "the run's first operating point"
    rep.para(
        f"One linear calibration per model (fit_on: {fit_on}, on the {split} "
        f"trials) applied to every cell; act_dcf at the Bayes threshold of {point}; calibration_loss = act_dcf − "
        "min_dcf; cllr/min_cllr in bits; threshold_drift = cell EER threshold − calibration trials' EER threshold "
        "(score units). The cells where calibration loss is largest, per model:"
    )
    step = cal.false_alarm_step(a.results, record.operating_points if record is not None else [])
    if step is not None and step > 0.05:
        rep.para(
            f"Resolution: with as few as {int(pd.to_numeric(a.results['n_nontarget']).min())} non-target trials per "
            f"cell, one false alarm adds {step:.3f} to act_dcf at {point}; differences below that are single "
            "trials. cllr − min_cllr (bits) is the calibration loss over all operating points."
        )
    rep.table(cal.worst_cells(a.results), cal.TABLE_COLUMNS)
    if not a.run.has_scores:
        rep.omitted.append("Bayes error-rate plot: needs per-trial scores (scores/ in the run directory)")
        return
    curves = cal.bayes_curves(a.run, a.results)
    if curves:
        shown, n_cells = bayes_subset(curves, a.results), max(len(v) for v in curves.values())
        which = (
            f" Per model the first cell and the {BAYES_CELLS - 1} cells of largest calibration loss ({n_cells} cells "
            "in all: every cell's numbers are in the table above)."
            if n_cells > BAYES_CELLS
            else ""
        )
        rep.draw(
            "bayes_error",
            "Bayes error-rate plot",
            "Normalised DCF (C_miss = C_fa = 1) against prior log-odds; solid: actual, with the run's calibration; "
            f"dotted: minimum (best threshold). The gap is the calibration loss at every operating point.{which}",
            lambda: cal.bayes_figure(shown),
        )


def not_measured_reason(record: CalibrationRecord | None) -> str:
    """Why a run has no calibration columns: the reason run.json records, else what is missing."""
    if record is not None and record.reason:
        return str(record.reason).rstrip(".")
    if record is not None and not record.measured:
        return "run.json records the calibration as not measured and gives no reason"
    return "results.csv has no calibration values and run.json no calibration record"


#: Cells per model in the Bayes error-rate plot (one colour each, no repeat).
BAYES_CELLS = 8


def bayes_subset(curves: dict[str, list], results: pd.DataFrame) -> dict[str, list]:
    """Per model the first cell and the cells of largest calibration loss, :data:`BAYES_CELLS` in all."""
    out = {}
    for model, items in curves.items():
        if len(items) <= BAYES_CELLS:
            out[model] = items
            continue
        rows = results[results["model"] == model]
        loss = dict(
            zip(
                rows["cell"],
                pd.to_numeric(rows.get("calibration_loss", pd.Series(0.0, index=rows.index)), errors="coerce").fillna(
                    0.0
                ),
                strict=True,
            )
        )
        rest = sorted(items[1:], key=lambda it: -float(loss.get(it[0], 0.0)))[: BAYES_CELLS - 1]
        keep = {items[0][0], *(it[0] for it in rest)}
        out[model] = [it for it in items if it[0] in keep]
    return out


@report_section("robustness", 10)
def robustness_section(a: Analysis, rep: Report) -> None:
    """Robustness profile of a severity-ladder factor (levels ``<family>_s<k>``), when there is one."""
    metric = a.options.metric
    table = profile_table(a.results, metric, a.cells)
    if table.empty:
        return
    rep.heading("Robustness profile")
    bars = " Bars: " + a.replicates.describe() + "." if a.replicates is not None else " No intervals (no bootstrap)."
    rep.draw(
        "robustness_profile",
        f"{metric} against severity per family",
        "One panel per degradation family, one line per model; severity 0 is the reference level, 1 the mildest "
        f"grade.{bars}",
        lambda: profile_figure(table, metric),
    )
    wide = table.drop_duplicates(["series", "level"]).pivot(index="level", columns="series", values="value")
    rep.table(wide.reset_index())


@report_section("draws", 20)
def draws_section(a: Analysis, rep: Report) -> None:
    """Cells scored over repeated operator draws: the draw-mean, the between-draw SD, and the
    speaker-bootstrap interval beside it (resampled over draw 0's scores)."""
    if "eer_draw_sd" not in a.results.columns:
        return
    metric = a.options.metric
    rows = a.results[pd.to_numeric(a.results["operator_draws"], errors="coerce") > 1]
    if not len(rows):
        return
    table = rows[["model", "cell", "operator_draws", metric, "eer_draw_sd", "min_dcf_draw_sd"]].copy()
    if a.cells is not None:
        ci = a.cells.set_index(["model", "cell"])[["lo", "hi"]]
        table = table.join(ci, on=["model", "cell"])
    table[["eer_draw_sd", "min_dcf_draw_sd"]] = table[["eer_draw_sd", "min_dcf_draw_sd"]].astype(float).round(4)
    rep.heading("Repeated operator draws")
    rep.para(
        f"Cells whose random operators were realised operator_draws times: {metric} is the mean over draws, "
        "eer_draw_sd / min_dcf_draw_sd the between-draw standard deviation (ddof 1); lo/hi, when present, is the "
        "speaker-bootstrap interval, resampled over draw 0's scores."
    )
    rep.table(table)


@report_section("operations", 30)
def operations_section(a: Analysis, rep: Report) -> None:
    """What the operators realised (the run's operations record): achieved SNR per requested
    level, crops kept whole."""
    ops = a.run.read_operations()
    if ops is None:
        return
    snr, kept = snr_summary(ops), kept_whole_summary(ops)
    if snr.empty and kept.empty:
        return
    rep.heading("What the operators realised")
    if len(snr):
        rep.para("Achieved SNR on active speech (dB) per noise kind and requested SNR, over the degraded utterances:")
        rep.table(snr)
    if len(kept):
        rep.para("Crops: utterances no longer than the crop, kept whole (their condition is the uncropped one):")
        rep.table(kept)
