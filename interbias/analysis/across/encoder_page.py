"""One encoder across runs: the page of ``interbias runs card`` (markdown + self-contained HTML).

Sections: identity and provenance (registered encoder card, checkpoint hash per run, training corpora
and overlap warnings); the runs that hold the encoder and those that do not; macro EER and
minDCF with speaker-bootstrap intervals per experiment and overall (minDCF: reflected interval
and bootstrap bias, and a line when the run is too small for its operating point) (mean over experiments,
each experiment the mean of its cells); its most damaging conditions (each cell against the
same cell with every non-population factor at its reference); its resolved main effects,
interactions and subgroup gaps (adjusted p over each experiment's family); fairness at the development threshold, spoofing figures and
the geometry audit where the runs hold them. Anything absent is listed under "Missing", never
filled in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from interbias.analysis import planner
from interbias.analysis.across.runs import RunAnalysis, experiment_replicates
from interbias.analysis.contrasts import SLOTS
from interbias.analysis.effects import COLUMNS as EFFECT_COLUMNS
from interbias.analysis.gaps import population_factors
from interbias.analysis.reporting.document import Report
from interbias.analysis.stats.bootstrap import bootstrap_bias, percentile_ci, reflected_ci
from interbias.metrics.operating_points import P_TARGET, too_small_line
from interbias.metrics.registry import names
from interbias.run.rundir import RunDir
from interbias.utils.errors import AnalysisError

#: Metrics whose interval is the reflected one (their replicates are biased: a minimum over thresholds).
DCF_METRICS = names(lambda s: s.interval == "reflected")
#: Conditions listed as most damaging.
TOP_DAMAGE = 5


@dataclass
class EncoderPage:
    label: str
    report: Report
    missing: list[str] = field(default_factory=list)


def _models(r: RunAnalysis) -> list[str]:
    return list(dict.fromkeys(r.analysis.results["model"].astype(str)))


def _identity(label: str, runs: list[RunAnalysis], page: EncoderPage) -> None:
    from interbias.encoders import ENCODERS, overlap_warning

    rep = page.report
    rep.heading("Identity and provenance")
    entry = ENCODERS.get(label) if label in ENCODERS else None
    if entry is None:
        page.missing.append(f"encoder card: {label!r} is not a registered encoder (no training corpora known)")
    else:
        trained = ", ".join(entry.trained_on) or "not stated"
        rep.para(
            f"{entry.label}: {entry.description or entry.backend} (family {entry.family}, backend {entry.backend}, "
            f"embedding dimension {entry.embedding_dim}). Checkpoint: {entry.checkpoint or 'packaged / none'}. "
            f"Trained on: {trained}."
        )
    rows = []
    for r in runs:
        frame = r.analysis.results
        mine = frame[frame["model"] == label]
        enc = next((e for e in (r.analysis.run.run_json or {}).get("encoders", []) if e.get("label") == label), {})
        warn = set(mine["overlap_warning"]) - {""} if "overlap_warning" in mine else set()
        if entry is not None:
            warn |= {overlap_warning(entry, d) for d in set(mine["dataset"])} - {""}
        rows.append(
            {
                "run": r.path.name,
                "experiments": ", ".join(dict.fromkeys(mine["experiment"])),
                "checkpoint_sha256": ", ".join(sorted(set(mine.get("checkpoint_sha256", pd.Series(dtype=str)))))
                or enc.get("checkpoint_sha256", ""),
                "source": enc.get("source", ", ".join(sorted(set(mine.get("encoder_source", pd.Series(dtype=str)))))),
                "trials_sha256": r.trials_sha256,
                "overlap_warnings": "; ".join(sorted(warn)) or "none",
            }
        )
    rep.table(pd.DataFrame(rows))


def _ci_text(value: float, reps: np.ndarray, level: float, metric: str = "eer") -> str:
    """``value [lo, hi]``: percentile interval; for DCF metrics the reflected interval (it
    contains its estimate) and the bootstrap bias (mean replicate − estimate)."""
    if metric in DCF_METRICS:
        lo, hi = reflected_ci(value, reps, level)
        return f"{value:.4f} [{float(lo):.4f}, {float(hi):.4f}] (bias {float(bootstrap_bias(value, reps)):+.4f})"
    lo, hi, _ = percentile_ci(reps, level)
    return f"{value:.4f} [{float(lo):.4f}, {float(hi):.4f}]"


def _smallest_nontarget(label: str, runs: list[RunAnalysis]) -> int:
    """The fewest non-target trials of any cell of ``label`` in ``runs`` (0 when not recorded)."""
    counts = [
        int(v)
        for r in runs
        if "n_nontarget" in r.analysis.results.columns
        for v in pd.to_numeric(r.analysis.results.loc[r.analysis.results["model"] == label, "n_nontarget"]).dropna()
    ]
    return min(counts, default=0)


def _macro(label: str, by_metric: dict[str, list[RunAnalysis]], rep: Report) -> None:
    """Per experiment (one row per experiment × trial list) and overall, one column per metric."""
    rows: dict[tuple[str, str], dict[str, str]] = {}
    overall: dict[str, list[tuple[float, np.ndarray]]] = {}
    level = 0.95
    for metric, runs in by_metric.items():
        for r in runs:
            level = r.analysis.replicates.level if r.analysis.replicates else level
            for (model, exp), (v, reps) in experiment_replicates(r.analysis).items():
                if model == label:
                    rows.setdefault((exp, r.trials_sha256[:12]), {})[metric] = _ci_text(v, reps, level, metric)
                    overall.setdefault(metric, []).append((v, reps))
    out = [{"experiment": e, "trials": s, **vals} for (e, s), vals in rows.items()]
    out.append(
        {
            "experiment": "overall (mean over experiments)",
            "trials": "",
            **{
                m: _ci_text(float(np.mean([v for v, _ in vs])), np.mean([r for _, r in vs], axis=0), level, m)
                for m, vs in overall.items()
            },
        }
    )
    rep.heading("Macro EER and minDCF")
    rep.para(
        f"Per experiment: mean over its cells; overall: mean over experiments. [{100 * level:g}% speaker-bootstrap "
        "interval] — value [lo, hi]: percentile for EER; for minDCF the reflected interval around the estimate "
        "(it contains the estimate) and the bootstrap bias (mean replicate − estimate)."
    )
    rep.table(pd.DataFrame(out))
    if "min_dcf" in by_metric:
        line = too_small_line(_smallest_nontarget(label, by_metric["min_dcf"]), where="the run")
        rep.para(line or f"minDCF at p_target {P_TARGET:g}: the runs have enough non-target trials for it.")
    left = left_off_line(by_metric)
    if left:
        rep.para(left)


def left_off_line(by_metric: dict[str, list[RunAnalysis]]) -> str:
    """The summary metrics (registry) the card has no interval of, each with the reason."""
    from interbias.metrics.registry import spec, summary_metrics

    left = [m for m in summary_metrics() if m not in by_metric]
    why = "; ".join(f"{m}: {spec(m).no_interval or 'not asked for'}" for m in left)
    return f"Not on this card (no interval; runs inventory pools their values): {why}." if left else ""


def damaging(label: str, r: RunAnalysis) -> pd.DataFrame:
    """Each cell of ``label`` against its baseline (non-population factors at reference)."""
    a = r.analysis
    frame = a.results
    metric = a.options.metric
    pops = population_factors(a.results, a.run.resolved)
    mine = frame[frame["model"] == label]
    rows = []
    for exp, grp in mine.groupby("experiment", sort=False):
        slots = [s for s in SLOTS if (grp[f"factor_{s}"] != "").any()]
        by_levels = {tuple(getattr(x, f"level_{s}") for s in slots): x for x in grp.itertuples(index=False)}
        for levels, x in by_levels.items():
            base_levels = tuple(
                lv if getattr(x, f"factor_{s}") in pops.get(exp, []) else getattr(x, f"ref_{s}")
                for s, lv in zip(slots, levels, strict=True)
            )
            base = by_levels.get(base_levels)
            if base is None or base_levels == levels:
                continue
            diff = float(getattr(x, metric)) - float(getattr(base, metric))
            reps = a.replicates.values[(exp, label, x.cell)] - a.replicates.values[(exp, label, base.cell)]
            lo, hi, _ = percentile_ci(reps, a.replicates.level)
            rows.append(
                {
                    "experiment": exp,
                    "cell": x.cell,
                    "against": base.cell,
                    "increase": diff,
                    "lo": float(lo),
                    "hi": float(hi),
                }
            )
    cols = ["experiment", "cell", "against", "increase", "lo", "hi"]
    return pd.DataFrame(rows, columns=cols)


def _effects(label: str, runs: list[RunAnalysis], page: EncoderPage) -> None:
    rep = page.report
    metric = runs[0].analysis.options.metric if runs else "eer"
    dmg = pd.concat([damaging(label, r) for r in runs], ignore_index=True) if runs else pd.DataFrame()
    rep.heading(f"Most damaging conditions ({metric})")
    if dmg.empty:
        page.missing.append("damaging conditions: no cell with a measured baseline cell")
    else:
        rep.para("Increase over the same cell with every acoustic/other factor at its reference; interval as above.")
        rep.table(dmg.sort_values("increase", ascending=False, kind="stable").head(TOP_DAMAGE))
    frames = [planner.effects(r.analysis) for r in runs]
    eff = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=EFFECT_COLUMNS)
    eff = eff[eff["model"] == label]
    if eff.empty:
        page.missing.append("effects: none tested (no condition away from the reference and no group factor)")
        return
    rep.heading("Resolved effects (main effects, interactions, subgroup gaps)")
    sig = eff[eff["resolved"]]
    method = ", ".join(dict.fromkeys(eff["adjustment"].astype(str)))
    rep.para(
        f"{len(sig)} of {len(eff)} tested effect(s) resolved: adjusted p < alpha ({method} over each experiment's "
        "family of effects, all models of the run)."
    )
    if len(sig):
        rep.table(sig, ["experiment", "kind", "effect", "estimate", "lo", "hi", "p_adjusted"])


def _deployment(label: str, runs: list[RunAnalysis], page: EncoderPage) -> None:
    """Fairness at the dev threshold, spoofing counts, geometry audit: each where a run has it."""
    from interbias.analysis.geometry import read_geometry, summary

    rep = page.report
    parts = {"fairness": [], "spoofing": [], "geometry": []}
    for r in runs:
        folder = r.path
        g = RunDir(folder).read_fairness()[0]
        if g is not None:
            parts["fairness"].append(g[g["model"].astype(str) == label])
        res = r.analysis.results
        if {"n_spoof", "n_spoof_accepted"} <= set(res.columns):
            s = res[res["model"] == label][["experiment", "cell", "n_spoof", "n_spoof_accepted"]]
            parts["spoofing"].append(s)
        if (folder / "geometry.csv").is_file():
            geo = summary(read_geometry(folder))
            parts["geometry"].append(geo[geo["encoder"].astype(str) == label])
    titles = {
        "fairness": "Fairness at the development threshold",
        "spoofing": "Spoofing (spoof trials accepted at the encoder's threshold)",
        "geometry": "Geometry audit",
    }
    for key, frames in parts.items():
        frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
        if frame.empty:
            page.missing.append(f"{key}: no run given holds {key} figures for {label}")
            continue
        rep.heading(titles[key])
        rep.table(frame)


def build_page(label: str, by_metric: dict[str, list[RunAnalysis]]) -> EncoderPage:
    """The page of ``label`` from runs analysed once per metric (the first metric drives the
    effects and damaging conditions)."""
    first = next(iter(by_metric.values()))
    rep = Report(f"Encoder card: {label}")
    page = EncoderPage(label, rep)
    have = [r for r in first if label in _models(r)]
    lacking = [r for r in first if label not in _models(r)]
    rep.para(
        f"Runs: {len(first)} given, {len(have)} with {label}. Metric values are fractions (0.01 = one point); "
        "intervals from the speaker-cluster bootstrap of each run."
    )
    for r in lacking:
        page.missing.append(f"run {r.path}: {label} is not in it (its encoders: {', '.join(_models(r))})")
    if not have:
        raise AnalysisError(
            f"{label} is in none of the runs given; encoders there: "
            + ", ".join(sorted({m for r in first for m in _models(r)}))
        )
    _identity(label, have, page)
    _macro(label, {m: [r for r in runs if label in _models(r)] for m, runs in by_metric.items()}, rep)
    _effects(label, have, page)
    _deployment(label, have, page)
    rep.heading("Missing")
    for msg in page.missing or ["nothing"]:
        rep.para(msg)
    return page


def write_page(page: EncoderPage, folder: Path) -> tuple[Path, Path]:
    """``card_<label>.md`` and a self-contained ``card_<label>.html`` in ``folder``."""
    from interbias.analysis.reporting.document import to_html, to_markdown
    from interbias.utils import atomic
    from interbias.utils.paths import readable_slug

    name = readable_slug(page.label)
    md, html = folder / f"card_{name}.md", folder / f"card_{name}.html"
    atomic.write_text(md, to_markdown(page.report, "."))
    atomic.write_text(html, to_html(page.report))
    return md, html
