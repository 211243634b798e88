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
  level to each other level (term ``gap_change``, a difference of differences); both from the
  same replicates, with a two-sided bootstrap p-value (``p_boot``) Holm-adjusted over every row
  of the table (``p_holm``; the family is the run's attack gaps), ``resolved`` when ``p_holm`` < 0.05.
- ``attack_curves.png``: success rate against budget, one panel per model × kind, one line per
  group and acoustic level, with the intervals.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from interbias.analysis.reporting.plots import legend_outside, new_figure, palette, png
from interbias.analysis.reporting.registry import report_section
from interbias.analysis.stats.bootstrap import Resampler, TrialDesign, percentile_ci
from interbias.analysis.stats.multiplicity import adjust
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


def replicates(table: pd.DataFrame, n_boot: int, seed: int) -> dict[tuple, tuple[float, np.ndarray]]:
    """Per KEYS group: (success rate, its ``n_boot`` speaker-bootstrap replicates)."""
    design = TrialDesign.from_frame(
        table.drop_duplicates("trial_id")[["trial_id", "stratum", "label", "enrol_speaker", "test_speaker"]]
    )
    resampler = Resampler(design, n_boot=n_boot, seed=seed)
    out = {}
    for key, sub in table.groupby(KEYS, sort=True):
        w = resampler.weights(design.rows(sub["trial_id"].to_numpy()))
        total = w.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            reps = np.where(total > 0, w @ sub["success"].to_numpy(np.float64) / total, np.nan)
        out[key] = (float(sub["success"].mean()), reps)
    return out


def summary_table(table: pd.DataFrame, reps: dict[tuple, tuple[float, np.ndarray]], factors: list[str]) -> pd.DataFrame:
    rows = []
    for key, sub in table.groupby(KEYS, sort=True):
        rate, r = reps[key]
        lo, hi, _ = percentile_ci(r[None, :], LEVEL)
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


def gap_table(summary: pd.DataFrame, reps: dict, factors: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """``gap`` and ``gap_change`` rows (module docs); ``factors``: name -> {type, reference, levels}."""
    order = list(factors)
    pops = [f for f in order if factors[f]["type"] == "population"]
    acoustic = [f for f in order if factors[f]["type"] == "acoustic"]
    rows = []
    for rec in summary.itertuples(index=False):
        levels = {f: getattr(rec, f) for f in order}
        for g in pops:
            ref = factors[g]["reference"]
            if levels[g] == ref:
                continue
            base = tuple(getattr(rec, k) for k in KEYS)

            def gap(lv: dict[str, str], g: str = g, ref: str = ref, base: tuple = base) -> tuple[float, np.ndarray]:
                a = reps[(base[0], _cell_of(lv, order), *base[2:])]
                b = reps[(base[0], _cell_of({**lv, g: ref}, order), *base[2:])]
                return a[0] - b[0], a[1] - b[1]

            est, r = gap(levels)
            rows.append(_gap_row(rec, g, levels[g], ref, "gap", "", est, r))
            for a in acoustic:
                if levels[a] == factors[a]["reference"]:
                    continue
                est0, r0 = gap({**levels, a: factors[a]["reference"]})
                rows.append(_gap_row(rec, g, levels[g], ref, "gap_change", f"{a}={levels[a]}", est - est0, r - r0))
    out = pd.DataFrame(rows)
    if len(out):
        out["p_holm"] = adjust(out["p_boot"].to_numpy(), "holm")
        out["resolved"] = out["p_holm"] < ALPHA
    return out


def _gap_row(rec: Any, factor: str, level: str, ref: str, term: str, under: str, est: float, reps: np.ndarray) -> dict:
    lo, hi, _ = percentile_ci(reps[None, :], LEVEL)
    return {
        "model": rec.model,
        "cell": rec.cell,
        "kind": rec.kind,
        "method": rec.method,
        "norm": rec.norm,
        "budget": rec.budget,
        "factor": factor,
        "level": level,
        "reference": ref,
        "term": term,
        "versus": under,
        "estimate": est,
        "ci_low": float(lo[0]),
        "ci_high": float(hi[0]),
        "p_boot": bootstrap_p(reps),
    }


def bootstrap_p(reps: np.ndarray) -> float:
    """Two-sided bootstrap p-value of a difference: 2·min(P(r ≤ 0), P(r ≥ 0)) over the finite
    replicates, at most 1 (NaN without any)."""
    r = reps[np.isfinite(reps)]
    if not len(r):
        return float("nan")
    return float(min(1.0, 2 * min(np.mean(r <= 0), np.mean(r >= 0))))


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
    reps = replicates(table, n_boot, int(resolved.get("seed", 0) or 0))
    summary = summary_table(table, reps, list(factors))
    atomic.write_csv(Path(run_path) / SUMMARY, summary)
    atomic.write_csv(Path(run_path) / GAPS, gap_table(summary, reps, factors))
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
        rep.para(
            f"Group gaps in success rate and their change under each acoustic level ({GAPS}): {n_res} of {len(gaps)} "
            "resolved (bootstrap p-value Holm-adjusted over all of them below 0.05; the intervals are per comparison)."
        )
        rep.table(gaps, ["model", "cell", "kind", "method", "budget", "term", "versus", "estimate", "ci_low",
                         "ci_high", "p_holm", "resolved"])  # fmt: skip
    if (folder / CURVES).is_file():
        caption = "Success rate against budget per group and acoustic level, with speaker-bootstrap intervals."
        rep.figure(Figure("attack_curves", "Attack success against budget", caption, (folder / CURVES).read_bytes()))


@report_section("attacks", 130)
def attack_report_section(a: Analysis, rep: Report) -> None:
    """:func:`attack_section` of the analysed run."""
    attack_section(a.run.path, rep)
