"""A readable report of one run: ``report.md`` (figures beside it) and a self-contained
``report.html`` (figures embedded as base64 PNG, no external files, scripts or fonts).

Sections: what was run and how uncertainty was estimated; findings (the family and its
multiplicity adjustment, resolved main effects as sentences, then interactions and gaps, the
unresolved ones with their minimum detectable effect) and the cells as a
conditions × models pivot; provenance (encoders with checkpoint hashes, trial-list hash and
counts, failures, overlap warnings); figures (DET curves per cell, metric by condition per
model, IE heatmap per model, gap against SNR per noise kind); contrasts and their diagnostics;
subgroup gaps; additivity validation; macro averages; the long per-cell list. A figure that cannot be drawn is listed with the reason, never left out silently.
SNR and noise kind come from the operator parameters in ``experiment.resolved.json``.
"""

from __future__ import annotations

import base64
import html
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from interbias import atomic, metrics
from interbias.analysis import plots
from interbias.analysis.contrasts import SLOTS, prepare
from interbias.analysis.fairness import METRICS as FAIRNESS_METRICS
from interbias.analysis.fairness import SPOOF_METRIC
from interbias.analysis.headline import cell_pivot, headline, sentence
from interbias.analysis.operating_points import too_small_line
from interbias.analysis.robustness import profile_figure, profile_table
from interbias.analysis.suite import Analysis, metric_units, shared_calibration_note
from interbias.errors import AnalysisError
from interbias.experiments import AcousticLevel, Experiment
from interbias.operations import kept_whole_summary, snr_summary
from interbias.paths import slug

_DIGITS = 4


@dataclass
class Figure:
    name: str
    title: str
    caption: str
    png: bytes
    #: The same figure as vector files by format (pdf, svg), saved beside the PNG.
    vectors: dict[str, bytes] = field(default_factory=dict)


@dataclass
class Report:
    title: str
    blocks: list[tuple[str, Any]] = field(default_factory=list)  # (kind, payload)
    figures: list[Figure] = field(default_factory=list)
    omitted: list[str] = field(default_factory=list)

    def heading(self, text: str) -> None:
        self.blocks.append(("h2", text))

    def para(self, text: str) -> None:
        self.blocks.append(("p", text))

    def table(self, frame: pd.DataFrame, columns: list[str] | None = None) -> None:
        cols = [c for c in (columns or list(frame.columns)) if c in frame.columns]
        self.blocks.append(("table", frame[cols].reset_index(drop=True)))

    def figure(self, fig: Figure) -> None:
        self.figures.append(fig)
        self.blocks.append(("figure", fig))


def _fmt(v: Any) -> str:
    if isinstance(v, (float, np.floating)):
        return "" if math.isnan(v) else f"{v:.{_DIGITS}f}"
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    return str(v)


def snr_levels(exp: Experiment | None, factor: str) -> dict[str, tuple[str, float]]:
    """level -> (noise kind, SNR dB) for levels of ``factor`` whose chains (enrolment and test)
    hold one distinct operator setting with an ``snr_db`` parameter (kind: its ``kind``
    parameter, else the operator name)."""
    out: dict[str, tuple[str, float]] = {}
    for f in exp.acoustic_factors if exp is not None else []:
        if f.name != factor:
            continue
        for level in f.levels:
            assert isinstance(level, AcousticLevel)
            ops = [op for ch in (level.enrol, level.test) for op in ch.ops if hasattr(op, "snr_db")]
            settings = {(str(getattr(op, "kind", op.name)), float(op.snr_db)) for op in ops}  # type: ignore[attr-defined]
            if len(settings) == 1:
                out[level.name] = next(iter(settings))
    return out


def _fig(name: str, title: str, caption: str, fig: Any) -> Figure:
    return Figure(name, title, caption, plots.png(fig), plots.vectors(fig))


def _rates(value: Any) -> str:
    """``8000;11025`` (or 8000.0 as a CSV reader may give it) as ``8000, 11025``."""
    parts = [p for p in str(value).split(";") if p.strip() not in ("", "nan")]
    try:
        return ", ".join(str(int(float(p))) for p in parts) or "?"
    except ValueError:
        return str(value)


