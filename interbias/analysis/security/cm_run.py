"""The analyses of a CM run (its after-run hook, :mod:`interbias.run.tasks.countermeasure`):
results rows (written by the run frame), Tables I–V, interaction contrasts, the report section (Markdown) and its figure
(fairness gap per cell)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from interbias.run.frame import Analyses, RunEnd
from interbias.run.rundir import RESULTS
from interbias.run.tasks.countermeasure import grid
from interbias.utils import atomic
from interbias.utils.errors import AnalysisError

if TYPE_CHECKING:
    from interbias.experiments.schema import Experiment

RESULT_COLUMNS = (
    "experiment", "dataset", "model", "family", "cell", "factor_a", "level_a", "ref_a", "factor_b", "level_b",
    "ref_b", "eer", "eer_ci_low", "eer_ci_high", "threshold", "n_bonafide", "n_spoof", "n_speakers", "n_failed",
    "run_id", "revision", "checkpoint_sha256", "chain_fingerprint", "seed",
)  # fmt: skip


def cm_analyses(end: RunEnd) -> Analyses:
    """The after-run analyses of a CM run: every analysis file (:func:`write_outputs`), and the
    results rows (the run frame writes them to results.csv); run.json lists the files under
    ``analyses``."""
    run = end.run
    if end.scores is None:
        raise AnalysisError(f"{run.path}: a countermeasure run ends with its scores")
    results = write_outputs(run.path, end.scores, end.detail)
    files = sorted(p.name for p in run.path.glob("cm_*") if p.name != "cm_scores.csv") + [RESULTS]
    return Analyses({"cm": files}, results)


def write_outputs(folder: Path, scores: pd.DataFrame, ctx: dict[str, Any]) -> pd.DataFrame:
    """Write every analysis file of a CM run into ``folder``; returns the results rows (for results.csv)."""
    from interbias.analysis.security import cm_fairness as cf
    from interbias.analysis.security.cm_track1 import run_table

    exp, spec = ctx["exp"], ctx["spec"]
    factors, ref, rows = grid(exp)
    thresholds = cf.dev_thresholds(scores, ref, spec["threshold"])
    report = cf.fairness_report(cf.cm_units(scores, thresholds), positive="spoof")
    for p in report.write(folder):  # the CM run's names: cm_ + the SV run's
        p.rename(folder / f"cm_{p.name}")
    ev = scores[scores["split"] == "eval"]
    boots = {
        str(m): cf.bootstrap(r, thresholds[str(m)].value, rows, n=spec["bootstrap"], seed=exp.seed, model=str(m))
        for m, r in ev.groupby("model", sort=False)
    }
    tables = cf.paper_tables(report, boots)
    atomic.write_csv(folder / "cm_tables.csv", tables)
    atomic.write_text(folder / "cm_tables.md", cf.markdown_tables(tables))
    inter = cf.interaction_table(scores, thresholds, rows, factors, boots)
    atomic.write_csv(folder / "cm_interaction.csv", inter)
    results = results_frame(ev, thresholds, boots, ctx)
    atomic.write_csv(folder / "cm_track1.csv", run_table(scores))
    figure = gap_figure(folder / "cm_gap.png", tables)
    atomic.write_text(folder / "cm_report.md", report_section(exp, results, tables, inter, figure))
    return results


def results_frame(ev: pd.DataFrame, thresholds: dict, boots: dict, ctx: dict[str, Any]) -> pd.DataFrame:
    """One row per model × cell: CM EER on eval (with its bootstrap interval) and provenance."""
    from interbias.analysis.security.cm_fairness import interval, labels01
    from interbias.metrics import verification as metrics
    from interbias.run.results import revision

    exp = ctx["exp"]
    cells = {c.id: c for c in exp.cells()}
    rev = revision()
    out = []
    for (model, cell_id), r in ev.groupby(["model", "cell"], sort=False):
        lab = labels01(r)
        lo, hi, _ = interval(boots[str(model)].get(f"{cell_id}|eer"))
        cell = cells[str(cell_id)]
        lv = dict(cell.levels)
        fa, fb = exp.factors
        out.append(
            {
                "experiment": exp.name, "dataset": exp.corpus.name, "model": model, "family": "cm", "cell": cell_id,
                "factor_a": fa.name, "level_a": lv[fa.name], "ref_a": fa.reference,
                "factor_b": fb.name, "level_b": lv[fb.name], "ref_b": fb.reference,
                "eer": metrics.eer(r["score"].to_numpy(np.float64), lab), "eer_ci_low": lo, "eer_ci_high": hi,
                "threshold": thresholds[str(model)].value, "n_bonafide": int(lab.sum()), "n_spoof": int((lab == 0).sum()),
                "n_speakers": int(r["speaker"].nunique()), "n_failed": len(ctx["failed"].get(str(cell_id), [])),
                "run_id": ctx["run_id"], "revision": rev, "checkpoint_sha256": ctx["models"][str(model)].checkpoint_sha256,
                "chain_fingerprint": cell.test_chain.fingerprint, "seed": exp.seed,
            }
        )  # fmt: skip
    return pd.DataFrame(out, columns=list(RESULT_COLUMNS))


def gap_figure(path: Path, tables: pd.DataFrame) -> str:
    """Bar chart of the female − male gap per cell (one panel per metric, bars per model)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = list(dict.fromkeys(tables["metric"]))
    fig, axes = plt.subplots(1, len(metrics), figsize=(4 * len(metrics), 3.6), sharey=False)
    for ax, name in zip(np.atleast_1d(axes), metrics, strict=True):
        t = tables[tables["metric"] == name]
        cells = list(dict.fromkeys(t["cell"]))
        models = list(dict.fromkeys(t["model"]))
        width = 0.8 / max(len(models), 1)
        for i, m in enumerate(models):
            tm = t[t["model"] == m].set_index("cell").reindex(cells)
            x = np.arange(len(cells)) + i * width
            err = np.vstack([tm["difference"] - tm["ci_low"], tm["ci_high"] - tm["difference"]])
            ax.bar(x, tm["difference"], width, label=m, yerr=np.nan_to_num(err), capsize=2)
        ax.axhline(0, color="black", lw=0.8)
        ax.set_xticks(np.arange(len(cells)) + 0.4 - width / 2, [c.replace(",", "\n") for c in cells], fontsize=7)
        ax.set_title(name.replace("_", " "), fontsize=9)
    np.atleast_1d(axes)[0].set_ylabel("female − male")
    np.atleast_1d(axes)[-1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path.name


def report_section(
    exp: Experiment, results: pd.DataFrame, tables: pd.DataFrame, inter: pd.DataFrame, figure: str
) -> str:
    """The Markdown report section: EER per cell, Tables I–V, interaction contrasts, the figure."""
    from interbias.analysis.security.cm_fairness import fmt_value, markdown_tables

    lines = [f"## Countermeasure fairness under compound conditions ({exp.name})", ""]
    lines += [
        "Threshold per model at the EER point of its clean dev scores, applied unchanged to every cell "
        "and gender; positive class = spoof; p-values Holm-adjusted across every comparison of the run; "
        "intervals: speaker-level percentile bootstrap (95 %).",
        "",
        "| model | cell | CM EER [95% CI] | bona fide | spoof | speakers | failed |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results.itertuples(index=False):
        lines.append(
            f"| {r.model} | {r.cell} | {r.eer:.4f} [{r.eer_ci_low:.4f}, {r.eer_ci_high:.4f}] | {r.n_bonafide} | "
            f"{r.n_spoof} | {r.n_speakers} | {r.n_failed} |"
        )
    lines += ["", markdown_tables(tables), "### Interaction contrast of the fairness gap", ""]
    lines += ["| model | metric | levels | IC [95% CI] |", "| --- | --- | --- | ---: |"]
    for r in inter.itertuples(index=False):
        ci = f" [{r.ci_low:+.4f}, {r.ci_high:+.4f}]" if np.isfinite(r.ci_low) else ""
        lines.append(f"| {r.model} | {r.metric} | {r.level_a} × {r.level_b} | {fmt_value(r.ic, '+.4f')}{ci} |")
    lines += ["", f"![female − male gap per cell]({figure})", ""]
    return "\n".join(lines)
