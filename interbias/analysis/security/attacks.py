"""Attack success by group (attacks.csv of a run with ``attacks:``; :mod:`interbias.run.attack_stage`).

- ``attack_summary.csv``: per model, cell, kind, method, norm and budget the success rate
  (impostor: share of attacked non-targets accepted; lock-out: share of attacked targets
  rejected) over the attacked trials, mean achieved L∞, SNR and queries, and a 95 % percentile
  interval from the speaker bootstrap (:class:`interbias.analysis.stats.bootstrap.Resampler` over the
  attacked trials; a replicate's rate is Σ w·success / Σ w with w the trial multiplicities),
  ``unchanged`` (trials whose decision the attacked audio leaves as the clean trial's: the budget
  cannot change it) and ``kept_clean`` (trials where no iterate within the budget moved the score
  toward the attacker's goal, so the unperturbed audio was kept; 0 for the clean budget).
- ``attack_gaps.csv``: per population factor, each level's success rate minus the reference
  level's (term ``gap``), and, per acoustic factor, how that gap changes from the reference
  level to each other level (term ``gap_change``, a difference of differences), with the
  project's one interval rule (:mod:`interbias.analysis.effect_rule`): the corrected-SE
  Student-t 95 % interval from the same speaker and non-target-pair resamples of every rate,
  Holm over the rows of the table that have a p-value (the family is the run's attack gaps),
  and "too few speakers" (never resolved, left out of the family) when a cell the row reads
  holds fewer than 5 speakers; ``resolved`` only for a Holm-adjusted p below 0.05.
- ``attack_curves.png``: success rate against budget, one panel per model × kind, one line per
  group and acoustic level, with the intervals.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from interbias.analysis.effect_rule import TOO_FEW, Resamplers, corrected_interval, decide
from interbias.analysis.reporting.plots import legend_outside, new_figure, palette, png
from interbias.analysis.reporting.registry import report_section
from interbias.analysis.stats.bootstrap import TrialDesign, percentile_ci
from interbias.utils import atomic

if TYPE_CHECKING:
    from interbias.analysis.reporting.document import Report
    from interbias.analysis.suite import Analysis

SUMMARY = "attack_summary.csv"
GAPS = "attack_gaps.csv"
CURVES = "attack_curves.png"
KEYS = ["model", "cell", "kind", "method", "norm", "budget"]
N_BOOT = 1000
LEVEL = 0.95
ALPHA = 0.05


@dataclass(frozen=True)
class Rate:
    """One KEYS group's success rate, its speaker and non-target-pair bootstrap replicates
    (Σ w·success / Σ w per replicate) and its trials' design positions."""

    rate: float
    speaker: np.ndarray
    pairs: np.ndarray
    rows: np.ndarray