def upsampled_note(frame: pd.DataFrame) -> list[str]:
    """One line naming the cells whose audio was upsampled (their top band is the resampler's stop band)."""
    if "n_upsampled" not in frame.columns:
        return []
    n_up = pd.to_numeric(frame["n_upsampled"], errors="coerce").fillna(0).astype(int)
    rows = frame[n_up > 0]
    if not len(rows):
        return ["Upsampled audio: none."]
    cells = "; ".join(
        f"{r.model} / {r.cell}: {int(n)} from {_rates(r.upsampled_from)} Hz"
        for r, n in zip(rows.itertuples(index=False), n_up[n_up > 0], strict=True)
    )
    return [f"Upsampled audio (above the source's Nyquist rate only the resampler's stop band is left): {cells}."]


def _provenance(a: Analysis, rep: Report) -> None:
    rep.heading("Provenance")
    rj = a.run.run_json or {}
    frame = prepare(a.results)
    if rj.get("encoders"):
        enc = pd.DataFrame(
            [
                {
                    "encoder": e.get("label"),
                    "family": e.get("family"),
                    "checkpoint_sha256": e.get("checkpoint_sha256"),
                    "fingerprint": e.get("fingerprint"),
                    "source": e.get("source"),
                }
                for e in rj["encoders"]
            ]
        )
    else:
        cols = [c for c in ("model", "family", "checkpoint_sha256", "encoder_source") if c in frame.columns]
        enc = frame[cols].drop_duplicates().rename(columns={"model": "encoder"})
    rep.table(enc)
    trials = rj.get("trials", {})
    sha = trials.get("sha256") or ", ".join(sorted(set(frame.get("trials_sha256", pd.Series(dtype=str)))))
    lines = [
        f"Run {rj.get('run_id', ', '.join(sorted(set(frame.get('run_id', pd.Series(dtype=str))))) or 'unknown')}, "
        f"revision {rj.get('revision', 'unknown')}.",
        f"Trial list sha256 {sha or 'unknown'}; {trials.get('n', 'unknown')} trials.",
    ]
    strata = trials.get("strata") or {}
    if strata:
        lines.append(
            "Strata: "
            + "; ".join(
                f"{k}: {v.get('n_speakers')} speakers, {v.get('n_target')} target / {v.get('n_nontarget')} non-target trials"
                for k, v in strata.items()
            )
            + "."
        )
    errored = rj.get("errored_cells", [])
    if "n_failures" in rj:
        lines.append(
            f"Failures: {rj['n_failures']} failed utterance(s) over all cells; {len(errored)} errored cell(s)."
        )
    elif "n_failed" in frame.columns:
        n_fail = int(pd.to_numeric(frame["n_failed"], errors="coerce").fillna(0).sum())
        lines.append(f"Failures: {n_fail} failed utterance(s) summed over results rows (no run.json).")
    else:
        lines.append("Failures: unknown (no run.json and no n_failed column).")
    if "n_dropped_trials" in frame.columns:
        dropped = pd.to_numeric(frame["n_dropped_trials"], errors="coerce").fillna(0)
        lines.append(f"Dropped trials: {int(dropped.sum())} over all cells (max {int(dropped.max())} in one cell).")
    lines.extend(upsampled_note(frame))
    for line in lines:
        rep.para(line)
    for msg in errored:
        rep.para(f"Errored cell: {msg}")
    if "overlap_warning" in frame.columns:
        warn = frame[frame["overlap_warning"].astype(str).str.strip() != ""]
        if len(warn):
            rep.para(f"Overlap warnings ({len(warn)} row(s)):")
            rep.table(warn, ["model", "cell", "overlap_warning"])
        else:
            rep.para("Overlap warnings: none.")
    else:
        rep.para("Overlap warnings: not checked (no overlap_warning column in results.csv).")


