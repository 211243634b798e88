"""The run directory: one class that knows the layout of ``results/<run_id>/``, used by the
runner to write it and by analysis, fairness, export and report to read it.

Layout::

    results.csv                     one row per cell × encoder (interbias.run.results.COLUMNS)
    run.json                        provenance, counts, timings (interbias.run.results.run_record)
    experiment.resolved.json        the experiment as run (variant applied)
    trials.parquet, trials.json     the trial list and its digest (interbias.trials.sampler.TrialList)
    scores/<slug(model)>/<slug(cell)>.parquet   per-trial scores: trial_id, label, score, dropped
    cells/<slug(model)>/<slug(cell)>.json       a finished cell's completion record (resume)
    attributes.parquet              the trial utterances' attributes (runs with dev trials)
    operations.parquet              what each operator chain realised per (utterance, side, chain)
    calibration.json                the calibration record (:class:`CalibrationRecord`; runs with dev trials)
    spoofing.csv                    DSR over encoders per cell (spoofing experiments)
    cm_trials.parquet               CM score per (CM, cell, eval trial) (spoofing runs with CMs: interbias.run.cm_stage)
    cm_dev.parquet                  CM score per (CM, reference cell, dev utterance): the CMs' calibration data
    cm_cells/<slug(cell)>.parquet, .json    a cell's CM scores and completion record (resume)
    sasv_fusion.csv                 ASV + CM fusion per model, CM, cell, group (interbias.analysis.security.sasv_run)
    fairness.csv, fairness_groups.csv   the fairness report at the dev threshold (runs with dev trials)

Every file name of the layout is a constant of this module, and each file is read through a
method of :class:`RunDir`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from interbias.utils import atomic
from interbias.utils.errors import ConfigError, InterbiasError, RunError
from interbias.utils.paths import RUN_JSON, slug
from interbias.utils.seeding import canonical_json, sha256_file, sha256_text

if TYPE_CHECKING:
    from interbias.experiments.schema import Experiment
    from interbias.trials.sampler import TrialList

RESULTS = "results.csv"
EXPERIMENT = "experiment.resolved.json"
TRIALS = "trials.parquet"
TRIALS_META = "trials.json"
ATTRIBUTES = "attributes.parquet"
OPERATIONS = "operations.parquet"
SCORES = "scores"
CELLS = "cells"
CALIBRATION = "calibration.json"
SPOOFING = "spoofing.csv"
FAIRNESS = "fairness.csv"
FAIRNESS_GROUPS = "fairness_groups.csv"
TEXT_PAIRS = "text_pairs.csv"
ATTACKS = "attacks.csv"
CM_TRIALS = "cm_trials.parquet"
CM_DEV = "cm_dev.parquet"
CM_CELLS = "cm_cells"
SASV_FUSION = "sasv_fusion.csv"
#: The files a run writes at the top of its directory (its analyses and reports aside).
RUN_FILES = (RESULTS, RUN_JSON, EXPERIMENT, TRIALS, TRIALS_META, ATTRIBUTES, OPERATIONS, CALIBRATION, SPOOFING,
             FAIRNESS, FAIRNESS_GROUPS, TEXT_PAIRS, ATTACKS, CM_TRIALS, CM_DEV, SASV_FUSION)  # fmt: skip
#: The folders a run writes (per-cell scores and completion records).
RUN_FOLDERS = (SCORES, CELLS, CM_CELLS)


@dataclass(frozen=True)
class CalibrationRecord:
    """The run's calibration record (calibration.json, and run.json's ``calibration``, written
    from the same record): where the linear calibration was fitted (``fit_on``, ``split``), how
    (``method``), its ``operating_points`` (records of
    :class:`interbias.experiments.decision_spec.OperatingPoint`), whether it was ``measured``
    (else the ``reason``) and per model (``models``) either ``error`` or the fit: ``slope``,
    ``offset``, ``eer_threshold``, ``cells``, ``decision_thresholds`` (``fit_on: reference``)
    or ``per_cell`` fits (``fit_on: each``), and ``per_draw`` values in runs with draws."""

    fit_on: str
    split: str
    method: str
    operating_points: list[dict[str, Any]]
    measured: bool
    reason: str | None = None
    models: dict[str, dict[str, Any]] | None = None

    def to_json(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in ("fit_on", "split", "method", "operating_points", "measured")}
        return {**out, **{k: v for k in ("reason", "models") if (v := getattr(self, k)) is not None}}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CalibrationRecord:
        return cls(
            fit_on=str(data.get("fit_on", "")),
            split=str(data.get("split", "dev")),
            method=str(data.get("method", "")),
            operating_points=list(data.get("operating_points") or []),
            measured=bool(data.get("measured", False)),
            reason=data.get("reason"),
            models=data.get("models"),
        )

    def model(self, model: str) -> dict[str, Any]:
        """``model``'s record (``{}`` when the run has none for it)."""
        return (self.models or {}).get(model) or {}

    def shared(self, model: str) -> tuple[float, float] | None:
        """(slope, offset) of ``model``'s shared calibration (``None`` with ``fit_on: each`` or
        when none was fitted)."""
        rec = self.model(model)
        return (float(rec["slope"]), float(rec["offset"])) if "slope" in rec else None

    def for_cell(self, model: str, cell: str) -> tuple[float, float] | None:
        """(slope, offset) applied to ``cell``: the model's shared calibration, else the cell's own fit."""
        shared = self.shared(model)
        if shared is not None:
            return shared
        rec = (self.model(model).get("per_cell") or {}).get(cell) or {}
        return (float(rec["slope"]), float(rec["offset"])) if "slope" in rec else None

    def lacks_shared(self) -> str | None:
        """Why the run has no shared calibration (``None`` when it has: ``fit_on: reference``, measured)."""
        if self.fit_on == "reference" and self.measured:
            return None
        return self.reason or f"calibration.fit_on is {self.fit_on!r}, not 'reference'"