def replicates(table: pd.DataFrame, n_boot: int, seed: int) -> tuple[Resamplers, dict[tuple, Rate]]:
    """The resamplers of the attacked trials and, per KEYS group, its :class:`Rate`."""
    design = TrialDesign.from_frame(
        table.drop_duplicates("trial_id")[["trial_id", "stratum", "label", "enrol_speaker", "test_speaker"]]
    )
    boot = Resamplers.of(design, n_boot, seed)
    out = {}
    for key, sub in table.groupby(KEYS, sort=True):
        rows = design.rows(sub["trial_id"].to_numpy())
        success = sub["success"].to_numpy(np.float64)
        reps = []
        for resampler in (boot.speaker, boot.pairs):
            w = resampler.weights(rows)
            total = w.sum(axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                reps.append(np.where(total > 0, w @ success / total, np.nan))
        out[key] = Rate(float(sub["success"].mean()), reps[0], reps[1], rows)
    return boot, out


def summary_table(table: pd.DataFrame, reps: dict[tuple, Rate], factors: list[str]) -> pd.DataFrame:
    rows = []
    for key, sub in table.groupby(KEYS, sort=True):
        rate = reps[key].rate
        lo, hi, _ = percentile_ci(reps[key].speaker[None, :], LEVEL)
        first = sub.iloc[0]
        rows.append(
            {
                **dict(zip(KEYS, key, strict=True)),
                **{f: first[f] for f in factors},
                "stratum": first["stratum"],
                "n": len(sub),
                "success_rate": rate,
                "ci_low": float(lo[0]),
                "ci_high": float(hi[0]),
                "mean_linf": float(sub["linf"].mean()),
                "mean_snr_db": float(sub["snr_db"].mean()),
                "mean_queries": float(sub["queries"].mean()),
                **decisions(sub),
            }
        )
    return pd.DataFrame(rows)


def decisions(sub: pd.DataFrame) -> dict[str, int]:
    """``unchanged`` and ``kept_clean`` counts of one summary group (module docs); each left out
    when the table lacks its columns (a table written before they were recorded)."""
    out = {}
    if {"clean_score", "threshold"} <= set(sub.columns):
        accepted = sub["clean_score"] >= sub["threshold"]
        clean_success = np.where(sub["kind"] == "impostor", accepted, ~accepted).astype(int)
        out["unchanged"] = int((sub["success"].to_numpy() == clean_success).sum())
    if "kept_step" in sub.columns:
        budget = sub["budget"].astype(float)
        clean_budget = np.where(sub["norm"] == "linf", budget == 0, np.isinf(budget))
        out["kept_clean"] = int(((sub["kept_step"] == 0).to_numpy() & ~clean_budget).sum())
    return out


def _cell_of(levels: dict[str, str], order: list[str]) -> str:
    return ",".join(f"{f}={levels[f]}" for f in order)


def gap_table(summary: pd.DataFrame, boot: Resamplers, reps: dict, factors: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """``gap`` and ``gap_change`` rows (module docs); ``factors``: name -> {type, reference, levels}."""
    order = list(factors)
    pops = [f for f in order if factors[f]["type"] == "population"]
    acoustic = [f for f in order if factors[f]["type"] == "acoustic"]
    rows = []
    for rec in summary.itertuples(index=False):
        levels = {f: getattr(rec, f) for f in order}
        base = tuple(getattr(rec, k) for k in KEYS)
        for g in pops:
            ref = factors[g]["reference"]
            if levels[g] == ref:
                continue

            def pair(lv: dict[str, str], g: str = g, ref: str = ref, base: tuple = base) -> tuple[Rate, Rate]:
                return tuple(reps[(base[0], _cell_of(x, order), *base[2:])] for x in (lv, {**lv, g: ref}))  # type: ignore[return-value]

            here = pair(levels)
            rows.append(_gap_row(rec, g, levels[g], ref, "gap", "", boot, here, ()))
            for a in acoustic:
                if levels[a] != factors[a]["reference"]:
                    there = pair({**levels, a: factors[a]["reference"]})
                    rows.append(_gap_row(rec, g, levels[g], ref, "gap_change", f"{a}={levels[a]}", boot, here, there))
    return decide(pd.DataFrame(rows), "", ALPHA) if rows else pd.DataFrame(rows)


def _gap_row(
    rec: Any, factor: str, level: str, ref: str, term: str, under: str, boot: Resamplers, here: tuple, there: tuple
) -> dict:
    """One row: the gap ``here`` (group's rate − reference's), minus the gap ``there`` for a
    ``gap_change``, with :func:`~interbias.analysis.effect_rule.corrected_interval` over the
    cells it reads (speakers: the fewest of any of them)."""

    def diff(part: str) -> np.ndarray | float:
        value = getattr(here[0], part) - getattr(here[1], part)
        return value - (getattr(there[0], part) - getattr(there[1], part)) if there else value

    cells = [*here, *there]
    found = corrected_interval(
        float(diff("rate")),
        np.asarray(diff("speaker")),
        np.asarray(diff("pairs")),
        boot.correction([c.rows for c in cells]),
        min(boot.speakers(c.rows) for c in cells),
        LEVEL,
    )
    keys = {k: getattr(rec, k) for k in ("model", "cell", "kind", "method", "norm", "budget")}
    return {**keys, "factor": factor, "level": level, "reference": ref, "term": term, "versus": under,
            "estimate": float(diff("rate")), **found}  # fmt: skip


def curves_figure(summary: pd.DataFrame, factors: list[str]) -> bytes:
    """Success rate against budget per model × kind, one line per factor-level combination."""
    panels = sorted(summary.groupby(["model", "kind", "method"]).groups)
    fig = new_figure(4.2 * min(len(panels), 2), 3.2 * ((len(panels) + 1) // 2))
    axes = fig.subplots((len(panels) + 1) // 2, min(len(panels), 2), squeeze=False).ravel()
    series = sorted(summary.groupby(factors).groups) if factors else [()]
    colours = palette(len(series))
    handles = []
    for ax, (model, kind, method) in zip(axes, panels, strict=False):
        sub = summary[(summary["model"] == model) & (summary["kind"] == kind) & (summary["method"] == method)]
        for colour, levels in zip(colours, series, strict=True):
            levels = levels if isinstance(levels, tuple) else (levels,)
            line = sub[np.logical_and.reduce([sub[f] == lv for f, lv in zip(factors, levels, strict=True)])]
            line = line.sort_values("budget")
            x = np.arange(len(line))
            err = [line["success_rate"] - line["ci_low"], line["ci_high"] - line["success_rate"]]
            h = ax.errorbar(x, line["success_rate"], yerr=err, color=colour, marker="o", capsize=2)
            ax.set_xticks(x, [f"{b:g}" for b in line["budget"]])
            if len(handles) < len(series):
                handles.append((h, ", ".join(levels)))
        ax.set_title(f"{model}: {kind} ({method})", fontsize=9)
        ax.set_xlabel(f"budget ({sub['norm'].iloc[0]})")
        ax.set_ylabel("success rate")
        ax.set_ylim(-0.02, 1.02)
    for ax in axes[len(panels) :]:
        ax.set_visible(False)
    legend_outside(fig, [h for h, _ in handles], [lab for _, lab in handles])
    return png(fig)


def attack_analysis(run_path: Path, resolved: dict[str, Any], *, n_boot: int = N_BOOT) -> list[str] | None:
    """Write the three outputs beside attacks.csv (None when the run has none); their names."""
    src = Path(run_path) / "attacks.csv"
    if not src.is_file():
        return None
    table = pd.read_csv(src, keep_default_na=False, dtype={"cell": str, "stratum": str})
    factors = {f["name"]: {"type": f["type"], "reference": str(f["reference"])} for f in resolved.get("factors") or []}
    for f in factors:
        table[f] = table[f].astype(str)
    boot, reps = replicates(table, n_boot, int(resolved.get("seed", 0) or 0))
    summary = summary_table(table, reps, list(factors))
    atomic.write_csv(Path(run_path) / SUMMARY, summary)
    atomic.write_csv(Path(run_path) / GAPS, gap_table(summary, boot, reps, factors))
    atomic.write_bytes(Path(run_path) / CURVES, curves_figure(summary, list(factors)))
    return [SUMMARY, GAPS, CURVES]


def attack_section(folder: Path, rep: Any) -> None:
    """The report's section on the attack tables and curves, when the run wrote them."""
    from interbias.analysis.reporting.document import Figure

    folder = Path(folder)
    if not (folder / SUMMARY).is_file():
        return

    def budgets(frame: pd.DataFrame) -> pd.DataFrame:  # as written (the report's number format rounds to 0.001)
        return frame.assign(budget=frame["budget"].map(lambda b: f"{float(b):g}")) if len(frame) else frame

    summary = budgets(pd.read_csv(folder / SUMMARY))
    gaps = budgets(pd.read_csv(folder / GAPS, keep_default_na=False) if (folder / GAPS).is_file() else pd.DataFrame())
    rep.heading("Adversarial attacks")
    rep.para(
        "Success rate of the attacks by group at each model's dev threshold (impostor: attacked non-targets "
        "accepted; lockout: attacked targets rejected); budget 0 is the clean trials rescored. Intervals: 95 % "
        f"speaker bootstrap ({N_BOOT} replicates) over the attacked trials ({SUMMARY})."
    )
    rep.para(
        "unchanged: attacked trials whose decision is the clean trial's (the budget did not change it); kept_clean: "
        "trials where nothing within the budget moved the score toward the attacker's goal, so the unperturbed "
        "audio was kept (an attack keeps its best iterate, and a larger budget at least a smaller one's)."
    )
    cols = [
        "n",
        "success_rate",
        "ci_low",
        "ci_high",
        "unchanged",
        "kept_clean",
        "mean_linf",
        "mean_snr_db",
        "mean_queries",
    ]
    rep.table(summary, [*KEYS, *(c for c in cols if c in summary.columns)])
    if len(gaps):
        n_res = int(gaps["resolved"].astype(str).str.lower().eq("true").sum())
        few = int((gaps["status"].astype(str) == TOO_FEW).sum()) if "status" in gaps.columns else 0
        rep.para(
            f"Group gaps in success rate and their change under each acoustic level ({GAPS}): {n_res} of {len(gaps)} "
            f"resolved after Holm over the {len(gaps) - few} tested; {few} with too few speakers (a cell under 5), "
            "never tested. Intervals: the findings' 95 % corrected-SE t interval, per comparison (unadjusted)."
        )
        cols = ["model", "cell", "kind", "method", "budget", "term", "versus", "estimate", "lo", "hi", "p_holm",
                "speakers", "status"]  # fmt: skip
        rep.table(gaps, [c for c in cols if c in gaps.columns])
    if (folder / CURVES).is_file():
        caption = "Success rate against budget per group and acoustic level, with speaker-bootstrap intervals."
        rep.figure(Figure("attack_curves", "Attack success against budget", caption, (folder / CURVES).read_bytes()))


@report_section("attacks", 130)
def attack_report_section(a: Analysis, rep: Report) -> None:
    """:func:`attack_section` of the analysed run."""
    attack_section(a.run.path, rep)