def _condition_table(a: Analysis) -> pd.DataFrame:
    frame = prepare(a.results)
    metric = a.options.metric
    ci = a.cells.set_index(["experiment", "model", "cell"]) if a.cells is not None else None
    rows = []
    for r in frame.itertuples(index=False):
        gname = a.gaps.group_factor.get(r.experiment)
        series, cond = [], []
        for s in SLOTS:
            f, lv = getattr(r, f"factor_{s}"), getattr(r, f"level_{s}")
            if f:
                (series if f == gname else cond).append(f"{f}={lv}" if f != gname else lv)
        row = {
            "model": r.model,
            "condition": ",".join(cond) or "(none)",
            "series": ",".join(series) or "all",
            "value": float(getattr(r, metric)),
        }
        if ci is not None:
            c = ci.loc[(r.experiment, r.model, r.cell)]
            row.update(lo=float(c["lo"]), hi=float(c["hi"]))
        rows.append(row)
    return pd.DataFrame(rows)


def _figures(a: Analysis, rep: Report) -> None:
    metric = a.options.metric
    rep.heading("Figures")
    frame = prepare(a.results)
    # DET curves per cell.
    if a.run.has_scores and "cell" in frame.columns:
        curves: dict[str, list] = {}
        for r in frame.itertuples(index=False):
            cs = a.run.cell(r.model, r.cell)
            fpr, fnr = metrics.det_curve(cs.scores, cs.labels)
            curves.setdefault(r.model, []).append((r.cell, fpr, fnr, float(getattr(r, metric))))
        rep.figure(
            _fig(
                "det",
                "DET curves per cell",
                "Miss against false-alarm rate on normal-deviate axes, one curve per cell; legend gives each "
                f"cell's {metric}. The dotted diagonal is where the equal error rate is read.",
                plots.det_figure(curves, metric),
            )
        )
    else:
        rep.omitted.append("DET curves: need per-trial scores (trials.parquet and scores/ in the run directory)")
    cond = _condition_table(a)
    ci_note = " Bars: " + a.replicates.describe() + "." if a.replicates is not None else ""
    rep.figure(
        _fig(
            "by_condition",
            f"{metric} by condition per model",
            f"One panel per model, one line per group level.{ci_note}",
            plots.condition_figure(cond, metric),
        )
    )
    c = a.contrasts.contrasts
    two = c[c["contrast"].str.count("×") == 1]
    if len(two):
        pair = two["contrast"].iloc[0]
        two = two[two["contrast"] == pair]
        vmax = float(np.nanmax(np.abs(two["ie"]))) if len(two) else 0.0
        for model in dict.fromkeys(two["model"]):
            rep.figure(
                _fig(
                    f"ie_{slug(model)}",
                    f"IE heatmap: {model}",
                    f"Interaction effect IE = observed − additive prediction for {pair}, non-reference levels only; "
                    "red: worse than additive, blue: better. Same colour scale for all models.",
                    plots.ie_heatmap(two, model, vmax),
                )
            )
    else:
        rep.omitted.append("IE heatmaps: no complete two-factor contrast (a factor missing or terms missing)")
    _gap_snr_figures(a, rep, frame)


def _gap_snr_figures(a: Analysis, rep: Report, frame: pd.DataFrame) -> None:
    """Subgroup gap against SNR per experiment, when one condition factor has SNR levels."""
    metric = a.options.metric
    gsum = a.gaps.summary
    drawn = False
    for exp, gname in a.gaps.group_factor.items():
        part = gsum[gsum["experiment"] == exp]
        first = frame[frame["experiment"] == exp].iloc[0]
        slots = {first[f"factor_{s}"]: s for s in SLOTS if first[f"factor_{s}"] and first[f"factor_{s}"] != gname}
        if len(slots) != 1:
            rep.omitted.append(f"gap vs SNR ({exp}): needs exactly one condition factor besides {gname}")
            continue
        factor, slot = next(iter(slots.items()))
        snr = snr_levels(a.run.experiment(AnalysisError) if (a.run.resolved or {}).get("name") == exp else None, factor)
        if not snr:
            rep.omitted.append(
                f"gap vs SNR ({exp}): no level of {factor} has one operator with an snr_db parameter "
                "in experiment.resolved.json"
            )
            continue
        ref_level = str(first[f"ref_{slot}"])
        rep.figure(
            _fig(
                f"gap_snr_{exp}",
                f"Subgroup gap against SNR ({exp})",
                f"Mean |{metric} gap| between {gname} groups over models, per noise kind (SNR and kind read from "
                f"the operator parameters); dashed: the {ref_level} condition."
                + (" Bands: " + a.replicates.describe() + "." if a.replicates is not None else ""),
                plots.gap_snr_figure(part, snr, factor, ref_level, metric),
            )
        )
        drawn = True
    if not drawn and not a.gaps.group_factor:
        rep.omitted.append("gap vs SNR: no population (group) factor in this experiment")