class RunDir:
    """``results/<run_id>/`` (see the module docs for its layout)."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        #: Completion records read here that failed their checksum (path relative to the run: why);
        #: their cells are not finished, and run.json lists them (``records_redone``).
        self.unsealed: dict[str, str] = {}

    def __repr__(self) -> str:
        return f"RunDir({str(self.path)!r})"

    # ---- layout ------------------------------------------------------------------------------

    def file(self, name: str) -> Path:
        return self.path / name

    def scores_path(self, model: str, cell: str) -> Path:
        """Per-trial scores of ``cell`` × ``model`` (the one place this path is spelled)."""
        return self.path / SCORES / slug(str(model)) / f"{slug(str(cell))}.parquet"

    def cell_record_path(self, model: str, cell: str) -> Path:
        """The completion record of ``cell`` × ``model``."""
        return self.path / CELLS / slug(str(model)) / f"{slug(str(cell))}.json"

    @property
    def has_scores(self) -> bool:
        return self.file(TRIALS).is_file() and (self.path / SCORES).is_dir()

    def missing(self, *names: str) -> list[str]:
        """Which of ``names`` (layout file names) are not in the directory."""
        return [n for n in names if not self.file(n).is_file()]

    def n_finished_cells(self) -> int:
        return sum(1 for _ in (self.path / CELLS).rglob("*.json"))

    # ---- writing (the runner) ----------------------------------------------------------------

    def write_experiment(self, exp: Experiment) -> None:
        atomic.write_text(self.file(EXPERIMENT), json.dumps(exp.resolved(), indent=2, sort_keys=True) + "\n")

    def write_trials(self, trials: TrialList) -> None:
        atomic.write_parquet(self.file(TRIALS), trials.frame)
        atomic.write_text(self.file(TRIALS_META), json.dumps(trials.meta(), indent=2, sort_keys=True) + "\n")

    def write_cell(self, model: str, cell: str, scores: pd.DataFrame, record: dict[str, Any]) -> None:
        """A cell's per-trial scores, then its completion record (written last: it marks the cell done)."""
        atomic.write_parquet(self.scores_path(model, cell), scores)
        write_record(self.cell_record_path(model, cell), record, self.scores_path(model, cell))

    def write_results(self, results: pd.DataFrame) -> None:
        """results.csv: its one writer (the run frame, :func:`interbias.run.frame.finish`)."""
        atomic.write_csv(self.file(RESULTS), results)

    def append_results(self, rows: pd.DataFrame) -> None:
        """``rows`` added to results.csv (same columns, no header); the run's rows stay byte for byte."""
        text = self.file(RESULTS).read_text(encoding="utf-8")
        atomic.write_text(self.file(RESULTS), text + rows.to_csv(index=False, header=False, lineterminator="\n"))

    def write_operations(self, frame: pd.DataFrame) -> None:
        """operations.parquet (:mod:`interbias.run.operations`)."""
        atomic.write_parquet(self.file(OPERATIONS), frame)

    def read_operations(self) -> pd.DataFrame | None:
        """operations.parquet, or ``None`` when the run has none."""
        path = self.file(OPERATIONS)
        return pd.read_parquet(path) if path.is_file() else None

    def write_calibration(self, record: CalibrationRecord) -> None:
        """calibration.json (:class:`CalibrationRecord`)."""
        atomic.write_text(self.file(CALIBRATION), _json_text(record.to_json()))

    def write_spoofing(self, frame: pd.DataFrame) -> str:
        """spoofing.csv (DSR over encoders per cell); returns its name."""
        atomic.write_csv(self.file(SPOOFING), frame)
        return SPOOFING

    def write_run_json(self, record: dict[str, Any]) -> None:
        atomic.write_text(self.file(RUN_JSON), _json_text(record))

    # ---- reading -----------------------------------------------------------------------------

    def read_json(self, name: str, error: type[InterbiasError] = RunError) -> dict[str, Any] | None:
        """A JSON file of the layout; ``None`` when absent, ``error`` when unreadable."""
        path = self.file(name)
        if not path.is_file():
            return None
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise error(f"{path}: not readable JSON ({exc})") from exc

    def cell_record(self, model: str, cell: str) -> dict[str, Any] | None:
        """The completion record of a finished cell (its scores file present), else ``None``."""
        return self._completed(self.cell_record_path(model, cell), self.scores_path(model, cell))

    def cm_cell_path(self, cell: str, suffix: str = ".parquet") -> Path:
        """The CM scores (``.parquet``) or completion record (``.json``) of ``cell``."""
        return self.path / CM_CELLS / f"{slug(str(cell))}{suffix}"

    def write_cm_cell(self, cell: str, rows: pd.DataFrame, record: dict[str, Any]) -> None:
        """A cell's CM rows, then its completion record (written last: it marks the cell done)."""
        atomic.write_parquet(self.cm_cell_path(cell), rows)
        write_record(self.cm_cell_path(cell, ".json"), record, self.cm_cell_path(cell))

    def cm_cell_record(self, cell: str) -> dict[str, Any] | None:
        """The completion record of a cell the CMs finished (its rows present), else ``None``."""
        return self._completed(self.cm_cell_path(cell, ".json"), self.cm_cell_path(cell))

    def _completed(self, path: Path, data: Path) -> dict[str, Any] | None:
        """:func:`completion_record`, a record that fails its checksum noted in :attr:`unsealed`."""
        rec, why = sealed_record(path, data)
        if why:
            self.unsealed[str(path.relative_to(self.path))] = why
        return rec

    def read_cm_cell(self, cell: str) -> pd.DataFrame:
        return pd.read_parquet(self.cm_cell_path(cell))

    def read_scores(self, model: str, cell: str) -> pd.DataFrame:
        return pd.read_parquet(self.scores_path(model, cell))

    def read_trials(self) -> TrialList:
        from interbias.trials.sampler import TrialList

        meta = json.loads(self.file(TRIALS_META).read_text())
        return TrialList.from_meta(pd.read_parquet(self.file(TRIALS)), meta, str(self.file(TRIALS)))

    def read_results(self, **kwargs: Any) -> pd.DataFrame:
        return pd.read_csv(self.file(RESULTS), **kwargs)

    def read_calibration(self, error: type[InterbiasError] = RunError) -> CalibrationRecord | None:
        """The calibration record: calibration.json, else run.json's ``calibration`` (a run
        without dev trials records there why it has none); ``None`` when neither holds one."""
        data = self.read_json(CALIBRATION, error)
        if data is None:
            data = (self.read_json(RUN_JSON, error) or {}).get("calibration")
        return CalibrationRecord.from_json(data) if isinstance(data, dict) and data else None

    def _csv(self, name: str, **kwargs: Any) -> pd.DataFrame | None:
        """A table of the layout; ``None`` when absent; an empty frame for a table written
        without rows or columns (e.g. a fairness report with no comparison)."""
        path = self.file(name)
        if not path.is_file():
            return None
        try:
            return pd.read_csv(path, **kwargs)
        except pd.errors.EmptyDataError:
            return pd.DataFrame()

    def read_spoofing(self) -> pd.DataFrame | None:
        """spoofing.csv, or ``None`` when the run has none."""
        return self._csv(SPOOFING)

    def read_fairness(self, **kwargs: Any) -> tuple[pd.DataFrame | None, pd.DataFrame | None]:
        """(fairness_groups.csv, fairness.csv): the per-group values and the comparisons, each
        ``None`` when absent (``kwargs``: to :func:`pandas.read_csv`)."""
        return self._csv(FAIRNESS_GROUPS, **kwargs), self._csv(FAIRNESS, **kwargs)

    def experiment(self, error: type[InterbiasError] = RunError) -> Experiment | None:
        """The experiment as run, parsed (``None`` when the directory holds none)."""
        from interbias.experiments.schema import from_resolved

        resolved = self.read_json(EXPERIMENT, error)
        if resolved is None:
            return None
        try:
            return from_resolved(resolved, where=str(self.file(EXPERIMENT)))
        except ConfigError as exc:
            raise error(str(exc)) from exc


