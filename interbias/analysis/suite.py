"""Every analysis of one results table, computed together (``interbias analyze`` and ``report``)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from interbias.analysis import effects, read_results
from interbias.analysis.additivity import AdditivityTables, validate_additivity
from interbias.analysis.contrasts import PER_MODEL_BY, REQUIRED, ContrastTables, compute_contrasts, summarize
from interbias.analysis.effects import DESIGNS, Correction
from interbias.analysis.gaps import GapTables, compute_gaps
from interbias.analysis.options import Options
from interbias.analysis.scored_run import ScoredRun
from interbias.analysis.stats.bootstrap import Resampler, TrialDesign
from interbias.analysis.stats.cost import check_boot_time
from interbias.analysis.stats.intervals import method_name, unify
from interbias.analysis.stats.multiplicity import check_method
from interbias.analysis.stats.permutation import RunPermutations
from interbias.analysis.stats.replicates import Replicates, bootstrap_cells
from interbias.analysis.summaries import above_chance, cell_intervals, macro
from interbias.metrics import registry
from interbias.metrics.weighted_llr import CALIBRATED_METRICS, require_shared
from interbias.utils import atomic
from interbias.utils.errors import AnalysisError
from interbias.utils.progress import Reporter

#: Metrics of ``interbias analyze --metric``: those with a weighted twin (intervals, permutation
#: and paired tests need one) where lower is better (gaps and damage read that way), hence not
#: ``auc``; the calibration ones are read at the run's shared calibration
#: (:mod:`interbias.metrics.weighted_llr`).
ANALYSIS_METRICS = registry.analysable()


def metric_units(metric: str) -> str:
    """The units of a metric, as the report states them."""
    return registry.spec(metric).units


def shared_calibration_note(metric: str) -> str:
    """What the gap section says about a calibration metric's calibration ("" for the others)."""
    if metric not in CALIBRATED_METRICS:
        return ""
    return (
        f" {metric} is read at one calibration per model, fitted on the reference condition's dev trials with "
        "every group pooled and applied unchanged to every cell and group (bootstrap replicates keep it fixed): "
        "a gap is what one group pays for a system calibrated on everyone."
    )


@dataclass
class Analysis:
    options: Options
    results: pd.DataFrame
    run: ScoredRun
    contrasts: ContrastTables
    summary: pd.DataFrame
    per_model: pd.DataFrame
    gaps: GapTables
    additivity: AdditivityTables
    macro: pd.DataFrame
    above_chance: pd.DataFrame
    replicates: Replicates | None
    resampler: Resampler | None
    cells: pd.DataFrame | None
    #: The corrected design's non-target-trial replicates (None for the plain designs).
    correction: Correction | None = None
    #: The decided findings (:func:`findings`), in effect order; None without replicates.
    found: pd.DataFrame | None = None

    @property
    def interval_method(self) -> str:
        """The findings' interval method in words (``percentile`` without findings)."""
        if self.found is None or self.replicates is None or not len(self.found):
            return "percentile" if self.replicates is None else f"{self.replicates.pct} percentile interval"
        kind = str(self.found["interval"].iloc[0])
        return method_name(self.options.design, kind, self.replicates.pct, self.options.unit)


def analyse(results_path: Path, options: Options, reporter: Reporter | None = None) -> Analysis:
    """Read ``results_path`` and compute contrasts, summaries, gaps, additivity and macros;
    with ``n_boot``/``n_perm``, intervals and permutation p-values from the per-trial scores.
    ``reporter`` shows the bootstrap's progress (cells resampled)."""
    if options.metric not in ANALYSIS_METRICS:
        raise AnalysisError(registry.not_analysable(options.metric))
    check_method(options.adjust)
    if options.n_boot < 0 or options.n_perm < 0:
        raise AnalysisError("--bootstrap and --permutations must be >= 0")
    if options.design not in DESIGNS:
        raise AnalysisError(f"--bootstrap-design {options.design!r}: valid: {', '.join(DESIGNS)}")
    run = ScoredRun.open(results_path)
    if options.metric in CALIBRATED_METRICS:
        require_shared(run.calibration_record)
    results = read_results(results_path, required=REQUIRED, metric=options.metric)
    if options.metric in CALIBRATED_METRICS:  # the columns must come from one shared calibration per model
        for model in dict.fromkeys(results["model"].astype(str)):
            run.calibration(model)
    replicates = resampler = correction = None
    if options.n_boot:
        run.require_scores("bootstrap CIs")
        resampler = Resampler(run.design(), n_boot=options.n_boot, seed=options.seed, unit=options.unit)
        _check_time(results, run, options, reporter)  # after the memory check of the resampler
        with (reporter or Reporter(quiet=True)).task(f"bootstrap ({options.n_boot} replicates)", len(results)) as step:
            replicates = bootstrap_cells(results, run, options.metric, resampler, level=options.level, advance=step)
        if options.design == "corrected" and options.unit == "speaker":
            correction = _correction(results, run, options, reporter)
    permutations = None
    if options.n_perm:
        run.require_scores("permutation tests")
        run.check_against(results, options.metric)
        permutations = RunPermutations(run, options.metric, options.n_perm, options.seed)
    contrasts = compute_contrasts(results, options.metric, replicates)
    reps = contrasts.ie_replicates
    a = Analysis(
        options=options,
        results=results,
        run=run,
        contrasts=contrasts,
        summary=summarize(contrasts.contrasts, ie_replicates=reps, replicates=replicates),
        per_model=summarize(contrasts.contrasts, PER_MODEL_BY, ie_replicates=reps, replicates=replicates),
        gaps=compute_gaps(
            results,
            options.metric,
            group_factor=options.group_factor,
            resolved=run.resolved,
            floor=options.gap_floor,
            replicates=replicates,
            permutations=permutations,
        ),
        additivity=validate_additivity(results, options.metric, tolerance=options.tolerance),
        macro=macro(results, options.metric, replicates),
        above_chance=above_chance(results, options.metric),
        replicates=replicates,
        resampler=resampler,
        cells=cell_intervals(results, replicates) if replicates is not None else None,
        correction=correction,
    )
    if replicates is not None:  # one interval per effect: the findings' in every table
        a.found = findings(a)
        a.contrasts, a.gaps = unify(a.contrasts, a.gaps, a.found, a.interval_method)
    return a