def _geometry(folder: Path, rep: Report) -> None:
    """The geometry audit (``interbias geometry``) when ``folder`` holds a geometry.csv."""
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


def _deployment(folder: Path, rep: Report) -> None:
    """Fairness at the dev threshold (fairness_groups.csv, fairness.csv) and the spoofing DSR
    (spoofing.csv), when the run wrote them."""
    groups, comparisons, spoofing = (folder / n for n in ("fairness_groups.csv", "fairness.csv", "spoofing.csv"))
    if groups.is_file():
        rep.heading("Fairness at the deployment threshold")
        g = pd.read_csv(groups)
        rule = ", ".join(dict.fromkeys(g["threshold_rule"].astype(str))) if "threshold_rule" in g else "?"
        rep.para(
            f"One threshold per model ({rule}) chosen on the development speakers of the reference condition and "
            "applied unchanged to the speaker-disjoint evaluation trials of every condition (fairness_groups.csv)."
        )
        keep = ["model", "condition", "group_by", "group", "n", "threshold", "far", "frr"]
        rep.table(g, [*keep, *FAIRNESS_METRICS, SPOOF_METRIC, "act_dcf", "calibration_loss"])  # the present ones
        if comparisons.is_file():
            c = pd.read_csv(comparisons)
            if len(c) and "significant" in c:
                sig = c[c["significant"].astype(str).str.lower() == "true"]
                rep.para(
                    f"{len(sig)} of {len(c)} group comparisons significant after Holm correction "
                    "(two-proportion z-tests, fairness.csv):"
                )
                cols = ["model", "condition", "group_by", "metric", "group_a", "group_b", "value_a", "value_b"]
                rep.table(sig, [*cols, "difference", "p_holm"])
    if spoofing.is_file():
        rep.heading("Spoofing")
        rep.para("DSR = accepted spoof trials / (spoof trials × encoders), per cell, at each encoder's threshold.")
        rep.table(pd.read_csv(spoofing), ["cell", "n_models", "n_spoof", "n_spoof_accepted", "dsr"])


def _long_cells(a: Analysis, rep: Report) -> None:
    rep.heading("Results per cell (long form)")
    if a.cells is not None:
        rep.table(a.cells, ["model", "cell", "value", "lo", "hi"])
    else:
        cols = ["model", "cell", a.options.metric, "n_target", "n_nontarget", "n_speakers", "n_failed"]
        rep.table(prepare(a.results), cols)


_EFFECT_COLS = ["kind", "effect", "estimate", "lo", "hi", "lo_simultaneous", "hi_simultaneous", "p_adjusted"]


