"""Group fairness of a run directory or of score files at one deployment threshold: the readers
that build :class:`Unit` s and call :func:`fairness_report` (definitions and statistics in
:mod:`interbias.analysis.groups.fairness_stats`, whose names are re-exported here)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from interbias.analysis.groups.fairness_cluster import DEFAULT_BOOT, TESTS
from interbias.analysis.groups.fairness_cross import attribute_columns, grouping
from interbias.analysis.groups.fairness_stats import (
    COMPARISON_TABLE,
    GROUP_TABLE,
    METRICS,
    SPOOF_METRIC,
    FairnessReport,
    Threshold,
    Unit,
    confusion,
    fairness_report,
    holm,
    metric_counts,
    pair_groups,
    ratio,
    single_groups,
    two_proportion_ztest,
)
from interbias.experiments.schema import Experiment, FairnessSpec
from interbias.metrics.thresholds import ThresholdRule
from interbias.run.measured import calibration_trials, in_split, kept, read_score_file
from interbias.run.rundir import ATTRIBUTES, EXPERIMENT, RESULTS, TRIALS, CalibrationRecord, RunDir
from interbias.utils.budget import TIME_LIMIT_S
from interbias.utils.errors import AnalysisError

__all__ = [
    "COMPARISON_TABLE",
    "GROUP_TABLE",
    "METRICS",
    "SPOOF_METRIC",
    "TESTS",
    "FairnessReport",
    "Threshold",
    "ThresholdRule",
    "Unit",
    "confusion",
    "fairness_for_files",
    "fairness_for_run",
    "fairness_report",
    "groups_of",
    "holm",
    "metric_counts",
    "pair_groups",
    "ratio",
    "read_score_table",
    "single_groups",
    "two_proportion_ztest",
]


# ---- runs --------------------------------------------------------------------------------------


def fairness_for_run(
    run_dir: Path,
    *,
    groups: Sequence[str] | None = None,
    rule: str | None = None,
    alpha: float = 0.05,
    test: str = "speaker",
    n_boot: int = DEFAULT_BOOT,
    time_limit_s: float | None = TIME_LIMIT_S,
) -> FairnessReport | None:
    """The fairness report of a run directory, or ``None`` when it has no dev trials.

    For each model one threshold is chosen on the dev trials of the reference acoustic
    condition (every acoustic factor at its reference level, pooled over population strata)
    and applied unchanged to the eval trials of every condition, pooled over strata; with a
    back-end factor, one threshold (and calibration) per model and back-end level, its
    conditions named ``…,backend=level``: each back-end scores on its own scale. Groups
    come from ``attributes.parquet`` (default: the experiment's ``fairness.groups``, else its
    population-factor attributes, else ``gender``); the rule from ``rule`` or the experiment.
    Bona fide trials give the five metrics (positive class ``accept``); spoof trials, when
    present, give ``spoof_far`` at the same threshold. Dropped trials are left out and counted.
    With ``operator_draws`` K > 1 the threshold and the tables use draw 0's scores (pooling the
    K draws would count each trial K times in the tests); each group row then says ``draw`` 0,
    ``n_draws`` K. ``test``: ``speaker`` (clustered by the trials' enrolment and test speakers,
    ``n_boot`` replicates seeded from the experiment's seed) or ``trial-z``
    (:func:`interbias.analysis.groups.fairness_stats.fairness_report`).
    """
    run = RunDir(run_dir)
    if not run.file(TRIALS).is_file():
        raise AnalysisError(f"{run.path}: not a run directory (no trials.parquet)")
    trials = pd.read_parquet(run.file(TRIALS))
    if "split" not in trials.columns or not (trials["split"] == "dev").any():
        return None
    for name in (EXPERIMENT, ATTRIBUTES, RESULTS):
        if not run.file(name).is_file():
            raise AnalysisError(f"{run.path}: the run has dev trials but no {name}")
    exp = run.experiment(AnalysisError)
    assert exp is not None  # checked above
    cfg = exp.fairness or FairnessSpec()
    the_rule = ThresholdRule.parse(rule or cfg.threshold)
    pop_attrs = [str(f.attribute) for f in exp.population_factors]
    attrs = list(groups or list(cfg.groups or ()) or dict.fromkeys(pop_attrs) or ["gender"])
    table = pd.read_parquet(run.file(ATTRIBUTES)).set_index("id")
    absent = [a for a in attribute_columns(attrs) if a not in table.columns]
    if absent:
        raise AnalysisError(
            f"{run.path}: group attribute(s) {', '.join(absent)} not in the manifest; valid: "
            f"{', '.join(c for c in table.columns if c != 'path')}"
        )
    results = run.read_results(dtype=str, keep_default_na=False)
    side = _TrialSides(trials.set_index("trial_id"), table, attrs)
    acoustic = {f.name: str(f.reference) for f in exp.acoustic_factors}
    units: list[Unit] = []
    record = run.read_calibration(AnalysisError)
    # the scores files' `score` column is draw 0's: each row says so on operator_draws runs
    draws = {"draw": 0, "n_draws": exp.trials.operator_draws} if exp.trials.operator_draws > 1 else {}
    for model, rows in results.groupby("model", sort=False):
        for level, part, cal in _by_backend(exp, str(model), rows, record):
            for unit in _model_units(run, exp.name, str(model), part, acoustic, side, the_rule):
                if level:
                    unit.keys["condition"] = f"{unit.keys['condition']},{level}"
                unit.info.update(draws)
                unit.calibration = None if cal is None else (cal, exp.operating_points[0])
                units.append(unit)
    return fairness_report(
        units, positive="accept", alpha=alpha, test=test, n_boot=n_boot, seed=exp.seed, time_limit_s=time_limit_s
    )


@dataclass(frozen=True)
class _TrialSides:
    """The run's trials (indexed by trial id) and the group attributes of their utterances."""

    trials: pd.DataFrame
    table: pd.DataFrame
    attrs: list[str]

    @property
    def types(self) -> pd.Series | None:
        return self.trials["trial_type"] if "trial_type" in self.trials.columns else None

    def join(self, scores: pd.DataFrame) -> pd.DataFrame:
        cols = ["split", "enrol", "test", *(["trial_type"] if self.types is not None else [])]
        cols += [c for c in ("enrol_speaker", "test_speaker") if c in self.trials.columns]
        return scores.set_index("trial_id")[["label", "score", "dropped"]].join(self.trials[cols], how="left")

    def groups(self, ev: pd.DataFrame) -> dict[str, np.ndarray]:
        """Per grouping (an attribute, or a crossing ``a×b``: :mod:`interbias.analysis.groups.fairness_cross`),
        each eval trial's group."""

        def pure(a: str) -> np.ndarray:
            return pair_groups(
                self.table[a].reindex(ev["enrol"]).to_numpy(dtype=object),
                self.table[a].reindex(ev["test"]).to_numpy(dtype=object),
            )

        return {name: grouping(name, pure) for name in self.attrs}


def _by_backend(
    exp: Experiment, model: str, rows: pd.DataFrame, record: CalibrationRecord | None
) -> list[tuple[str, pd.DataFrame, tuple[float, float] | None]]:
    """(``backend=level`` or "", its rows, its shared calibration) per back-end level: a run with
    a back-end factor gets a dev threshold and a calibration per back-end, whose scores are on
    that back-end's scale (calibration.json ``by_backend``); other runs, one part."""
    factor = next((f for f in exp.factors if f.type == "backend"), None)
    if factor is None:
        return [("", rows, record.shared(model) if record is not None else None)]
    slot = next(x for x in "abc" if (rows[f"factor_{x}"] == factor.name).any())
    fits = (record.model(model).get("by_backend") or {}) if record is not None else {}
    out = []
    for lv in factor.levels:
        fit = fits.get(getattr(lv, "backend", "")) or {}
        cal = (float(fit["slope"]), float(fit["offset"])) if "slope" in fit else None
        part = rows[rows[f"level_{slot}"] == lv.name]
        if len(part):
            out.append((f"{factor.name}={lv.name}", part, cal))
    return out


def _model_units(
    run: RunDir,
    experiment: str,
    model: str,
    rows: pd.DataFrame,
    acoustic: dict[str, str],
    side: _TrialSides,
    the_rule: ThresholdRule,
) -> list[Unit]:
    """One model's units: a threshold from the reference condition's dev trials, applied to the
    eval trials of every acoustic condition (pooled over population strata)."""
    by_condition: dict[str, list[pd.DataFrame]] = {}
    dev_frames, dev_cells = [], []
    for row in rows.itertuples(index=False):
        levels = {getattr(row, f"factor_{x}"): getattr(row, f"level_{x}") for x in "abc"}
        condition = ",".join(f"{f}={levels[f]}" for f in acoustic) or "all"
        path = run.scores_path(model, row.cell)
        if not path.is_file():
            raise AnalysisError(f"{run.path}: scores of {model} / {row.cell} are missing ({path.name})")
        sc = side.join(run.read_scores(model, row.cell))
        if all(levels.get(f) == ref for f, ref in acoustic.items()):
            dev_frames.append(sc[calibration_trials(sc)])
            dev_cells.append(row.cell)
        by_condition.setdefault(condition, []).append(sc[in_split(sc, "eval")])
    if not dev_frames:
        reference = ",".join(f"{f}={ref}" for f, ref in acoustic.items()) or "all"
        raise AnalysisError(
            f"{run.path.name}: {model} has no scored cell in the reference condition ({reference}): "
            "no dev threshold, no fairness report"
        )
    thr = _dev_threshold(run, model, pd.concat(dev_frames), dev_cells, the_rule)
    units = []
    for condition, frames in by_condition.items():
        ev = pd.concat(frames)
        n_dropped = int((~kept(ev)).sum())
        ev = ev[kept(ev)]  # eval, not dropped: bona fide trials give the metrics, spoof ones spoof_far
        units.append(
            Unit(
                keys={"experiment": experiment, "model": model, "condition": condition},
                scores=ev["score"].to_numpy(),
                labels=ev["label"].to_numpy(),
                groups=side.groups(ev),
                threshold=thr,
                types=None if side.types is None else ev["trial_type"].to_numpy(),
                info={"n_dropped_trials": n_dropped},
                speakers=_speakers(ev),
            )
        )
    return units


def _speakers(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray] | None:
    """Per trial its (enrolment, test) speaker: ``enrol_speaker``/``test_speaker`` columns, or one
    ``speaker`` column for both sides; ``None`` when the frame has neither."""
    if "enrol_speaker" in frame.columns and "test_speaker" in frame.columns:
        return frame["enrol_speaker"].astype(str).to_numpy(), frame["test_speaker"].astype(str).to_numpy()
    if "speaker" in frame.columns:
        spk = frame["speaker"].astype(str).to_numpy()
        return spk, spk
    return None


def _dev_threshold(
    run: RunDir, model: str, dev: pd.DataFrame, dev_cells: list[str], the_rule: ThresholdRule
) -> Threshold:
    """The threshold ``the_rule`` chooses on the dev trials (:func:`interbias.run.measured.calibration_trials`)."""
    if not len(dev):
        raise AnalysisError(f"{run.path}: {model} has no scored dev trials in the reference condition")
    value = the_rule.choose(dev["score"].to_numpy(), dev["label"].to_numpy())
    n1 = int(dev["label"].sum())
    source = (
        f"dev split of {';'.join(dev_cells)}: {len(dev)} trials ({n1} label 1, {len(dev) - n1} label 0)"
        if the_rule.kind != "fixed"
        else "fixed"
    )
    return Threshold(value, the_rule.label, source)


# ---- score files ---------------------------------------------------------------------------------


def read_score_table(path: Path) -> pd.DataFrame:
    """A score file (``.csv`` or ``.parquet``) with a numeric ``score`` and a ``label``
    (1/target/bonafide = should be accepted, 0/nontarget/spoof = should be rejected), plus any
    other columns; ``label`` comes back as 0/1 integers (:func:`interbias.run.measured.read_score_file`)."""
    frame = read_score_file(path, error=AnalysisError)
    frame["label"] = frame["label"].astype(np.int64)
    return frame


def groups_of(frame: pd.DataFrame, column: str, *, where: str) -> np.ndarray:
    """Group labels from ``column`` (one value per trial) or from ``enrol_<column>`` and
    ``test_<column>`` (a trial belongs to a group when both sides do)."""
    if column in frame.columns:
        return single_groups(frame[column].tolist())
    pair = (f"enrol_{column}", f"test_{column}")
    if all(c in frame.columns for c in pair):
        return pair_groups(frame[pair[0]].tolist(), frame[pair[1]].tolist())
    raise AnalysisError(
        f"{where}: no group column {column!r} (nor enrol_{column} and test_{column}); found: {', '.join(map(str, frame.columns))}"
    )


def fairness_for_files(
    scores: Path,
    groups: Sequence[str],
    *,
    dev: Path | None,
    rule: str = "eer",
    positive: str = "accept",
    alpha: float = 0.05,
    test: str = "speaker",
    n_boot: int = DEFAULT_BOOT,
    time_limit_s: float | None = TIME_LIMIT_S,
) -> FairnessReport:
    """The fairness report of one evaluation score file at a threshold from ``dev``. The
    speaker test needs the trials' speakers: ``enrol_speaker`` and ``test_speaker`` columns, or
    a ``speaker`` column (one speaker per trial, e.g. a countermeasure's utterances)."""
    the_rule = ThresholdRule.parse(rule)
    if not groups:
        raise AnalysisError("give at least one --group column")
    frame = read_score_table(scores)
    if not the_rule.from_dev:
        source = "fixed"
        value = the_rule.choose(None, None)
    else:
        if dev is None:
            raise AnalysisError(f"threshold rule {the_rule.label} needs development scores (--dev DEV_SCORES)")
        d = read_score_table(dev)
        value = the_rule.choose(d["score"].to_numpy(), d["label"].to_numpy())
        n1 = int(d["label"].sum())
        source = f"dev {Path(dev).name}: {len(d)} trials ({n1} label 1, {len(d) - n1} label 0)"
    unit = Unit(
        keys={},
        scores=frame["score"].to_numpy(),
        labels=frame["label"].to_numpy(),
        groups={g: grouping(g, lambda a: groups_of(frame, a, where=str(scores))) for g in groups},
        threshold=Threshold(value, the_rule.label, source),
        speakers=_speakers(frame),
    )
    if test == "speaker" and unit.speakers is None:
        raise AnalysisError(
            f"{scores}: the speaker test needs enrol_speaker and test_speaker columns (or a speaker column); "
            "--test trial-z runs the z-test that assumes independent trials"
        )
    return fairness_report([unit], positive=positive, alpha=alpha, test=test, n_boot=n_boot, time_limit_s=time_limit_s)
