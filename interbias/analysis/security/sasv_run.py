"""ASV + CM fusion of a verification run whose trials also carry countermeasure scores: sasv_fusion.csv.

A spoofing run that names countermeasures (``spoofing.countermeasures`` or ``interbias run
--cm``; :mod:`interbias.run.cm_stage`) holds, beside its ASV score files, ``cm_trials.parquet``
(:data:`interbias.run.rundir.CM_TRIALS`): one row per (CM, cell, eval trial), columns ``cm`` (CM
label), ``cell``, ``trial_id``, ``cm_score`` (the CM's score of the trial's test audio through
the cell's chain, higher = bona fide) and ``calibrated`` (True: ``cm_score`` is a calibrated
natural-log LLR; one value per CM), and ``cm_dev.parquet`` (the CMs' scores of dev-split bona
fide and spoof utterances in the reference cells). For such a run :func:`sasv_fusion_for_run`
gives, per ASV model × CM × cell × group, over the eval trials the ASV scored (not dropped):

- ASV llr: the run's linear calibration (calibration.json, ``CalibrationRecord.for_cell``)
  applied to the cell's ``score`` (draw 0's in runs with operator draws);
- CM llr: ``cm_score`` when ``calibrated``; else a prior-weighted logistic calibration
  (:func:`interbias.metrics.logistic.fit_logistic`, π = 0.5, Platt-smoothed labels) fitted per CM
  in the reference cells (every acoustic factor at its reference level) on its cm_dev.parquet
  rows, or, in a run without that file, on the dev trials of cm_trials.parquet; bona fide = 1,
  spoof = 0; column ``cm_calibration`` says which
  (``calibrated`` or ``logistic-dev``);
- ``a_dcf_asv`` (the minimum a-DCF of the ASV llr alone: what the CM adds is its difference
  to the fused ones), ``a_dcf_sum``, ``a_dcf_product``, ``t_eer`` and the counts of
  :func:`interbias.metrics.sasv_fusion.sasv_row` (ASVspoof 5 a-DCF costs);
- ``cm_eer``: the CM's own EER over the slice's eval trials (bona fide = target and non-target
  trials, against spoof; on its llr);
- ``a_dcf_change`` = a_dcf_sum − a_dcf_asv (negative: the CM lowers the cost, better) with the findings'
  interval rule (:mod:`interbias.analysis.effect_rule`): the corrected-SE Student-t 95 % interval
  ``a_dcf_change_lo``/``a_dcf_change_hi`` from :data:`N_BOOT` speaker and non-target-pair replicates (the
  same resample for both terms, the calibrations held fixed;
  :func:`interbias.metrics.sasv.a_dcf_weighted`), ``a_dcf_change_bias`` (replicate mean − estimate),
  ``a_dcf_change_speakers``, Holm over every row of the table (``a_dcf_change_p_holm``) and
  ``a_dcf_change_status``: resolved, not resolved, too few speakers (a slice of fewer than
  :data:`~interbias.analysis.groups.fairness_cluster.MIN_SPEAKERS`: never resolved) or no interval;
  ``a_dcf_change_resolved`` is True only for resolved. Groups: ``all`` and,
  per fairness attribute (``group_by``), the value both sides of a trial share (as fairness.csv).
  A slice lacking a trial class keeps its counts and has empty metrics.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from interbias.analysis.effect_rule import FIELDS, NO_INTERVAL, Resamplers, corrected_interval, decide
from interbias.analysis.groups.fairness_stats import pair_groups
from interbias.analysis.reporting.document import Report
from interbias.analysis.reporting.numbers import format_value
from interbias.analysis.reporting.registry import report_section
from interbias.analysis.stats.bootstrap import TrialDesign
from interbias.experiments.schema import FairnessSpec
from interbias.metrics.logistic import fit_logistic
from interbias.metrics.sasv import ADCFCost, a_dcf, a_dcf_weighted
from interbias.metrics.sasv_fusion import COLUMNS as FUSION_COLUMNS
from interbias.metrics.sasv_fusion import KEYS, sasv_row, sum_fusion
from interbias.metrics.verification import eer
from interbias.run.cm_stage import DEV_COLUMNS, TRIAL_COLUMNS
from interbias.run.measured import in_split, kept
from interbias.run.rundir import ATTRIBUTES, CM_DEV, CM_TRIALS, SASV_FUSION, RunDir
from interbias.trials.sampler import population_attributes
from interbias.utils.errors import AnalysisError, InterbiasError

if TYPE_CHECKING:
    from interbias.analysis.suite import Analysis
    from interbias.experiments.schema import Experiment

COLUMNS = [
    "model", "cm", "cell", "group_by", "group", "cm_calibration", "a_dcf_asv", *FUSION_COLUMNS,
    "cm_eer", "a_dcf_change", *(f"a_dcf_change_{f}" for f in FIELDS),
]  # fmt: skip
#: Speaker-bootstrap replicates of the CM's gain (master seed :data:`SEED`).
N_BOOT = 500
SEED = 0
CM_COLUMNS = TRIAL_COLUMNS
#: The numeric columns of sasv_fusion.csv: the four metrics (the report's order), then the CM's gain and its bounds.
METRICS = (
    "a_dcf_asv", "a_dcf_sum", "a_dcf_product", "t_eer", "cm_eer",
    "a_dcf_change", "a_dcf_change_lo", "a_dcf_change_hi", "a_dcf_change_se",
)  # fmt: skip
#: The change's columns as older tables named them (``cm_gain``, same sign), read as today's.
OLD_NAMES = {"cm_gain": "a_dcf_change"}
#: The prior of the CM side's logistic calibration (bona fide share in the fit's objective).
CM_PRIOR = 0.5


def read_cm_trials(run: RunDir) -> pd.DataFrame | None:
    """cm_trials.parquet checked (module doc), or None when the run has none."""
    path = run.file(CM_TRIALS)
    if not path.is_file():
        return None
    frame = pd.read_parquet(path)
    missing = [c for c in CM_COLUMNS if c not in frame.columns]
    if missing:
        raise AnalysisError(f"{path}: lacks column(s) {', '.join(missing)} (needs {', '.join(CM_COLUMNS)})")
    scores = pd.to_numeric(frame["cm_score"], errors="coerce").to_numpy(dtype=np.float64)
    if not np.isfinite(scores).all():
        i = int(np.flatnonzero(~np.isfinite(scores))[0])
        raise AnalysisError(
            f"{path}: cm_score {str(frame['cm_score'].iloc[i])!r} on row {i + 1} is not a finite number"
        )
    mixed = sorted(str(c) for c, p in frame.groupby("cm")["calibrated"] if p.astype(bool).nunique() > 1)
    if mixed:
        raise AnalysisError(f"{path}: CM {mixed[0]!r} has calibrated and uncalibrated rows; one value per CM")
    return frame.assign(cm_score=scores, calibrated=frame["calibrated"].astype(bool))


def reference_cells(results: pd.DataFrame, exp: Experiment) -> set[str]:
    """Cells of ``results`` with every acoustic factor at its reference level."""
    acoustic = {f.name: str(f.reference) for f in exp.acoustic_factors}
    out = set()
    for row in results.drop_duplicates("cell").itertuples(index=False):
        levels = {getattr(row, f"factor_{x}"): getattr(row, f"level_{x}") for x in "abc"}
        if all(levels.get(f) == ref for f, ref in acoustic.items()):
            out.add(str(row.cell))
    return out


def read_cm_dev(run: RunDir) -> pd.DataFrame | None:
    """cm_dev.parquet (the CM stage's dev rows: cm, cell, id, cm_class, cm_score), or None."""
    path = run.file(CM_DEV)
    if not path.is_file():
        return None
    frame = pd.read_parquet(path)
    missing = [c for c in DEV_COLUMNS if c not in frame.columns]
    if missing:
        raise AnalysisError(f"{path}: lacks column(s) {', '.join(missing)}")
    return frame


def dev_material(
    cm: str, part: pd.DataFrame, trials: pd.DataFrame, ref_cells: set[str], dev_rows: pd.DataFrame | None
) -> tuple[np.ndarray, np.ndarray]:
    """(scores, bona fide labels) one CM is calibrated on: its rows of cm_dev.parquet in the
    reference cells when the run has that file, else its dev trials there in cm_trials.parquet."""
    if dev_rows is not None:
        dev = dev_rows[(dev_rows["cm"].astype(str) == cm) & dev_rows["cell"].astype(str).isin(ref_cells)]
        return dev["cm_score"].to_numpy(dtype=np.float64), (dev["cm_class"] == "bonafide").to_numpy()
    dev = part[part["cell"].astype(str).isin(ref_cells)].join(trials[["split", "trial_type"]], on="trial_id")
    dev = dev[in_split(dev, "dev")]
    return dev["cm_score"].to_numpy(dtype=np.float64), (dev["trial_type"] != "spoof").to_numpy()


def cm_llr(
    part: pd.DataFrame, trials: pd.DataFrame, ref_cells: set[str], dev_rows: pd.DataFrame | None = None
) -> tuple[np.ndarray, str]:
    """One CM's llr per row of ``part`` and how it was obtained (module doc)."""
    scores = part["cm_score"].to_numpy(dtype=np.float64)
    if part["calibrated"].all():
        return scores, "calibrated"
    cm = str(part["cm"].iloc[0])
    dev, labels = dev_material(cm, part, trials, ref_cells, dev_rows)
    if not len(dev) or labels.all() or not labels.any():
        raise AnalysisError(
            f"CM {cm} is not calibrated and the reference cells ({', '.join(sorted(ref_cells)) or 'none'}) have no "
            "dev trials of both classes (bona fide, spoof) to fit its calibration on"
        )
    try:
        fit = fit_logistic(dev[:, None], labels, ("cm_score",), prior=CM_PRIOR)
    except InterbiasError as exc:
        raise AnalysisError(f"CM {cm}: calibration on the dev trials: {exc}") from None
    return fit.llr(scores[:, None]), "logistic-dev"


def _slices(frame: pd.DataFrame, groups: dict[str, np.ndarray]) -> Iterator[tuple[str, str, np.ndarray]]:
    """(group_by, group, row mask): ``all``, then each group of each attribute."""
    yield "", "all", np.ones(len(frame), dtype=bool)
    for attr, values in groups.items():
        for g in sorted(set(values)):
            yield attr, str(g), values == g


def slice_row(frame: pd.DataFrame, cost: ADCFCost, boot: SliceBoot | None = None) -> dict[str, Any]:
    """:func:`sasv_row`, ``a_dcf_asv`` and the CM's gain with the one interval rule of
    :mod:`interbias.analysis.effect_rule` (``boot``: the slice's replicate weights, correction and
    speakers); its counts and empty metrics when it lacks a class."""
    counts = {f"n_{k}": int((frame["key"] == k).sum()) for k in KEYS}
    gain_cols = {f"a_dcf_change_{f}": float("nan") for f in FIELDS if f not in ("status", "resolved", "p_holm")}
    if min(counts.values()) == 0:
        empty = dict.fromkeys(("a_dcf_asv", "a_dcf_sum", "a_dcf_product", "t_eer", "cm_eer", "a_dcf_change"), np.nan)
        return {**empty, **counts, **gain_cols, "a_dcf_change_status": NO_INTERVAL}
    asv = [frame.loc[frame["key"] == k, "asv_llr"].to_numpy() for k in KEYS]
    row = {"a_dcf_asv": a_dcf(*asv, cost)[0], **sasv_row(frame, cost)}
    row["cm_eer"] = eer(frame["cm_llr"].to_numpy(), (frame["key"] != "spoof").to_numpy())
    row["a_dcf_change"] = row["a_dcf_sum"] - row["a_dcf_asv"]
    if boot is None:
        return {**row, **gain_cols, "a_dcf_change_status": NO_INTERVAL}
    keys = frame["key"].to_numpy()
    fused = [sum_fusion(*(frame.loc[frame["key"] == k, c] for c in ("asv_llr", "cm_llr"))) for k in KEYS]

    def gain(weights: np.ndarray) -> np.ndarray:
        w = tuple(weights[:, keys == k] for k in KEYS)
        return a_dcf_weighted(tuple(fused), w, cost) - a_dcf_weighted(tuple(asv), w, cost)

    found = corrected_interval(row["a_dcf_change"], gain(boot.w_s), gain(boot.w_n), boot.corr, boot.speakers)
    return {**row, **{f"a_dcf_change_{k}": v for k, v in found.items()}}


@dataclass(frozen=True)
class SliceBoot:
    """A slice's speaker and non-target replicate weights (B × trials), its correction and speakers."""

    w_s: np.ndarray
    w_n: np.ndarray
    corr: Any
    speakers: int


def fusion_frame(
    run: RunDir, trials: pd.DataFrame, model: str, cell: str, cal: tuple[float, float], cm: pd.DataFrame
) -> pd.DataFrame:
    """The eval trials of ``model`` × ``cell`` the ASV scored, with ``asv_llr``, ``cm_llr``, ``key``
    (``trials``: the run's trial list indexed by trial_id)."""
    if not run.scores_path(model, cell).is_file():
        raise AnalysisError(f"{run.path.name}: scores of {model} / {cell} are missing")
    sc = run.read_scores(model, cell).set_index("trial_id")
    sc = sc.join(trials[[c for c in ("split", "trial_type", "enrol", "test") if c not in sc.columns]])
    sc = sc[in_split(sc, "eval") & kept(sc)]
    side = cm[cm["cell"].astype(str) == cell].set_index("trial_id")["cm_llr"]
    absent = sc.index.difference(side.index)
    if len(absent):
        raise AnalysisError(f"{run.path.name}: {cell}: {len(absent)} eval trial(s) have no CM score, e.g. {absent[0]}")
    slope, offset = cal
    return pd.DataFrame(
        {"asv_llr": slope * sc["score"].to_numpy(dtype=np.float64) + offset,
         "cm_llr": side.reindex(sc.index).to_numpy(), "key": sc["trial_type"].astype(str).to_numpy(),
         "enrol": sc["enrol"].to_numpy(), "test": sc["test"].to_numpy()},
        index=sc.index,
    )  # fmt: skip


def trial_groups(frame: pd.DataFrame, table: pd.DataFrame | None, attrs: list[str]) -> dict[str, np.ndarray]:
    """Per attribute, each trial's group: the value its two sides share (``pair_groups``)."""
    if table is None:
        return {}
    return {
        a: pair_groups(table[a].reindex(frame["enrol"]).tolist(), table[a].reindex(frame["test"]).tolist())
        for a in attrs
    }


def asv_calibrations(run: RunDir, results: pd.DataFrame) -> dict[tuple[str, str], tuple[float, float]]:
    """(model, cell) -> the (slope, offset) the run's calibration applies there; an error when one is missing."""
    record = run.read_calibration(AnalysisError)
    out = {}
    for model, cell in results[["model", "cell"]].drop_duplicates().itertuples(index=False):
        cal = record.for_cell(model, cell) if record is not None else None
        if cal is None:
            why = record.lacks_shared() if record is not None else "the run has no calibration record"
            raise AnalysisError(f"{run.path.name}: {model} has no ASV calibration for {cell} ({why})")
        out[(str(model), str(cell))] = cal
    return out


def sasv_fusion_for_run(run: RunDir, cost: ADCFCost = ADCFCost()) -> pd.DataFrame | None:
    """sasv_fusion.csv's table (module doc), or None when the run has no CM scores per trial."""
    cm = read_cm_trials(run)
    if cm is None:
        return None
    exp = run.experiment(AnalysisError)
    trials = run.read_trials().frame.set_index("trial_id")
    if exp is None or "trial_type" not in trials.columns:
        raise AnalysisError(f"{run.path.name}: {CM_TRIALS} needs a spoofing experiment (trials with trial_type)")
    results = run.read_results(dtype=str, keep_default_na=False)
    cals = asv_calibrations(run, results)
    refs = reference_cells(results, exp)
    dev_rows = read_cm_dev(run)
    parts = []
    for _, part in cm.groupby("cm", sort=True):
        llr, how = cm_llr(part, trials, refs, dev_rows)
        parts.append(part.assign(cm_llr=llr, cm_calibration=how))
    cm = pd.concat(parts)
    attrs = list((exp.fairness or FairnessSpec()).groups or ())
    if attrs and not run.file(ATTRIBUTES).is_file():
        raise AnalysisError(f"{run.path.name}: the fairness groups {', '.join(attrs)} need {ATTRIBUTES}")
    table = pd.read_parquet(run.file(ATTRIBUTES)).set_index("id") if attrs else None
    absent = [a for a in attrs if table is not None and a not in table.columns]
    if absent:
        raise AnalysisError(f"{run.path.name}: fairness group attribute(s) {', '.join(absent)} not in {ATTRIBUTES}")
    boot = Resamplers.of(TrialDesign.from_frame(trials.reset_index()), N_BOOT, SEED)
    rows = []
    for (model, cell), cal in cals.items():
        for name, side in cm.groupby("cm", sort=True):
            frame = fusion_frame(run, trials, model, cell, cal, side)
            groups = trial_groups(frame, table, attrs)
            at = boot.design.rows(frame.index.to_numpy())
            w_s, w_n = boot.speaker.weights(at), boot.pairs.weights(at)
            keys = {"model": model, "cm": name, "cell": cell, "cm_calibration": side["cm_calibration"].iloc[0]}
            for attr, group, mask in _slices(frame, groups):
                sl = SliceBoot(w_s[:, mask], w_n[:, mask], boot.correction([at[mask]]), boot.speakers(at[mask]))
                rows.append({**keys, "group_by": attr, "group": group, **slice_row(frame[mask], cost, sl)})
    return decide(pd.DataFrame(rows), "a_dcf_change_").reindex(columns=COLUMNS)


def write_sasv_fusion(run: RunDir) -> str | None:
    """Write sasv_fusion.csv when the run has CM scores per trial; its name, else None. A table
    from an earlier analysis is removed first, so a refusal leaves none behind."""
    from interbias.utils import atomic

    run.file(SASV_FUSION).unlink(missing_ok=True)
    table = sasv_fusion_for_run(run)
    if table is None:
        return None
    atomic.write_csv(run.file(SASV_FUSION), table)
    return SASV_FUSION


def read_sasv_fusion(folder: Path) -> pd.DataFrame | None:
    """sasv_fusion.csv of the run in ``folder`` with numeric metric columns, or None."""
    path = RunDir(folder).file(SASV_FUSION)
    if not path.is_file():
        return None
    table = pd.read_csv(path, keep_default_na=False)
    old, new = next(iter(OLD_NAMES.items()))
    table = table.rename(columns={c: new + c[len(old) :] for c in table.columns if c.startswith(old)})
    for col in METRICS:
        if col in table.columns:
            table[col] = pd.to_numeric(table[col], errors="coerce")
    return table


#: A fairness attribute with at most this many groups gets the CM's change per group in the answer.
ANSWER_GROUPS = 4


def sasv_answer(folder: Path) -> list[str]:
    """The answer of a run with countermeasures (empty without sasv_fusion.csv), per model × CM:
    the CM's EER, the t-EER and the a-DCF alone and with the CM (cell means); per group of each
    attribute with few groups the CM's change in words (``the CM lowers female's a-DCF by …,
    raises male's by …``) with how many cells resolve it; the group the fused system serves
    worst with its trial counts and the fewest trials of any group beside it."""
    table = read_sasv_fusion(folder)
    if table is None or "a_dcf_change" not in table.columns:
        return []
    out = []
    for (model, cm), part in table.dropna(subset=["a_dcf_sum"]).groupby(["model", "cm"], sort=False):
        pooled, groups = part[part["group"] == "all"], part[part["group"] != "all"]
        eers = f"CM EER {format_value(pooled['cm_eer'].mean())}, " if "cm_eer" in pooled else ""
        out.append(
            f"{cm} with {model}: {eers}t-EER {format_value(pooled['t_eer'].mean())}; a-DCF "
            f"{format_value(pooled['a_dcf_asv'].mean())} alone, {format_value(pooled['a_dcf_sum'].mean())} with "
            f"the CM (means over {len(pooled)} cells; {cells_word(pooled)})."
        )
        exp = RunDir(folder).experiment(AnalysisError)
        first = population_attributes(exp) if exp is not None else ()  # the question's groups first
        for attr, by in sorted(groups.groupby("group_by"), key=lambda kv: (kv[0] not in first, kv[0])):
            if by["group"].nunique() <= ANSWER_GROUPS:
                out.append(
                    f"per {attr}: the CM "
                    + ", ".join(change_words(g, str(grp)) for grp, g in by.groupby("group"))
                    + "."
                )
        if len(groups):
            out.append(worst_group(groups))
    return out


def change_words(part: pd.DataFrame, group: str) -> str:
    """``lowers female's a-DCF by 0.012 (0.210 to 0.198; resolved in none of 3 cells)``: the
    cell-mean change of one group (negative: lower, better)."""
    ch = float(part["a_dcf_change"].mean())
    verb = "lowers" if ch < 0 else ("raises" if ch > 0 else "leaves")
    return (
        f"{verb} {group}'s a-DCF by {format_value(abs(ch))} ({format_value(part['a_dcf_asv'].mean())} to "
        f"{format_value(part['a_dcf_sum'].mean())}; {cells_word(part)})"
    )


def cells_word(part: pd.DataFrame) -> str:
    """In how many of ``part``'s cells the change is resolved, and which way."""
    done = part[part["a_dcf_change_resolved"].astype(str) == "True"]
    lower, higher = int((done["a_dcf_change"] < 0).sum()), int((done["a_dcf_change"] > 0).sum())
    return verdict(lower, higher, len(part))


def worst_group(groups: pd.DataFrame) -> str:
    """The group and cell of the highest a-DCF with the CM, its trial counts and the fewest
    non-target trials of any group (a small group's a-DCF is a noisy maximum)."""
    row = groups.loc[groups["a_dcf_sum"].idxmax()]
    few = groups.loc[groups["n_nontarget"].astype(int).idxmin()]
    return (
        f"worst group: {row['group_by']}={row['group']} in {row['cell']}, a-DCF {format_value(row['a_dcf_sum'])} "
        f"with the CM ({row['n_target']} target, {row['n_nontarget']} non-target, {row['n_spoof']} spoof trials; "
        f"fewest of any group: {few['n_nontarget']} non-target, {few['group_by']}={few['group']})."
    )


def verdict(lower: int, higher: int, cells: int) -> str:
    """How many cells' change is resolved, in words."""
    if lower == higher == 0:
        return f"resolved in none of {cells} cells"
    return f"resolved lower in {lower} and higher in {higher} of {cells} cells"


def sasv_section(folder: Path, rep: Report) -> None:
    """The report's ASV + CM fusion section (nothing when the run has no sasv_fusion.csv): per
    model and CM the cell-mean a-DCF without and with the CM and the t-EER, the worst group,
    then the table per cell."""
    table = read_sasv_fusion(folder)
    if table is None:
        return
    metrics = [c for c in METRICS[:4] if c in table.columns]
    pooled = table[table["group"] == "all"]
    rep.heading("ASV + CM fusion")
    words = {"calibrated": "the CM score used as its LLR", "logistic-dev": "a logistic calibration fitted on dev"}
    hows = "; ".join(words.get(h, h) for h in sorted(set(table["cm_calibration"].astype(str))))
    means = pooled.groupby(["model", "cm"], sort=False)[metrics].mean().reset_index()
    rep.para(
        f"Does a countermeasure keep spoofs out? Per model and CM, the minimum a-DCF (ASVspoof 5 costs) of the "
        f"speaker verifier alone (a_dcf_asv), fused with the CM by the sum of calibrated LLRs (a_dcf_sum) and by the "
        f"product of posteriors (a_dcf_product), and the tandem t-EER, each the mean over the "
        f"{pooled['cell'].nunique()} cell(s) (CM side: {hows}; lower is better; intervals per cell below):"
    )
    rep.table(means, ["model", "cm", *metrics])
    worst = []
    for (model, cm), part in table[table["group"] != "all"].dropna(subset=["a_dcf_sum"]).groupby(["model", "cm"]):
        row = part.loc[part["a_dcf_sum"].idxmax()]
        worst.append(
            f"{model} with {cm}: highest a_dcf_sum {format_value(row['a_dcf_sum'])} for {row['group_by']}="
            f"{row['group']} in {row['cell']} (t-EER {format_value(row['t_eer'])}; {row['n_target']} target, "
            f"{row['n_nontarget']} non-target, {row['n_spoof']} spoof trials)"
        )
    if worst:
        rep.para("The group the fused system serves worst:")
        rep.bullets(worst)
    rep.para(
        f"Per cell, pooled over groups ({SASV_FUSION} has every group); a_dcf_change = a_dcf_sum − a_dcf_asv "
        "(negative: the CM lowers the cost, better) with the "
        f"findings' 95% corrected-SE t interval ({N_BOOT} speaker and non-target replicates) and its status after "
        "Holm over every row of the table (groups of fewer than 5 speakers: too few speakers, never resolved):"
    )
    gain = [
        c for c in ("a_dcf_change", "a_dcf_change_lo", "a_dcf_change_hi", "a_dcf_change_status") if c in table.columns
    ]
    rep.table(pooled, ["model", "cm", "cell", *metrics, *gain], collapsed="a-DCF and t-EER per cell")


@report_section("sasv", 140)
def sasv_report_section(a: Analysis, rep: Report) -> None:
    """:func:`sasv_section` of the analysed run."""
    sasv_section(a.run.path, rep)