def _findings(a: Analysis, rep: Report) -> None:
    """The headline: the family and its adjustment; per model the resolved effects as sentences
    (main effects first, largest harm first, then interactions and gaps), then the unresolved
    ones with their MDE; then the cells as a pivot."""
    h = headline(a)
    rep.heading("Findings")
    rep.para(h.lines[0])
    n_non = pd.to_numeric(a.results.get("n_nontarget", pd.Series(dtype=float)), errors="coerce").dropna()
    line = too_small_line(int(n_non.min())) if len(n_non) else None
    if line:
        rep.para(line)
    if h.findings is not None:
        if h.findings.empty:
            rep.para(h.lines[1])
        pct = a.replicates.pct if a.replicates is not None else ""
        for model, grp in h.findings.groupby("model", sort=False):
            res, unres = grp[grp["resolved"]], grp[~grp["resolved"]]
            line = next(x for x in h.lines if x.startswith(f"{model}: ") and "effect(s) resolved" in x)
            rep.para(line)
            for kind, word in (("main", "Main effects"), ("interaction", "Interactions"), ("gap", "Subgroup gaps")):
                part = res[res["kind"] == kind]
                if len(part):
                    rep.para(
                        f"{word}, resolved: "
                        + " ".join(sentence(r, a.options.metric, pct) for r in part.itertuples(index=False))
                    )
            if len(unres):
                rep.para(
                    f"{model}, unresolved (adjusted p ≥ {1 - a.replicates.level:.2g}), with the minimum detectable effect and "
                    "the speakers per stratum a run would need to detect 0.01:"
                )
                need = unres["speakers_per_stratum_needed"].map(lambda v: "" if pd.isna(v) else f"{int(v)}")
                rep.table(unres.assign(speakers_per_stratum_needed=need), [*_EFFECT_COLS, "mde", need.name])
    rep.heading("Results per cell")
    ci = f" [{a.replicates.pct} interval]" if a.replicates is not None else ""
    rep.para(f"{a.options.metric}{ci} per cell (rows) and model (columns).")
    rep.table(cell_pivot(a))


def _contrasts(a: Analysis, rep: Report) -> None:
    """Additive contrasts per setting, missing terms, and their summaries."""
    metric = a.options.metric
    rep.heading("Additive contrasts")
    rep.para(
        "IE = observed − (sum of single-factor changes added to the reference). Missing terms are listed, never "
        "imputed. r(prediction, IE) is descriptive: IE contains −prediction, so the two are mathematically coupled."
    )
    ci = ["ie_lo", "ie_hi"] if a.replicates is not None else []
    cols = [
        "model",
        "contrast",
        "level_a",
        "level_b",
        "level_c",
        "predicted",
        f"{metric}_ab",
        "ie",
        *ci,
        "nli",
        "flags",
    ]
    rep.table(a.contrasts.contrasts, cols)
    if len(a.contrasts.missing):
        rep.para("Settings with missing terms:")
        rep.table(a.contrasts.missing, ["model", "contrast", "missing_terms"])
    rep.para("Per experiment × family:")
    extra = ["mean_ie_lo", "mean_ie_hi"] if a.replicates is not None else []
    summ = ["family", "contrast", "n", "mean_ie", *extra, "sd_ie", "pct_positive", "mean_nli", "n_nli"]
    summ += ["mean_predicted", "max_predicted", "share_predicted_above_chance", "r_predicted_ie"]
    rep.table(a.summary, summ)
    rep.para("Per model (InterBias-SV's Table 11 shape):")
    rep.table(a.per_model, ["model", *summ])


def _gaps(a: Analysis, rep: Report) -> None:
    """Subgroup gaps per condition (summary over models, then per model)."""
    if len(a.gaps.gaps):
        rep.heading("Subgroup gaps")
        rep.para(
            "gap = metric of the group level − metric of the reference group, per model and condition. Ratios "
            f"(gap / reference-condition gap) are flagged when |reference-condition gap| < {a.options.gap_floor:g}."
            + shared_calibration_note(a.options.metric)
        )
        gcols = ["condition", "group_level", "n_models", "mean_value_ref_group", "mean_value_group", "mean_gap"]
        gcols += ["mean_abs_gap", "mean_abs_gap_lo", "mean_abs_gap_hi", "max_abs_gap", "ratio_min", "ratio_max"]
        rep.table(a.gaps.summary, [*gcols, "n_ratio_flagged"])
        pcols = ["model", "condition", "gap", "gap_lo", "gap_hi", "abs_gap", "p_perm", "ratio", "ratio_flag"]
        rep.table(a.gaps.gaps, pcols)
        if "p_perm" in a.gaps.gaps.columns:
            rep.para(
                f"p_perm: two-sided speaker-level permutation test ({a.options.n_perm} permutations; units: "
                "enrol speakers), not corrected for multiple comparisons."
            )


