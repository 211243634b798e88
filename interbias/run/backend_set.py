"""A run's fitted scoring back-ends as files and as one object: where each is saved in the run
folder (``backends/``), saving and reloading them (checked against their sha256), a cell's
condition (what an adapted back-end is adapted to), and :class:`RunBackends`, the back-end that
scores each cell. Fitted by :mod:`interbias.run.backend_stage`."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from interbias.metrics.backends import FittedBackend, Projection, TwoCovPlda, adapts
from interbias.utils import atomic
from interbias.utils.errors import RunError
from interbias.utils.paths import slug

if TYPE_CHECKING:
    from interbias.experiments.schema import Cell, Experiment
    from interbias.run.rundir import RunDir

BACKENDS_DIR = "backends"


def backend_paths(run: RunDir, model: str, kind: str | None = None, condition: str | None = None) -> tuple[Any, Any]:
    """(the .npz of the parameters, the .json record) of ``model``'s back-end in ``run``: the
    run's one back-end (``kind`` None), a back-end factor's level's or an adapted one's (``kind``,
    at ``condition``)."""
    label = model + (f" {kind}" if kind else "") + (f" at {condition}" if condition else "")
    base = run.path / BACKENDS_DIR / slug(label)
    return base.with_suffix(".npz"), base.with_suffix(".json")


def save_backend(
    run: RunDir, model: str, backend: FittedBackend, extra: dict[str, Any], paths: tuple[Any, Any] | None = None
) -> None:
    npz, rec = paths or backend_paths(run, model)
    npz.parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    np.savez(buf, **backend.arrays())
    atomic.write_bytes(npz, buf.getvalue())
    record = {"model": model, **backend.record(), **extra, "speakers": list(backend.speakers)}
    atomic.write_text(rec, json.dumps(record, indent=2, sort_keys=True) + "\n")


def load_backend(run: RunDir, model: str, kind: str, paths: tuple[Any, Any] | None = None) -> FittedBackend | None:
    """``model``'s saved back-end of ``kind`` (at ``paths``; default: the run's one back-end),
    None when there is none."""
    npz, rec = paths or backend_paths(run, model)
    if not (npz.is_file() and rec.is_file()):
        return None
    record = json.loads(rec.read_text(encoding="utf-8"))
    if record.get("kind") != kind:
        raise RunError(f"{rec}: a {record.get('kind')} back-end, but the run asks for {kind}")
    with np.load(npz, allow_pickle=False) as z:
        a = {k: z[k] for k in z.files}
    proj = Projection(a["mean"], a["matrix"]) if "matrix" in a else None
    plda = None
    if "q" in a:
        plda = TwoCovPlda(a["plda_mean"], a["between"], a["within"], a["q"], a["c"], float(a["const"]))
    out = FittedBackend(kind, proj, plda, tuple(record["speakers"]), int(record["n_utterances"]),
                        record.get("pca_dim"))  # fmt: skip
    if out.sha256() != record.get("sha256"):
        raise RunError(f"{npz}: the parameters do not match their record's sha256; remove {npz.parent} to refit")
    return out


def condition_of(exp: Experiment, cell: Cell) -> str:
    """The cell's condition: its levels of every factor but population and back-end factors."""
    kept = {f.name for f in exp.factors if f.type not in ("population", "backend")}
    return ",".join(f"{f}={lv}" for f, lv in cell.levels if f in kept) or "all"


@dataclass
class RunBackends:
    """A run's fitted back-ends: per (model, base kind) the dev fit, per (model, kind,
    condition) the adapted ones, and each one's file record."""

    exp: Experiment
    fitted: dict[tuple[str, str], FittedBackend] = field(default_factory=dict)
    adapted: dict[tuple[str, str, str], FittedBackend] = field(default_factory=dict)
    files: dict[tuple[str, ...], Any] = field(default_factory=dict)

    def named(self) -> bool:
        """Whether files are named by kind (a back-end factor or an adapted back-end)."""
        kinds = self.exp.backends()
        return len(kinds) > 1 or any(adapts(k) for k in kinds)

    def paths(self, run: RunDir, model: str, kind: str, condition: str | None = None) -> tuple[Any, Any]:
        return backend_paths(run, model, kind if self.named() else None, condition)

    def for_cell(self, model: str, cell: Cell) -> FittedBackend | None:
        """The back-end that scores ``model``'s ``cell`` (None: cosine)."""
        kind = self.exp.backend_of(cell)
        if kind == "cosine":
            return None
        if adapts(kind):
            return self.adapted[(model, kind, condition_of(self.exp, cell))]
        return self.fitted[(model, kind)]

    def get(self, model: str) -> FittedBackend | None:
        """``model``'s one back-end of a run without a back-end factor or adaptation."""
        return self.fitted.get((model, self.exp.scoring.backend))
