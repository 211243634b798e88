"""The run's back-end stage: fit ``scoring.backend`` per encoder before any cell is scored.

A fitted back-end (every kind but ``cosine``; :mod:`interbias.metrics.backends`) is fitted on
the **dev split's reference-condition embeddings**: every utterance of a dev trial of a
reference cell (all acoustic factors at their reference level, population strata pooled),
embedded under that cell's chain for its side, labelled by its speaker. The dev split is
speaker-disjoint from the eval split (``trials.dev_share``), and this stage checks that no fit
speaker is an eval speaker. The fitted parameters are saved in the run folder
(``backends/<model>.npz`` and ``.json``: kind, dimensions, fit speakers, sha256 of the
parameters) before the first cell is scored, reloaded when a run resumes, and recorded in
run.json ``scoring.backend``. A back-end that cannot be fitted stops the run with one error.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from interbias.metrics.backends import FittedBackend, Projection, TwoCovPlda, fit_backend
from interbias.trials.enrolment import enrol_columns, first_enrolment
from interbias.utils import atomic
from interbias.utils.errors import InterbiasError, RunError
from interbias.utils.paths import slug

if TYPE_CHECKING:
    from interbias.encoders import Encoder
    from interbias.experiments.schema import Cell
    from interbias.run.frontends import CellEmbedders
    from interbias.run.inputs import RunContext
    from interbias.run.rundir import RunDir
    from interbias.run.work import RunWork

BACKENDS_DIR = "backends"


def backend_paths(run: RunDir, model: str) -> tuple[Any, Any]:
    """(the .npz of the parameters, the .json record) of ``model``'s back-end in ``run``."""
    base = run.path / BACKENDS_DIR / slug(model)
    return base.with_suffix(".npz"), base.with_suffix(".json")


def save_backend(run: RunDir, model: str, backend: FittedBackend, extra: dict[str, Any]) -> None:
    npz, rec = backend_paths(run, model)
    npz.parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    np.savez(buf, **backend.arrays())
    atomic.write_bytes(npz, buf.getvalue())
    record = {"model": model, **backend.record(), **extra, "speakers": list(backend.speakers)}
    atomic.write_text(rec, json.dumps(record, indent=2, sort_keys=True) + "\n")


def load_backend(run: RunDir, model: str, kind: str) -> FittedBackend | None:
    """``model``'s saved back-end of ``kind``, None when there is none."""
    npz, rec = backend_paths(run, model)
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


def dev_vectors(
    ctx: RunContext, enc: Encoder, refs: Sequence[Cell], emb: CellEmbedders
) -> tuple[np.ndarray, np.ndarray, int]:
    """(vectors, speakers, utterances without an embedding) of the reference cells' dev trials."""
    seen: dict[tuple[str, str], tuple[np.ndarray, str]] = {}
    missing = 0
    for cell in refs:
        trials = first_enrolment(ctx.trials.for_stratum(cell.stratum), cell.enrol_utterances)
        if "split" not in trials.columns:
            continue
        dev = trials[trials["split"] == "dev"]
        enrol_chain, test_chain = cell.draws()[0]
        vectors = emb.for_cell(cell).vectors
        sides = [(c, "enrol_speaker", enrol_chain.fingerprint) for c in enrol_columns(dev)]
        for col, spk_col, fp in [*sides, ("test", "test_speaker", test_chain.fingerprint)]:
            for uid, spk in zip(dev[col].to_numpy(), dev[spk_col].to_numpy(), strict=True):
                if (uid, fp) in seen:
                    continue
                vec = vectors.get((uid, fp, enc.fingerprint))
                if vec is None:
                    missing += 1
                    seen[(uid, fp)] = (np.empty(0), "")
                else:
                    seen[(uid, fp)] = (np.asarray(vec, np.float64), str(spk))
    kept = [v for v in seen.values() if v[1]]
    if not kept:
        return np.zeros((0, 1)), np.array([], dtype=object), missing
    return np.stack([v for v, _ in kept]), np.array([s for _, s in kept], dtype=object), missing


def eval_speakers(ctx: RunContext) -> set[str]:
    frame = ctx.trials.frame
    ev = frame[frame["split"] == "eval"] if "split" in frame.columns else frame
    cols = [c for c in ("enrol_speaker", "test_speaker") if c in ev.columns]
    return {str(s) for c in cols for s in ev[c].unique()}


def fit_run_backends(ctx: RunContext, work: RunWork, emb: CellEmbedders) -> dict[str, FittedBackend]:
    """Every encoder's back-end (see the module doc); empty for ``cosine``."""
    from interbias.run.calibrate import reference_cells

    name = ctx.exp.scoring.backend
    if name == "cosine":
        return {}
    refs = reference_cells(ctx.exp, ctx.exp.cells())
    out: dict[str, FittedBackend] = {}
    for enc in ctx.encoders:
        saved = load_backend(ctx.run, enc.label, name)
        if saved is not None:
            out[enc.label] = saved
            continue
        if not any(e is enc for _, e in work.pending):
            continue
        pending = {c.id for c, e in work.pending if e is enc}
        if any(c.id not in pending for c in refs):
            raise RunError(f"{enc.label}: the {name} back-end is not saved and its reference cells are finished: "
                           f"remove {ctx.run.path} to start over")  # fmt: skip
        vectors, speakers, missing = dev_vectors(ctx, enc, refs, emb)
        overlap = set(speakers) & eval_speakers(ctx)
        if overlap:
            raise RunError(
                f"{enc.label}: {len(overlap)} back-end fit speaker(s) are eval speakers, e.g. {min(overlap)}"
            )
        try:
            backend = fit_backend(name, vectors, speakers)
        except InterbiasError as exc:
            raise RunError(f"{enc.label}: {exc} (fitted on {len(vectors)} dev embedding(s) of the reference cells; "
                           "raise trials.dev_share or min_speakers)") from None  # fmt: skip
        fit_on = {"fit_on": "dev split, reference cells", "n_missing": missing, "cells": [c.id for c in refs]}
        save_backend(ctx.run, enc.label, backend, fit_on)
        out[enc.label] = backend
    return out


def backend_record(name: str, backends: dict[str, FittedBackend], run: RunDir) -> dict[str, Any]:
    """run.json ``scoring.backend``: the kind and, per model, its fitted parameters' record."""
    if name == "cosine":
        return {}
    models = {}
    for label, be in backends.items():
        rec = backend_paths(run, label)[1]
        saved = json.loads(rec.read_text(encoding="utf-8")) if rec.is_file() else {}
        models[label] = {**be.record(), "file": f"{BACKENDS_DIR}/{rec.name}", "n_missing": saved.get("n_missing", 0)}
    return {"backend": {"kind": name, "models": models}}