def _calibration(a: Analysis, rep: Report) -> None:
    """What one calibration costs per cell (results' calibration columns) and the Bayes
    error-rate plot; says why when the run has no calibration."""
    from interbias.analysis import calibration as cal

    rep.heading("Calibration")
    if not cal.has_calibration(a.results):
        reason = ((a.run.run_json or {}).get("calibration") or {}).get("reason", "no calibration columns in results")
        rep.para(f"Not measured: {reason}.")
        return
    record = (a.run.run_json or {}).get("calibration") or {}
    point = ", ".join(dict.fromkeys(a.results["dcf_point"].dropna().astype(str)))
    rep.para(
        f"One linear calibration per model (fit_on: {record.get('fit_on', '?')}, on the {record.get('split', 'dev')} "
        f"trials) applied to every cell; act_dcf at the Bayes threshold of {point}; calibration_loss = act_dcf − "
        "min_dcf; cllr/min_cllr in bits; threshold_drift = cell EER threshold − calibration trials' EER threshold "
        "(score units). The cells where calibration loss is largest, per model:"
    )
    step = cal.false_alarm_step(a.results, record)
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
        rep.figure(
            _fig(
                "bayes_error",
                "Bayes error-rate plot",
                "Normalised DCF (C_miss = C_fa = 1) against prior log-odds; solid: actual, with the run's calibration; "
                "dotted: minimum (best threshold). The gap is the calibration loss at every operating point.",
                cal.bayes_figure(curves),
            )
        )


def _robustness(a: Analysis, rep: Report) -> None:
    """Robustness profile of a severity-ladder factor (levels ``<family>_s<k>``), when there is one."""
    metric = a.options.metric
    table = profile_table(a.results, metric, a.cells)
    if table.empty:
        return
    rep.heading("Robustness profile")
    bars = " Bars: " + a.replicates.describe() + "." if a.replicates is not None else " No intervals (no bootstrap)."
    rep.figure(
        _fig(
            "robustness_profile",
            f"{metric} against severity per family",
            "One panel per degradation family, one line per model; severity 0 is the reference level, 1 the mildest "
            f"grade.{bars}",
            profile_figure(table, metric),
        )
    )
    wide = table.drop_duplicates(["series", "level"]).pivot(index="level", columns="series", values="value")
    rep.table(wide.reset_index())


def _draws(a: Analysis, rep: Report) -> None:
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


def _operations(a: Analysis, rep: Report) -> None:
    """What the operators realised (operations.parquet): achieved SNR per requested level, crops kept whole."""
    path = a.run.path / "operations.parquet"
    if not path.is_file():
        return
    ops = pd.read_parquet(path)
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


def build_report(a: Analysis, *, geometry_dir: Path | None = None) -> Report:
    frame = prepare(a.results)
    metric = a.options.metric
    resolved = a.run.resolved or {}
    exps = ", ".join(dict.fromkeys(frame["experiment"]))
    rep = Report(f"interbias report: {exps} — {resolved.get('title', '')}".rstrip(" —"))
    if resolved.get("description"):
        rep.para(str(resolved["description"]).strip())
    rep.para(
        f"Metric: {metric} ({metric_units(metric)}). Use: {resolved.get('use', 'unknown')}. "
        + (
            "Intervals: " + a.replicates.describe() + "."
            if a.replicates is not None
            else "No intervals: "
            + ("bootstrap not requested." if a.run.has_scores else "the run directory has no per-trial scores.")
        )
    )
    _findings(a, rep)
    _provenance(a, rep)
    if len(a.above_chance):
        rep.para(f"{len(a.above_chance)} cell(s) above chance ({metric} > 0.5):")
        rep.table(a.above_chance, ["model", "cell", "value"])
    _figures(a, rep)
    _robustness(a, rep)
    _draws(a, rep)
    _operations(a, rep)
    _contrasts(a, rep)
    _gaps(a, rep)
    rep.heading("Additivity validation")
    rep.para(
        "Main-effects model fitted per model; each joint setting is held out in turn and predicted from the others "
        f"(leave-one-setting-out). Tolerance fixed up front: {a.options.tolerance:g}."
    )
    rep.table(
        a.additivity.summary,
        ["model", "n_settings", "n_estimable", "share_within", "mean_abs_error", "max_abs_error", "worst_settings"],
    )
    rep.heading(f"Macro {metric}")
    rep.para("Per model: mean over the cells of each experiment, then over experiments with equal weight.")
    rep.table(
        a.macro[a.macro["scope"] == "macro"], ["model", "family", "n_experiments", "n_cells", "value", "lo", "hi"]
    )
    _long_cells(a, rep)
    _calibration(a, rep)
    _deployment(a.run.path, rep)
    if geometry_dir is not None:
        _geometry(Path(geometry_dir), rep)
    if rep.omitted:
        rep.heading("Figures not drawn")
        for msg in rep.omitted:
            rep.para(msg)
    return rep


