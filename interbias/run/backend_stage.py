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

With a back-end factor (:mod:`interbias.experiments.backend_factor`) each level's back-end is
fitted the same way, once per encoder and base kind (``plda`` and ``plda+adapt`` share one fit),
on the reference cells of its level (the same embeddings for every level: back-ends only
re-score cached vectors), and saved as ``backends/<model> <kind>``. An adapted back-end
(``+adapt``) is then adapted per encoder and **condition** (the cell's levels of every factor
but population and back-end factors) to that condition's unlabelled dev embeddings — every
utterance of a dev trial of its cells, strata pooled, under each side's chain (draw 0) —
(:func:`interbias.metrics.backends.adapt_backend`) and saved as ``backends/<model> <kind> at
<condition>``; the fit speakers are checked against the eval speakers as above.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from interbias.metrics.backends import FittedBackend, adapt_backend, adapts, base_kind, fit_backend
from interbias.run.backend_set import BACKENDS_DIR, RunBackends, condition_of, load_backend, save_backend
from interbias.trials.enrolment import enrol_columns, first_enrolment
from interbias.utils.errors import InterbiasError, RunError

if TYPE_CHECKING:
    from interbias.encoders import Encoder
    from interbias.experiments.schema import Cell
    from interbias.run.frontends import CellEmbedders
    from interbias.run.inputs import RunContext
    from interbias.run.rundir import RunDir
    from interbias.run.work import RunWork


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


def _fit_data(
    ctx: RunContext, work: RunWork, emb: CellEmbedders, enc: Encoder, cells: list[Cell], what: str
) -> tuple[np.ndarray, np.ndarray, int]:
    """:func:`dev_vectors` of ``cells`` for ``what`` (a back-end to fit or adapt), refused when
    some of the cells are finished (their vectors are not loaded: a resumed run would fit on
    less) or a speaker of the vectors is an eval speaker."""
    pending = {c.id for c, e in work.pending if e is enc}
    if any(c.id not in pending for c in cells):
        raise RunError(f"{enc.label}: {what} is not saved and some of its cells are finished: "
                       f"remove {ctx.run.path} to start over")  # fmt: skip
    vectors, speakers, missing = dev_vectors(ctx, enc, cells, emb)
    overlap = set(speakers) & eval_speakers(ctx)
    if overlap:
        raise RunError(f"{enc.label}: {len(overlap)} speaker(s) of {what} are eval speakers, e.g. {min(overlap)}")
    return vectors, speakers, missing


def _fit_one(
    ctx: RunContext, work: RunWork, emb: CellEmbedders, enc: Encoder, kind: str, refs: list[Cell]
) -> FittedBackend:
    """``enc``'s ``kind`` back-end fitted on the dev embeddings of ``refs`` and saved."""
    vectors, speakers, missing = _fit_data(ctx, work, emb, enc, refs, f"the {kind} back-end")
    try:
        backend = fit_backend(kind, vectors, speakers)
    except InterbiasError as exc:
        raise RunError(f"{enc.label}: {exc} (fitted on {len(vectors)} dev embedding(s) of the reference cells; "
                       "raise trials.dev_share or min_speakers)") from None  # fmt: skip
    fit_on = {"fit_on": "dev split, reference cells", "n_missing": missing, "cells": [c.id for c in refs]}
    save_backend(ctx.run, enc.label, backend, fit_on, ctx.backends.paths(ctx.run, enc.label, kind))
    return backend


def _adapt_one(
    ctx: RunContext, work: RunWork, emb: CellEmbedders, enc: Encoder, base: FittedBackend, cells: list[Cell]
) -> FittedBackend:
    """``base`` adapted to the unlabelled dev embeddings of ``cells`` (one condition) and saved."""
    kind, cond = ctx.exp.backend_of(cells[0]), condition_of(ctx.exp, cells[0])
    vectors, _, missing = _fit_data(ctx, work, emb, enc, cells, f"the {kind} back-end at {cond}")
    try:
        backend = adapt_backend(base, vectors)  # unlabelled: the speakers only serve _fit_data's check
    except InterbiasError as exc:
        raise RunError(f"{enc.label}: {exc} (the dev embeddings of {cond})") from None
    extra = {"fit_on": "dev split, reference cells; adapted to the dev split of its condition",
             "condition": cond, "n_adapt": len(vectors), "n_missing": missing, "cells": [c.id for c in cells]}  # fmt: skip
    save_backend(ctx.run, enc.label, backend, extra, ctx.backends.paths(ctx.run, enc.label, kind, cond))
    return backend


def fit_run_backends(ctx: RunContext, work: RunWork, emb: CellEmbedders) -> RunBackends:
    """Every encoder's back-ends (see the module doc); empty when every cell scores by cosine."""
    from interbias.run.calibrate import reference_cells

    out = ctx.backends = RunBackends(ctx.exp)
    cells = ctx.exp.cells()
    refs = reference_cells(ctx.exp, cells)
    kinds = [k for k in ctx.exp.backends() if k != "cosine"]
    for enc in ctx.encoders:
        todo = {c.id for c, e in work.pending if e is enc}
        for base in dict.fromkeys(base_kind(k) for k in kinds):
            saved = load_backend(ctx.run, enc.label, base, out.paths(ctx.run, enc.label, base))
            if saved is None and not todo:
                continue
            mine = [c for c in refs if base_kind(ctx.exp.backend_of(c)) == base]
            out.fitted[(enc.label, base)] = saved or _fit_one(ctx, work, emb, enc, base, mine)
        for kind in (k for k in kinds if adapts(k)):
            by_cond: dict[str, list[Cell]] = {}
            for c in cells:
                if ctx.exp.backend_of(c) == kind:
                    by_cond.setdefault(condition_of(ctx.exp, c), []).append(c)
            for cond, group in by_cond.items():
                paths = out.paths(ctx.run, enc.label, kind, cond)
                saved = load_backend(ctx.run, enc.label, kind, paths)
                if saved is None and not any(c.id in todo for c in group):
                    continue
                base = out.fitted[(enc.label, base_kind(kind))]
                out.adapted[(enc.label, kind, cond)] = saved or _adapt_one(ctx, work, emb, enc, base, group)
    return out


def backend_record(backends: RunBackends, run: RunDir) -> dict[str, Any]:
    """run.json ``scoring.backend``: the kind (or the back-end factor's levels) and, per model,
    each fitted back-end's record and file."""
    exp = backends.exp
    if all(k == "cosine" for k in exp.backends()):
        return {}
    models: dict[str, Any] = {}
    items = [((m, k, None), be) for (m, k), be in backends.fitted.items()]
    items += [((m, k, c), be) for (m, k, c), be in backends.adapted.items()]
    for (label, kind, cond), be in items:
        rec = backends.paths(run, label, kind, cond)[1]
        saved = json.loads(rec.read_text(encoding="utf-8")) if rec.is_file() else {}
        entry = {**be.record(), "file": f"{BACKENDS_DIR}/{rec.name}", "n_missing": saved.get("n_missing", 0)}
        entry.update({k: saved[k] for k in ("condition", "n_adapt") if k in saved})
        if not backends.named():
            models[label] = entry
        else:
            models.setdefault(label, {})[kind + (f" at {cond}" if cond else "")] = entry
    factor = next((f for f in exp.factors if f.type == "backend"), None)
    head: dict[str, Any] = {"kind": exp.scoring.backend} if factor is None else {
        "factor": factor.name, "levels": {lv.name: lv.backend for lv in factor.levels}}  # fmt: skip
    return {"backend": {**head, "models": models}}