def _check_time(results: pd.DataFrame, run: ScoredRun, options: Options, reporter: Reporter | None) -> None:
    """Refuse a bootstrap estimated to run past ``options.time_limit_s``; print an estimate of a
    long one (:func:`interbias.analysis.stats.cost.check_boot_time`)."""
    trials = sum(len(run.cell(str(r.model), str(r.cell)).rows) for r in results.itertuples())
    passes = 2 if options.design == "corrected" and options.unit == "speaker" else 1
    each = f"{passes} × {trials:,} trial weights of {len(results)} cell row(s)"
    check_boot_time(options.n_boot, passes * trials, each, limit_s=options.time_limit_s, reporter=reporter)


def design_constants(design: TrialDesign, cells: list[np.ndarray]) -> tuple[float, float, float, float]:
    """(n, k, ν_S, ν_N) of the corrected SE: the harmonic mean of speakers per resampling block,
    the fewest distinct non-target speaker pairs per speaker over the analysed cells (``cells``:
    each cell's design positions; fewer pairs subtract less, the conservative side), Σ (speakers −
    1) over blocks, and the fewest distinct non-target pairs of a cell − 1."""
    sizes = [len(b) for b in design.blocks()]
    n = len(sizes) / sum(1.0 / s for s in sizes)
    per, pairs = [], []
    for rows in cells:
        non = rows[~design.label[rows]]
        lo, hi = np.minimum(design.enrol[non], design.test[non]), np.maximum(design.enrol[non], design.test[non])
        pairs.append(len(np.unique(lo * len(design.speakers) + hi)))
        per.append(pairs[-1] / max(1, len(np.union1d(lo, hi))))
    return n, min(per, default=0.0), float(sum(s - 1 for s in sizes)), float(min(pairs, default=1) - 1)


def _correction(results: pd.DataFrame, run: ScoredRun, options: Options, reporter: Reporter | None) -> Correction:
    """Non-target-trial replicates of every cell (same B and seed) for the corrected SE."""
    nt = Resampler(run.design(), n_boot=options.n_boot, seed=options.seed, unit="nontarget")
    with (reporter or Reporter(quiet=True)).task("variance correction (non-target trials)", len(results)) as step:
        reps = bootstrap_cells(results, run, options.metric, nt, level=options.level, advance=step)
    cells = [run.cell(str(r.model), str(r.cell)).rows for r in results.itertuples()]
    return Correction(reps, *design_constants(run.design(), cells))


def write_tables(a: Analysis, folder: Path) -> list[Path]:
    """Write every table as CSV (and bootstrap.json with the resampling record); returns paths."""
    tables = {
        "contrasts.csv": a.contrasts.contrasts,
        "missing_terms.csv": a.contrasts.missing,
        "summary.csv": a.summary,
        "per_model.csv": a.per_model,
        "gaps.csv": a.gaps.gaps,
        "gap_summary.csv": a.gaps.summary,
        "additivity.csv": a.additivity.settings,
        "additivity_summary.csv": a.additivity.summary,
        "macro.csv": a.macro,
        "above_chance.csv": a.above_chance,
    }
    if a.cells is not None:
        tables["cell_ci.csv"] = a.cells
    paths = []
    for name, frame in tables.items():
        atomic.write_csv(folder / name, frame)
        paths.append(folder / name)
    if a.replicates is not None:
        record = {"options": asdict(a.options), **a.replicates.to_json(a.resampler)}
        atomic.write_text(folder / "bootstrap.json", json.dumps(record, indent=1, sort_keys=True) + "\n")
        paths.append(folder / "bootstrap.json")
    return paths


def support_of(a: Analysis) -> dict[tuple[str, str, str], float] | None:
    """n_nontarget·p_target of every results cell for a DCF metric (the metric's own prior where it
    has one, e.g. min_dcf's 0.01; the shared calibration's operating point otherwise); ``None``
    for other metrics."""
    metric = a.options.metric
    if metric not in effects.SKEWED:
        return None
    fixed = registry.spec(metric).p_target
    out = {}
    for r in a.results.itertuples(index=False):
        cs = a.run.cell(str(r.model), str(r.cell))
        p = fixed if fixed is not None else a.run.calibration(str(r.model)).point.p_target
        out[(str(r.experiment), str(r.model), str(r.cell))] = float((~cs.labels).sum()) * p
    return out


def findings(a: Analysis) -> pd.DataFrame:
    """The decided findings of an analysis with bootstrap replicates (its options: metric,
    adjustment, design, ``simple``)."""
    if a.found is not None:
        return a.found.copy()
    alpha = round(1 - a.replicates.level, 12)
    frame, matrix = effects.collect(
        a.results,
        a.options.metric,
        a.contrasts,
        a.gaps,
        a.replicates,
        correction=a.correction,
        simple=a.options.simple,
        support=support_of(a),
    )
    return effects.decide(frame, alpha, a.options.adjust, matrix)
