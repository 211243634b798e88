"""A readable report of one run: ``report.md`` (figures beside it) and a self-contained
``report.html`` (figures embedded as base64 PNG, no external files, scripts or fonts).

Sections: the answer; findings (the family and its multiplicity adjustment, resolved main effects as sentences, then interactions and gaps, the
unresolved ones with their minimum detectable effect); what was run and how uncertainty was
estimated; the cells as a conditions × models pivot; provenance (encoders with checkpoint hashes, trial-list hash and
counts, failures, overlap warnings); figures (DET curves per cell, metric by condition per
model, IE heatmap per model, gap against SNR per noise kind); contrasts and their diagnostics;
subgroup gaps; additivity validation; macro averages; the long per-cell list; then the sections
other analyses register (:mod:`~interbias.analysis.reporting.registry`: calibration, QMF,
deployment, attacks, ASV + CM fusion), in the order of their places. A figure that cannot be
drawn is listed with the reason, never left out silently.
SNR and noise kind come from the operator parameters in ``experiment.resolved.json``.
The document and its rendering are :mod:`~interbias.analysis.reporting.document`; the sections
read from the run's other files are :mod:`~interbias.analysis.reporting.sections`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from interbias.analysis.contrasts import CHANCE, SLOTS
from interbias.analysis.effect_names import effect_name
from interbias.analysis.fusion.compare import fusion_block
from interbias.analysis.reporting import plots
from interbias.analysis.reporting.answer import answer, key_brief, question
from interbias.analysis.reporting.corpus import about_corpus, provenance_lines
from interbias.analysis.reporting.det_points import deployed_marks, det_caption
from interbias.analysis.reporting.document import Report
from interbias.analysis.reporting.headline import (
    HEADLINE_EFFECT,
    HEADLINE_POWER,
    PERCENT,
    PLAN_LEVEL,
    Headline,
    cell_pivot,
    headline,
    kinds_of,
    metric_name,
    num,
    resolved_mask,
    sentence,
)
from interbias.analysis.reporting.registry import report_section, sections
from interbias.analysis.reporting.sections import geometry_section
from interbias.analysis.security.sasv_run import sasv_answer
from interbias.analysis.suite import Analysis, metric_units, shared_calibration_note
from interbias.experiments.schema import AcousticLevel, Experiment
from interbias.metrics import verification as metrics
from interbias.metrics.operating_points import too_small_line
from interbias.run.frame import errored_words
from interbias.utils.errors import AnalysisError
from interbias.utils.paths import slug


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


def short_source(source: object) -> object:
    """An encoder's source as the report shows it: a path inside an installed package from the
    package on (``interbias/encoders/…``, not ``/…/site-packages/interbias/encoders/…``)."""
    if isinstance(source, str) and "site-packages/" in source:
        return source.split("site-packages/", 1)[1]
    return source


def _provenance(a: Analysis, rep: Report) -> None:
    rep.heading("Provenance")
    rj = a.run.run_json or {}
    frame = a.results
    if rj.get("encoders"):
        enc = pd.DataFrame(
            [
                {
                    "encoder": e.get("label"),
                    "family": e.get("family"),
                    "checkpoint_sha256": e.get("checkpoint_sha256"),
                    "fingerprint": e.get("fingerprint"),
                    "source": short_source(e.get("source")),
                }
                for e in rj["encoders"]
            ]
        )
    else:
        cols = [c for c in ("model", "family", "checkpoint_sha256", "encoder_source") if c in frame.columns]
        enc = frame[cols].drop_duplicates().rename(columns={"model": "encoder"})
        if "encoder_source" in enc.columns:
            enc["encoder_source"] = enc["encoder_source"].map(short_source)
    rep.table(enc)
    for line in provenance_lines(rj):  # the corpus and the CMs that scored the trials
        rep.para(line)
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
        lines.append(f"Failures: {rj['n_failures']} failed utterance(s) over all cells; {errored_words(errored)}.")
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
    frame = a.results
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


#: Curves per DET panel when one factor is split into panels of consecutive levels.
DET_PER_PANEL = 8


def det_panels(frame: pd.DataFrame) -> tuple[dict[str, tuple[str, str]], str | None]:
    """cell -> (panel label, series label) for the DET small multiples, and the reference cell:
    panels are the levels of the factor with the fewest levels (series: the other factors'
    levels); with one factor, runs of :data:`DET_PER_PANEL` consecutive levels."""
    cells: dict[str, list[tuple[str, str]]] = {}
    reference = None
    for r in frame.drop_duplicates("cell").itertuples(index=False):
        pairs = [(getattr(r, f"factor_{s}"), getattr(r, f"level_{s}")) for s in SLOTS if getattr(r, f"factor_{s}")]
        cells[r.cell] = pairs
        if all(getattr(r, f"level_{s}") == getattr(r, f"ref_{s}") for s in SLOTS if getattr(r, f"factor_{s}")):
            reference = r.cell
    levels: dict[str, list[str]] = {}
    for pairs in cells.values():
        for f, lv in pairs:
            levels.setdefault(f, [])
            if lv not in levels[f]:
                levels[f].append(lv)
    if len(levels) >= 2:
        split = min(levels, key=lambda f: (len(levels[f]), list(levels).index(f)))
        out = {}
        for cell, pairs in cells.items():
            d = dict(pairs)
            rest = ",".join(f"{f}={lv}" for f, lv in pairs if f != split) or "(none)"
            out[cell] = (f"{split}={d.get(split, '?')}", rest)
        return out, reference
    others = [c for c in cells if c != reference]
    n_panels = max(1, (len(others) + DET_PER_PANEL - 1) // DET_PER_PANEL)
    out = {c: (f"cells {k // DET_PER_PANEL + 1} of {n_panels}", c) for k, c in enumerate(others)}
    if reference is not None:
        out[reference] = ("(reference)", reference)
    return out, reference


def _figures(a: Analysis, rep: Report) -> None:
    metric = a.options.metric
    rep.heading("Figures")
    frame = a.results
    if a.run.has_scores and "cell" in frame.columns:
        curves: dict[str, list] = {}
        for r in frame.itertuples(index=False):
            cs = a.run.cell(r.model, r.cell)
            fpr, fnr = metrics.det_curve(cs.scores, cs.labels)
            curves.setdefault(r.model, []).append((r.cell, fpr, fnr, float(getattr(r, metric))))
        panels, ref = det_panels(frame)
        marks = deployed_marks(a.run, frame)
        rep.draw("det", "DET curves", det_caption(ref, marks), lambda: plots.det_figure(curves, panels, ref, marks))
    else:
        rep.omitted.append("DET curves: need per-trial scores (trials.parquet and scores/ in the run directory)")
    cond = _condition_table(a)
    ci_note = " Bars: " + a.replicates.describe() + "." if a.replicates is not None else ""
    level = CHANCE.get(metric)
    chance = f" Dotted: chance ({level:g})." if level is not None else ""
    rep.draw(
        "by_condition",
        f"{metric_name(metric)} by condition per model",
        f"One panel per model, one colour per group level; conditions are categories, so points are not joined."
        f"{ci_note}{chance}",
        lambda: plots.condition_figure(cond, metric, ", ".join(dict.fromkeys(a.gaps.group_factor.values())) or "group"),
    )
    c = a.contrasts.contrasts
    two = c[c["contrast"].str.count("×") == 1]
    if len(two):
        pair = two["contrast"].iloc[0]
        two = two[two["contrast"] == pair]
        vmax = float(np.nanmax(np.abs(two["ie"]))) if len(two) else 0.0
        for model in dict.fromkeys(two["model"]):
            rep.draw(
                f"ie_{slug(model)}",
                f"IE heatmap: {model}",
                f"Interaction effect IE = observed − additive prediction for {pair}, non-reference levels only; "
                "red: worse than additive, blue: better. Same colour scale for all models."
                + (f" Brackets: {a.interval_method} (the findings' interval)." if a.found is not None else ""),
                lambda model=model: plots.ie_heatmap(two, model, vmax),
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
        rep.draw(
            f"gap_snr_{exp}",
            f"Subgroup gap against SNR ({exp})",
            f"Mean |{metric} gap| between {gname} groups over models: one panel per noise kind (SNR and kind read "
            f"from the operator parameters), one line per group level, starting at the {ref_level} condition."
            + (" Bands: " + a.replicates.describe() + "." if a.replicates is not None else ""),
            lambda part=part, snr=snr, factor=factor, ref_level=ref_level: plots.gap_snr_figure(
                part, snr, factor, ref_level, metric
            ),
        )
        drawn = True
    if not drawn and not a.gaps.group_factor:
        rep.omitted.append("gap vs SNR: no population (group) factor in this experiment")


@report_section("cells", 90)
def _long_cells(a: Analysis, rep: Report) -> None:
    rep.heading("Results per cell (long form)")
    if a.cells is not None:
        rep.table(a.cells, ["model", "cell", "value", "lo", "hi"])
    else:
        cols = ["model", "cell", a.options.metric, "n_target", "n_nontarget", "n_speakers", "n_failed"]
        rep.table(a.results, cols)


#: Resolved effects written as sentences per model and kind in the findings (the rest: the
#: forest plot, the "All effects" table and findings.csv).
SENTENCES_PER_KIND = 3
#: Rows of the "largest unresolved effects" table.
UNRESOLVED_ROWS = 8
_EFFECT_COLS = [
    "model", "kind", "effect", "estimate", "lo", "hi", "verdict", "mde", "speakers_per_stratum_needed"
]  # fmt: skip


def _unit_line(a: Analysis) -> str:
    metric = a.options.metric
    ci = (
        f" Intervals: {a.interval_method} (About this run). MDE and speakers needed: power {HEADLINE_POWER:g}, "
        f"{PLAN_LEVEL} (as interbias plan)."
        if a.replicates is not None
        else ""
    )
    return (
        f"Metric: {metric} ({metric_units(metric)}); every value and difference on this page is in that unit, three "
        f"decimals.{ci}"
    )


def answer_section(a: Analysis, rep: Report, h: Headline) -> None:
    """First screen: the question, the answer in short (the lines ``analyze`` ends with), the central
    statement and the forest plot; below it the named effects in detail and per model and kind."""
    metric = a.options.metric
    rep.heading("Answer")
    rep.para("Question: " + question((a.run.resolved or {}), metric))
    fusion_block(a.run.path, rep)  # a fused copy: the fused model against each component first
    if sasv := sasv_answer(a.run.path):
        rep.para(
            "What the countermeasure does: with the run's countermeasures (ASV + CM fusion; minimum a-DCF, a normalised cost "
            "in [0, 1], lower is better; sasv_fusion.csv):"
        )
        rep.bullets(sasv)
    if h.findings is None:
        rep.para(h.lines[0])
        return
    pct = a.replicates.pct if a.replicates is not None else ""
    ans = answer(h.findings, a.run.resolved or {}, metric, pct, str(a.run.path))
    if brief := key_brief(h.findings, a.run.resolved or {}, metric):
        rep.para("In short:")
        rep.bullets(brief)
    if ans.central:
        rep.para(ans.central)
    rep.para(_unit_line(a))
    if not h.findings.empty:
        _forest(rep, h, metric, pct)
    if ans.key:
        rep.para("The effects the question names, the largest of each with its adjusted p:")
        rep.bullets(ans.key)
    rep.bullets([f"{model} — {line}" for model, _, line in ans.lines] or ["No effect to test."])


def _forest(rep: Report, h: Headline, metric: str, pct: str) -> None:
    """The forest plot of the findings: the figure that shows the answer."""
    rows, left = plots.forest_rows(h.findings, kinds := kinds_of(h.findings), resolved_mask(h.findings))
    unit = "fraction; 0.01 = one point" if metric in PERCENT else metric_units(metric).split(",")[0]
    more = f" {left} further resolved effect(s) are in the All effects table and findings.csv." if left else ""
    rep.draw(
        "forest",
        "Effects with their intervals",
        f"Per model: every resolved effect (up to {plots.FOREST_RESOLVED}, largest first) and the "
        f"{plots.FOREST_UNRESOLVED} largest unresolved ones per kind; dot: estimate (filled: resolved, open: not), "
        f"thick bar: {pct} per-effect interval, thin bar: simultaneous interval over the family; the vertical line "
        f"is no effect.{more}",
        lambda: plots.forest_figure(rows, kinds, f"{metric_name(metric)} difference ({unit})"),
    )


def _findings(a: Analysis, rep: Report, h: Headline) -> None:
    """The family and its adjustment; per model and kind the largest resolved effects as
    sentences; a short table of the largest unresolved effects (the rest: All effects)."""
    rep.heading("Findings")
    rep.para(h.lines[0])
    n_non = pd.to_numeric(a.results.get("n_nontarget", pd.Series(dtype=float)), errors="coerce").dropna()
    line = too_small_line(int(n_non.min())) if len(n_non) else None
    if line:
        rep.para(line)
    if h.findings is None or h.findings.empty:
        return
    pct = a.replicates.pct if a.replicates is not None else ""
    mask = resolved_mask(h.findings)
    for model, grp in h.findings.groupby("model", sort=False):
        items = []
        for kind in kinds_of(grp):
            part = grp[(grp["kind"] == kind) & mask.loc[grp.index]]
            top = part.reindex(part["estimate"].astype(float).abs().sort_values(ascending=False).index)
            for r in top.head(SENTENCES_PER_KIND).itertuples(index=False):
                items.append(sentence(r, a.options.metric, pct))
            if len(part) > SENTENCES_PER_KIND:
                items.append(f"… and {len(part) - SENTENCES_PER_KIND} more resolved {kind} effect(s) (All effects).")
        if items:
            rep.para(f"{model}, resolved:")
            rep.bullets(items)
    unres = h.findings[~mask]
    if len(unres):
        top = unres.reindex(unres["estimate"].astype(float).abs().sort_values(ascending=False).index)
        rep.para(
            f"The {min(UNRESOLVED_ROWS, len(unres))} largest of {len(unres)} unresolved effects, with the minimum "
            f"detectable effect (mde) and the speakers per stratum needed to detect {num(HEADLINE_EFFECT)}; the rest "
            "are in All effects (collapsed) and findings.csv:"
        )
        notes = (
            ["note"] if "note" in top and (top["note"].astype("string").fillna("") != "").any() else []
        )  # "no interval (why)"
        rep.table(labelled(top.head(UNRESOLVED_ROWS)), [*_EFFECT_COLS, *notes])


def all_effects(rep: Report, h: Headline) -> None:
    """Every effect of the findings in one collapsed table."""
    if h.findings is None or h.findings.empty:
        return
    rep.heading("All effects")
    rep.para(
        "Every tested effect, named as in the forest plot (findings.csv holds the same rows with every column, "
        "its effect column in long form)."
    )
    cols = [*_EFFECT_COLS[:6], "lo_simultaneous", "hi_simultaneous", "p_value", *_EFFECT_COLS[6:], "resolved"]
    rep.table(labelled(h.findings), cols, collapsed=f"All {len(h.findings)} effects (click to open)")


def labelled(findings: pd.DataFrame) -> pd.DataFrame:
    """``findings`` with each effect under its one name (:func:`effect_name`)."""
    return findings.assign(effect=[effect_name(r) for r in findings.itertuples(index=False)])


def _cells_section(a: Analysis, rep: Report) -> None:
    rep.heading("Results per cell")
    ci = f" [{a.replicates.pct} interval]" if a.replicates is not None else ""
    rep.para(f"{a.options.metric}{ci} per cell (rows) and model (columns).")
    rep.table(cell_pivot(a))


@report_section("contrasts", 40)
def _contrasts(a: Analysis, rep: Report) -> None:
    """Additive contrasts per setting, missing terms, and their summaries."""
    metric = a.options.metric
    rep.heading("Additive contrasts")
    rep.para(
        "IE = observed − (sum of single-factor changes added to the reference). Missing terms are listed, never "
        "imputed. r(prediction, IE) is descriptive: IE contains −prediction, so the two are mathematically coupled."
        + (
            f" ie_lo/ie_hi: {a.interval_method}, the findings' interval; the means' bounds (mean_ie_lo/hi) are "
            "percentile intervals of the mean over the bootstrap replicates."
            if a.found is not None
            else ""
        )
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


@report_section("gaps", 50)
def _gaps(a: Analysis, rep: Report) -> None:
    """Subgroup gaps per condition (summary over models, then per model)."""
    if len(a.gaps.gaps):
        rep.heading("Subgroup gaps")
        rep.para(
            "gap = metric of the group level − metric of the reference group, per model and condition. Ratios "
            f"(gap / reference-condition gap) are flagged when |reference-condition gap| < {a.options.gap_floor:g}."
            + shared_calibration_note(a.options.metric)
            + (
                " The first table describes each group level and condition over models (means, no interval). "
                f"The second gives each model's gap with the findings' interval (gap_lo/gap_hi: {a.interval_method}) "
                "and verdict (p_adjusted, resolved: Holm over the findings' family), the numbers of findings.csv."
                if a.found is not None
                else ""
            )
        )
        gcols = ["condition", "group_level", "n_models", "mean_value_ref_group", "mean_value_group", "mean_gap"]
        rep.table(a.gaps.summary, [*gcols, "mean_abs_gap", "max_abs_gap", "ratio_min", "ratio_max", "n_ratio_flagged"])
        pcols = ["model", "group_level", "condition", "gap", "gap_lo", "gap_hi", "p_adjusted", "resolved", "abs_gap"]
        rep.table(a.gaps.gaps, [*pcols, "p_perm", "ratio", "ratio_flag"])
        if "p_perm" in a.gaps.gaps.columns:
            rep.para(
                f"p_perm: two-sided speaker-level permutation test ({a.options.n_perm} permutations; units: "
                "enrol speakers), not corrected for multiple comparisons."
            )


@report_section("additivity", 70)
def _additivity(a: Analysis, rep: Report) -> None:
    rep.heading("Additivity validation")
    rep.para(
        "Main-effects model fitted per model; each joint setting is held out in turn and predicted from the others "
        f"(leave-one-setting-out). Tolerance fixed up front: {a.options.tolerance:g}."
    )
    rep.table(
        a.additivity.summary,
        ["model", "n_settings", "n_estimable", "share_within", "mean_abs_error", "max_abs_error", "worst_settings"],
    )


@report_section("macro", 80)
def _macro(a: Analysis, rep: Report) -> None:
    rep.heading(f"Macro {a.options.metric}")
    rep.para("Per model: mean over the cells of each experiment, then over experiments with equal weight.")
    rep.table(
        a.macro[a.macro["scope"] == "macro"], ["model", "family", "n_experiments", "n_cells", "value", "lo", "hi"]
    )


def build_report(a: Analysis, *, geometry_dir: Path | None = None, findings: Headline | None = None) -> Report:
    """The report of ``a``; ``findings``: its headline when already computed (else computed here)."""
    frame = a.results
    metric = a.options.metric
    resolved = a.run.resolved or {}
    exps = ", ".join(dict.fromkeys(frame["experiment"]))
    rep = Report(f"interbias report: {exps} — {resolved.get('title', '')}".rstrip(" —"))
    h = findings if findings is not None else headline(a)
    answer_section(a, rep, h)
    rep.toc()
    _findings(a, rep, h)
    rep.heading("About this run")
    about_corpus(a.run.run_json or {}, resolved, rep)  # the description, the corpus measured, what was left out
    rep.para(
        f"Use: {resolved.get('use', 'unknown')}. "
        + (
            f"Intervals of effects (contrasts, gaps, findings): {a.interval_method}, estimate ± t·SE, the SE from the "
            "speaker bootstrap described next (Findings gives the estimator). Intervals of a cell's own value "
            "(tables, error bars): " + a.replicates.describe() + "."
            if a.replicates is not None
            else "No intervals: "
            + ("bootstrap not requested." if a.run.has_scores else "the run directory has no per-trial scores.")
        )
    )
    _cells_section(a, rep)
    _provenance(a, rep)
    if len(a.above_chance):
        rep.para(f"{len(a.above_chance)} cell(s) above chance ({metric} > 0.5):")
        rep.table(a.above_chance, ["model", "cell", "value"])
    _figures(a, rep)
    for section in sections():  # every registered section, in the order of their places
        section.write(a, rep)
    if geometry_dir is not None:
        geometry_section(Path(geometry_dir), rep)
    all_effects(rep, h)
    if rep.omitted:
        rep.heading("Figures not drawn")
        for msg in rep.omitted:
            rep.para(msg)
    return rep