def _md_table(frame: pd.DataFrame) -> str:
    head = "| " + " | ".join(frame.columns) + " |"
    sep = "| " + " | ".join("---" for _ in frame.columns) + " |"
    body = ["| " + " | ".join(_fmt(v).replace("|", "\\|") for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([head, sep, *body])


def to_markdown(rep: Report, figure_dir: str) -> str:
    out = [f"# {rep.title}", ""]
    for kind, payload in rep.blocks:
        if kind == "h2":
            out += [f"## {payload}", ""]
        elif kind == "p":
            out += [payload, ""]
        elif kind == "table":
            out += [_md_table(payload), ""]
        elif kind == "figure":
            out += [f"### {payload.title}", "", f"![{payload.title}]({figure_dir}/{payload.name}.png)", ""]
            out += [payload.caption, ""]
    return "\n".join(out)


_CSS = (
    "body{font-family:sans-serif;max-width:1200px;margin:2em auto;color:#222}"
    "table{border-collapse:collapse;font-size:12px;margin:0.5em 0}"
    "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}th{background:#eee}"
    "img{max-width:100%}figure{margin:1em 0}figcaption{font-size:13px;color:#444}"
)


def to_html(rep: Report) -> str:
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(rep.title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(rep.title)}</h1>",
    ]
    for kind, payload in rep.blocks:
        if kind == "h2":
            out.append(f"<h2>{html.escape(payload)}</h2>")
        elif kind == "p":
            out.append(f"<p>{html.escape(payload)}</p>")
        elif kind == "table":
            cells = payload.map(_fmt) if hasattr(payload, "map") else payload.applymap(_fmt)
            out.append(cells.to_html(index=False, escape=True, border=0))
        elif kind == "figure":
            data = base64.b64encode(payload.png).decode("ascii")
            out.append(
                f'<figure id="{html.escape(payload.name)}"><h3>{html.escape(payload.title)}</h3>'
                f'<img alt="{html.escape(payload.title)}" src="data:image/png;base64,{data}">'
                f"<figcaption>{html.escape(payload.caption)}</figcaption></figure>"
            )
    out.append("</body></html>")
    return "\n".join(out)


def write_report(rep: Report, folder: Path) -> tuple[Path, Path]:
    """Write ``report.md`` (figures in ``report_figures/``) and ``report.html`` into ``folder``."""
    fig_dir = "report_figures"
    for fig in rep.figures:
        atomic.write_bytes(folder / fig_dir / f"{fig.name}.png", fig.png)
    write_vector_figures(rep, folder / fig_dir)
    md, page = folder / "report.md", folder / "report.html"
    atomic.write_text(md, to_markdown(rep, fig_dir))
    atomic.write_text(page, to_html(rep))
    return md, page


def write_vector_figures(rep: Report, folder: Path) -> list[Path]:
    """Each figure's vector files (``<name>.pdf``, ``<name>.svg``) beside its PNG in ``folder``."""
    paths = []
    for fig in rep.figures:
        for fmt, data in fig.vectors.items():
            paths.append(folder / f"{fig.name}.{fmt}")
            atomic.write_bytes(paths[-1], data)
    return paths
