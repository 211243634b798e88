"""The countermeasure stage of a spoofing verification run: every trial's test audio scored by
the CMs the experiment names (``spoofing.countermeasures``, or ``interbias run --cm``), so the
after-run analysis can fuse speaker verification with spoofing detection (sasv_fusion.csv,
:mod:`interbias.analysis.security.sasv_run`).

What each CM sees is the waveform the speaker encoders embedded: the utterance decoded by the
cell's front end (its rate, VAD and length rules) and put through the cell's test chain (draw 0)
with the same derived seeds and excluded talkers (:func:`interbias.embedding.tasks.prepare`);
each CM then fits it to its own input length. The CMs take the front end's audio only at their
own rate (16 kHz); another rate is refused before any work.

Per cell it scores

- ``eval``: the test utterance of every eval trial of the cell's stratum (bona fide and spoof);
- ``dev`` (reference cells only: every acoustic factor at its reference level): the test
  utterances of the stratum's dev trials (bona fide) and every attack imitating one of the
  stratum's dev speakers (spoof). Spoof *trials* are drawn in eval only; these attack
  utterances are what calibrates an uncalibrated CM on speakers disjoint from eval.

A CM's score is its log-odds ``logit(bona fide) − logit(spoof)`` (natural log; not a calibrated
LLR: the analysis fits a prior-weighted logistic calibration on the dev rows). Each cell's rows
(every CM) are written with a completion record naming the checkpoints (``cm_cells/``); a rerun
reuses a cell whose record names the same checkpoints. Then ``cm_trials.parquet`` (one row per
CM × cell × eval trial whose test audio was scored) and ``cm_dev.parquet`` (the dev rows). An
utterance the chain fails on is counted per cell (run.json ``countermeasures.failed``), as in
the speaker-encoder path, which drops the same trials.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from interbias.utils import crashpoints
from interbias.utils.errors import AudioError, ConfigError, EncoderError

if TYPE_CHECKING:
    from interbias.experiments.schema import Cell, Experiment
    from interbias.run.inputs import RunContext

#: Columns of a cell's CM rows (``cm_cells/<cell>.parquet``).
CELL_COLUMNS = ("cm", "cell", "role", "id", "cm_class", "cm_score")
#: Utterances decoded and degraded before the CMs score them (bounds the waveforms held in memory).
CHUNK = 256
#: Columns of cm_trials.parquet.
TRIAL_COLUMNS = ("cm", "cell", "trial_id", "cm_score", "calibrated")
#: Columns of cm_dev.parquet.
DEV_COLUMNS = ("cm", "cell", "id", "cm_class", "cm_score")


def load_countermeasures(exp: Experiment) -> dict[str, Any]:
    """The CMs ``exp`` names (label -> loaded CM), checked against every cell's front end before
    any work: a missing checkpoint or another sample rate is one error line."""
    if not exp.spoofing_cms:
        return {}
    from interbias.cm.models import load_cm

    fe = exp.frontend  # a cell's front end differs from it in its VAD only (Experiment.frontend_for)
    models = {label: load_cm(label, resampler=fe.resampler) for label in exp.spoofing_cms}
    for label, cm in models.items():
        if fe.sample_rate_hz != cm.policy.sample_rate_hz:
            raise EncoderError(
                f"{label}: it takes {cm.policy.sample_rate_hz} Hz audio and this experiment's front end gives "
                f"{fe.sample_rate_hz} Hz; spoofing.countermeasures needs "
                f"frontend.sample_rate_hz: {cm.policy.sample_rate_hz}"
            )
    return models


def checkpoints(models: dict[str, Any]) -> dict[str, str]:
    """label -> sha256 of its checkpoint (part of the run id and of each cell's record)."""
    return {label: cm.checkpoint_sha256 for label, cm in models.items()}


def reference_cell(exp: Experiment, cell: Cell) -> bool:
    """Whether every acoustic factor of ``cell`` is at its reference level."""
    levels = dict(cell.levels)
    return all(levels.get(f.name) == str(f.reference) for f in exp.acoustic_factors)


def cell_utterances(ctx: RunContext, cell: Cell) -> list[tuple[str, str, str]]:
    """(role, utterance id, cm_class) the CMs score in ``cell`` (module doc), sorted, unique."""
    frame = ctx.trials.for_stratum(cell.stratum)
    split = frame["split"] if "split" in frame.columns else pd.Series("eval", index=frame.index)
    kinds = frame["trial_type"] if "trial_type" in frame.columns else pd.Series("target", index=frame.index)
    klass = np.where(kinds == "spoof", "spoof", "bonafide")
    rows = {("eval", t, k) for t, s, k in zip(frame["test"], split, klass, strict=True) if s != "dev"}
    if reference_cell(ctx.exp, cell) and (split == "dev").any():
        dev = frame[split == "dev"]
        rows |= {("dev", t, "bonafide") for t in dev["test"]}
        speakers = set(dev["enrol_speaker"]) | set(dev["test_speaker"])
        targets = ctx.attacks.by_target() if ctx.attacks is not None else {}
        rows |= {("dev", a, "spoof") for s in sorted(speakers) for a in targets.get(s, [])}
    return sorted(rows)


def score_cell_cms(
    ctx: RunContext, cell: Cell, models: dict[str, Any], exclude: dict[str, frozenset[str]]
) -> tuple[pd.DataFrame, list[str]]:
    """Every CM's rows of ``cell`` (:data:`CELL_COLUMNS`) and the utterances that failed."""
    from interbias.embedding.stage import utterance_sha256
    from interbias.embedding.tasks import EmbedContext, EmbedTask, prepare

    wanted = cell_utterances(ctx, cell)
    prep = EmbedContext(ctx.exp.frontend_for(cell), ctx.scored, ctx.cache)
    chain = cell.draws()[0][1]
    odds: dict[str, dict[str, float]] = {label: {} for label in models}
    failed: list[str] = []
    uids = sorted({u for _, u, _ in wanted})
    for start in range(0, len(uids), CHUNK):  # a chunk of waveforms in memory at a time
        waves: dict[str, np.ndarray] = {}
        for uid in uids[start : start + CHUNK]:
            try:
                sha = ctx.shas.get(uid) or utterance_sha256(prep.utterance(uid), ctx.scored)
            except AudioError as exc:
                failed.append(str(exc))
                continue
            ready, bad = prepare(prep, EmbedTask(uid, sha, exclude.get(uid, frozenset()), ((chain, ("cm",)),)))
            if bad:
                failed.append(bad[0].error or uid)
            else:
                waves[uid] = ready[0].wave
        for label, cm in models.items():
            logits = cm.logits(list(waves.values())) if waves else np.zeros((0, 2))
            odds[label].update(zip(waves, (logits[:, 1] - logits[:, 0]).tolist(), strict=True))
    rows = [
        (label, cell.id, role, uid, klass, odds[label][uid])
        for label in models
        for role, uid, klass in wanted
        if uid in odds[label]
    ]
    return pd.DataFrame(rows, columns=list(CELL_COLUMNS)), failed


def run_countermeasures(ctx: RunContext, models: dict[str, Any]) -> dict[str, Any] | None:
    """Score every cell with the CMs (resuming by cell), then write cm_trials.parquet and
    cm_dev.parquet; what run.json records under ``countermeasures`` (None without CMs)."""
    if not models:
        return None
    from interbias.trials.sampler import partners

    exclude = partners(ctx.trials.frame)
    shas = checkpoints(models)
    frames, failed, reused = [], {}, 0
    cells = ctx.exp.cells()
    records = {cell.id: ctx.run.cm_cell_record(cell.id) for cell in cells}
    done = {c: r for c, r in records.items() if r is not None and r.get("checkpoints") == shas}
    if done:  # the progress line counts the cells still to score
        ctx.reporter.info(f"countermeasures: {len(done)} of {len(cells)} cell(s) finished earlier (reused)")
    with ctx.reporter.task(f"countermeasures ({', '.join(models)})", len(cells) - len(done)) as advance:
        for cell in cells:
            if (record := done.get(cell.id)) is not None:
                frame, bad = ctx.run.read_cm_cell(cell.id), list(record.get("failed", []))
                reused += 1
            else:
                frame, bad = score_cell_cms(ctx, cell, models, exclude)
                ctx.run.write_cm_cell(cell.id, frame, {"cell": cell.id, "checkpoints": shas, "failed": bad})
                crashpoints.reached("cm-cell-done")
                advance(1)
            frames.append(frame)
            failed[cell.id] = bad
    write_tables(ctx, pd.concat(frames, ignore_index=True), cells)
    return {
        "models": {label: cm.provenance() for label, cm in models.items()},
        "score": "log-odds logit(bona fide) - logit(spoof) of the waveform the encoders embedded",
        "cells_reused": reused,
        "n_failed": sum(len(v) for v in failed.values()),
        "failed": {k: v[:5] for k, v in failed.items() if v},
    }


def write_tables(ctx: RunContext, rows: pd.DataFrame, cells: Sequence[Cell]) -> None:
    """cm_trials.parquet (eval trials × CM × cell) and cm_dev.parquet from every cell's rows."""
    from interbias.run.rundir import CM_DEV, CM_TRIALS
    from interbias.utils import atomic

    trials = ctx.trials.frame
    ev = trials[trials["split"] != "dev"] if "split" in trials.columns else trials
    parts = []
    for cell in cells:
        mine = ev[ev["stratum"] == cell.stratum][["trial_id", "test"]]
        scores = rows[(rows["cell"] == cell.id) & (rows["role"] == "eval")]
        for label in sorted(set(scores["cm"])):
            by_id = scores[scores["cm"] == label].set_index("id")["cm_score"]
            hit = mine[mine["test"].isin(by_id.index)]
            parts.append(
                pd.DataFrame(
                    {"cm": label, "cell": cell.id, "trial_id": hit["trial_id"].to_numpy(dtype=np.int64),
                     "cm_score": by_id.reindex(hit["test"]).to_numpy(dtype=np.float64), "calibrated": False}
                )
            )  # fmt: skip
    columns = list(TRIAL_COLUMNS)
    table = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=columns)
    atomic.write_parquet(ctx.run.file(CM_TRIALS), table[columns].reset_index(drop=True))
    dev = rows[rows["role"] == "dev"][list(DEV_COLUMNS)].reset_index(drop=True)
    atomic.write_parquet(ctx.run.file(CM_DEV), dev)


def check_spoofing_cms(exp: Experiment) -> None:
    """``spoofing.countermeasures`` names CM labels of the registry (no checkpoint is looked for:
    a missing one is refused when the run loads its CMs, before any work, as for E19)."""
    if not exp.spoofing_cms:
        return
    from interbias.cm.models import CM_MODELS

    bad = [label for label in exp.spoofing_cms if label not in CM_MODELS]
    if bad:
        raise ConfigError(
            f"{exp.name}: spoofing.countermeasures: {', '.join(bad)} is not a CM label; known: "
            f"{', '.join(CM_MODELS.names())}"
        )