#: The key of a completion record's checksum: the sha256 of the record's other keys (canonical
#: JSON) with ``data_sha256``, the sha256 of the scores file it completes.
CHECKSUM = "record_sha256"


def _digest(body: dict[str, Any]) -> str:
    return sha256_text(canonical_json(json.loads(json.dumps(body))))  # as it reads back


def write_record(path: Path, record: dict[str, Any], data: Path) -> None:
    """A completion record of the ``data`` file (written before it), sealed with its checksum."""
    body = {k: v for k, v in record.items() if k != CHECKSUM}
    body["data_sha256"] = sha256_file(data)
    atomic.write_text(path, json.dumps({**body, CHECKSUM: _digest(body)}, indent=1, sort_keys=True) + "\n")


def sealed_record(path: Path, data: Path) -> tuple[dict[str, Any] | None, str]:
    """(the JSON record at ``path`` when it and the ``data`` file it completes are both there, it
    reads as a mapping and its checksum matches it and the data, else ``None``; why a record
    that is there was refused, "" otherwise). A torn or foreign record means: not finished."""
    if not path.is_file() or not data.is_file():
        return None, ""
    try:
        rec = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None, "not readable JSON"
    if not isinstance(rec, dict):
        return None, "not a JSON mapping"
    body = {k: v for k, v in rec.items() if k != CHECKSUM}
    if CHECKSUM not in rec:
        return None, "no checksum"
    if rec[CHECKSUM] != _digest(body):
        return None, "the record was changed after it was written (checksum)"
    if body.get("data_sha256") != sha256_file(data):
        return None, f"{data.name} was changed after its record was written (checksum)"
    return rec, ""


def completion_record(path: Path, data: Path) -> dict[str, Any] | None:
    """The record of :func:`sealed_record`, or ``None``."""
    return sealed_record(path, data)[0]


def _json_text(record: dict[str, Any]) -> str:
    """A JSON record of the layout as written: indented, keys sorted, one final newline."""
    return json.dumps(record, indent=2, sort_keys=True, default=str) + "\n"
