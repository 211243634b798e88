"""Scoring one cell × encoder from the embedding stage's vectors.

A trial is dropped (and counted) when either side's utterance has no embedding under the
cell's chain for that side; more dropped trials than ``max_failure_share`` make the cell an
error. The kept trials are cosine-scored; metrics use the measured ones
(:func:`interbias.run.measured.measured`: eval split, bona fide, not dropped).

With ``trials: {operator_draws: K}`` a cell whose chains hold a random operator is scored once
per draw (each draw's chains realised from their own derived seeds); its metrics are the mean
over draws, with the between-draw SD (ddof 1) beside them, and its scores file holds draw 0's
``score`` plus ``score_d1`` … ``score_d{K-1}``.

With ``trials: {enrol_utterances: K}`` (K > 1) a trial's model is its K enrolment utterances
(``enrol``, ``enrol_2`` …): scored by the cosine of the test embedding with the mean of the K
L2-normalised enrolment embeddings rescaled to unit length (``scoring: {enrol:
embedding-mean}``, the default), or by the mean of the K cosine scores (``score-mean``). A trial
is dropped when any of its K enrolment utterances has no embedding.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from interbias.audio.frontend import rate_changes
from interbias.audio.quality import trial_columns
from interbias.embedding.stage import Embedder
from interbias.encoders import Encoder
from interbias.experiments.schema import Cell
from interbias.metrics import verification as metrics
from interbias.metrics.backends import FittedBackend, backend_scores
from interbias.metrics.registry import results_columns, spec
from interbias.metrics.spoof import spoof_summary
from interbias.run.measured import in_split, measured
from interbias.run.scoring import cosine_scores
from interbias.trials.enrolment import enrol_columns
from interbias.utils.errors import CellError, InterbiasError, MetricError, TrialError

#: results columns of runs with ``operator_draws`` > 1 (see the module docs).
DRAW_COLUMNS = ["operator_draws", "eer_draw_sd", "min_dcf_draw_sd"]


@dataclass
class CellScore:
    """A scored cell: its metrics and counts (a results row's measured part), its per-trial
    scores frame (the run directory's scores file) and its failed utterances."""

    row: dict[str, Any]
    frame: pd.DataFrame
    failures: list[dict[str, str]]


def failed_items(cell: Cell, enc: Encoder, trials: pd.DataFrame, emb: Embedder) -> dict[tuple[str, str], str]:
    """(utterance id, side) -> why it has no embedding under the side's chain."""
    enrol_ids, _ = trial_ids(trials, enrol_columns(trials))
    test_ids, _ = trial_ids(trials, ["test"])
    return _by_side(
        missing_ids(emb, enrol_ids, cell.enrol_chain.fingerprint, enc),
        missing_ids(emb, test_ids, cell.test_chain.fingerprint, enc),
    )


def _by_side(enrol: dict[str, str], test: dict[str, str]) -> dict[tuple[str, str], str]:
    """The enrolment and test sides' missing ids as one (utterance id, side) -> why mapping."""
    return {**{(u, "enrol"): m for u, m in enrol.items()}, **{(u, "test"): m for u, m in test.items()}}


def missing_ids(emb: Embedder, ids: np.ndarray, chain_fp: str, enc: Encoder) -> dict[str, str]:
    """utterance id -> why it has no embedding under ``chain_fp`` (``ids`` without one)."""
    out: dict[str, str] = {}
    for uid in ids:
        msg = emb.failed(uid, chain_fp)
        if msg is None and (uid, chain_fp, enc.fingerprint) not in emb.vectors:
            msg = f"{uid}: no embedding was produced"
        if msg is not None:
            out[uid] = msg
    return out


def trial_ids(trials: pd.DataFrame, cols: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(the sorted distinct utterance ids of ``trials[cols]``, each trial's position of its ids
    in them: ``len(trials) × len(cols)``), by hashing (one pass, the distinct ids sorted)."""
    values = trials[cols[0]] if len(cols) == 1 else pd.concat([trials[c] for c in cols], ignore_index=True)
    codes, ids = pd.factorize(values, sort=True)
    if (codes < 0).any():
        raise TrialError(f"a trial has no utterance id in column(s) {', '.join(cols)}")
    return np.asarray(ids, dtype=object), codes.reshape(len(cols), len(trials)).T


def _marked(ids: np.ndarray, marked: dict[str, str]) -> np.ndarray:
    """Which of ``ids`` are keys of ``marked``."""
    if not marked:
        return np.zeros(len(ids), dtype=bool)
    return np.fromiter((u in marked for u in ids), dtype=bool, count=len(ids))


def _used(ids: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the ids ``codes`` use, in order; ``codes`` renumbered into them)."""
    used = np.zeros(len(ids), dtype=bool)
    used[codes.ravel()] = True
    return ids[used], (np.cumsum(used) - 1)[codes]


def _stack(emb: Embedder, ids: np.ndarray, chain_fp: str, enc: Encoder) -> np.ndarray:
    if not len(ids):
        return np.zeros((0, 1), np.float32)
    return np.stack([emb.vectors[(u, chain_fp, enc.fingerprint)] for u in ids])


def model_scores(
    enrol: np.ndarray,
    test: np.ndarray,
    enrol_idx: np.ndarray,
    test_idx: np.ndarray,
    mode: str,
    backend: FittedBackend | None = None,
) -> np.ndarray:
    """Scores of trials whose models are rows of ``enrol_idx`` (n trials × K enrolment rows of
    ``enrol``) against ``test[test_idx]``, as the module docs say (``mode``: embedding-mean or
    score-mean); with K = 1 the plain cosine scores. With a fitted ``backend`` the rows are
    first mapped to its features, and a PLDA back-end scores by its log-likelihood ratio."""
    if backend is not None:
        enrol, test = backend.features(enrol), backend.features(test)
        if backend.plda is not None:
            return backend_scores(backend, enrol, test, enrol_idx[:, 0], test_idx)
    if enrol_idx.shape[1] == 1:
        return cosine_scores(enrol, test, enrol_idx[:, 0], test_idx)
    if mode == "score-mean":
        parts = [cosine_scores(enrol, test, enrol_idx[:, j], test_idx) for j in range(enrol_idx.shape[1])]
        return np.mean(parts, axis=0)
    unit = enrol.astype(np.float64) / np.linalg.norm(enrol.astype(np.float64), axis=1, keepdims=True)
    members, model = np.unique(np.sort(enrol_idx, axis=1), axis=0, return_inverse=True)
    mean = unit[members].mean(axis=1)
    mean /= np.linalg.norm(mean, axis=1, keepdims=True)
    return cosine_scores(mean.astype(np.float32), test, model.ravel(), test_idx)


def frontend_counts(emb: Embedder, sides: list[tuple[np.ndarray, str]], sample_rate_hz: int) -> dict[str, Any]:
    """What the front end did to the cell's utterances, counted per (utterance, chain) side
    (``sides``: the utterance ids scored under each chain fingerprint): truncated, downmixed,
    and resampled (up and down separately, with the source rates; see
    :func:`interbias.audio.frontend.rate_changes`); where the front end trimmed padding
    (``n_trimmed``: digital silence removed) or read segments (``n_segments``), those too."""
    truncated = downmixed = windowed = trimmed = segments = 0
    any_windows = any_trim = False
    rates: list[int] = []
    for ids, fp in sides:
        for uid in ids:
            front = emb.frontend_record(uid, fp)
            if not front:
                rates.append(sample_rate_hz)
                continue
            truncated += bool(front.get("truncated"))
            any_windows = any_windows or "windows" in front
            windowed += front.get("windows", 1) > 1
            rates.append(int(front.get("source_rate_hz", sample_rate_hz)))
            downmixed += front.get("channels", 1) > 1
            any_trim = any_trim or "trimmed" in front
            trimmed += sum(front.get("trimmed", ())) > 0
            segments += "segment" in front
    changes = rate_changes(rates, sample_rate_hz)
    out = {"n_truncated": truncated, **changes, "n_downmixed": int(downmixed)}
    if any_windows:  # long_audio: window only
        out["n_windowed"] = int(windowed)
    if any_trim:  # trim_silence only
        out["n_trimmed"] = int(trimmed)
    if segments:
        out["n_segments"] = int(segments)
    return out


def score_cell(
    cell: Cell,
    enc: Encoder,
    trials: pd.DataFrame,
    emb: Embedder,
    max_failure_share: float,
    sample_rate_hz: int,
    *,
    enrol: str = "embedding-mean",
    backend: FittedBackend | None = None,
) -> CellScore:
    """Score ``trials`` (the cell's stratum) with ``enc``'s vectors, once per draw of its random
    operators (see the module docs); raise :class:`CellError` (with the failed utterances) when
    more than ``max_failure_share`` of the trials of a draw would be dropped or the metrics are
    undefined on what is left."""
    draws = cell.draws()
    try:
        parts = [
            score_draw(
                replace(cell, enrol_chain=e, test_chain=t, n_draws=1),
                enc,
                trials,
                emb,
                max_failure_share,
                sample_rate_hz,
                enrol=enrol,
                backend=backend,
            )
            for e, t in draws
        ]
    except CellError:
        raise
    except InterbiasError as exc:  # every errored cell's line names its cell and model
        raise CellError(f"cell {cell.id} / {enc.label}: {exc}") from None
    return parts[0] if cell.n_draws == 1 else combine_draws(parts)


def combine_draws(parts: list[CellScore]) -> CellScore:
    """One cell's score over its draws: metrics averaged, between-draw SD of EER and minDCF (0
    for a cell with no random operator: its one draw is every draw), failure counts the largest
    of any draw, draw 0's scores plus one score column per further draw."""
    row = dict(parts[0].row)
    for m in results_columns():
        values = np.array([float(p.row[m]) for p in parts])
        row[m] = float(values.mean())
        if spec(m).draw_sd:
            row[f"{m}_draw_sd"] = float(values.std(ddof=1)) if len(values) > 1 else 0.0
    row["operator_draws"] = len(parts)
    for count in ("n_failed", "n_dropped_trials"):
        row[count] = max(int(p.row[count]) for p in parts)
    frame = parts[0].frame.copy()
    for k, p in enumerate(parts[1:], start=1):
        frame[f"score_d{k}"] = p.frame["score"].to_numpy()
        frame["dropped"] = frame["dropped"].to_numpy() | p.frame["dropped"].to_numpy()
    failures = [dict(f, draw=str(k)) if k else f for k, p in enumerate(parts) for f in p.failures]
    return CellScore(row, frame, failures)


def score_draw(
    cell: Cell,
    enc: Encoder,
    trials: pd.DataFrame,
    emb: Embedder,
    max_failure_share: float,
    sample_rate_hz: int,
    *,
    enrol: str = "embedding-mean",
    backend: FittedBackend | None = None,
) -> CellScore:
    """Score ``trials`` under the cell's two chains (one draw)."""
    efp, tfp = cell.enrol_chain.fingerprint, cell.test_chain.fingerprint
    ids_e, codes_e = trial_ids(trials, enrol_columns(trials))
    ids_t, codes_t = trial_ids(trials, ["test"])
    miss_e, miss_t = missing_ids(emb, ids_e, efp, enc), missing_ids(emb, ids_t, tfp, enc)
    failed = _by_side(miss_e, miss_t)
    bad_enrol = _marked(ids_e, miss_e)[codes_e].any(axis=1)
    bad_test = _marked(ids_t, miss_t)[codes_t[:, 0]]
    dropped = bad_enrol | bad_test
    n_dropped = int(dropped.sum())
    share = n_dropped / max(1, len(trials))
    failures = [{"utterance": u, "side": s, "error": m} for (u, s), m in sorted(failed.items())]
    draw = max(cell.enrol_chain.draw, cell.test_chain.draw)
    where = f"cell {cell.id}{f' (draw {draw})' if draw else ''} / {enc.label}"
    if share > max_failure_share:
        first = next(iter(failed.values()))
        raise CellError(
            f"{where}: {len(failed)} utterance(s) failed, dropping {n_dropped} of "
            f"{len(trials)} trials ({share:.1%} > the {max_failure_share:.1%} limit); first: {first}",
            failures,
        )
    keep = ~dropped
    uniq_e, enrol_idx = _used(ids_e, codes_e[keep])
    uniq_t, test_idx = _used(ids_t, codes_t[keep, 0])
    scores = np.full(len(trials), np.nan)
    scores[keep] = model_scores(
        _stack(emb, uniq_e, efp, enc), _stack(emb, uniq_t, tfp, enc), enrol_idx, test_idx, enrol, backend
    )
    labels = trials["label"].to_numpy()
    use = keep & in_split(trials, "eval")
    types = trials["trial_type"].to_numpy() if "trial_type" in trials.columns else None
    bona = keep & measured(trials)
    kept = trials[bona]
    try:
        summary = metrics.summarize(scores[bona], labels[bona]).as_dict()
    except MetricError as exc:
        why = f"; {len(failed)} utterance(s) failed, dropping {n_dropped} of {len(trials)} trials" if failed else ""
        raise CellError(f"{where}: {exc}{why}", failures) from None
    row = {
        **summary,
        "n_speakers": len(pd.unique(pd.concat([kept["enrol_speaker"], kept["test_speaker"]], ignore_index=True))),
        "n_failed": len(failed),
        "n_utterances": len(set(uniq_e) | set(uniq_t)),
        "n_dropped_trials": n_dropped,
        **frontend_counts(emb, [(uniq_e, efp), (uniq_t, tfp)], sample_rate_hz),
    }
    if types is not None:
        row.update(spoof_summary(scores[use], types[use]).as_dict())
    frame = pd.DataFrame(
        {
            "trial_id": trials["trial_id"].to_numpy(),
            "label": labels.astype(np.int8),
            "score": scores,
            "dropped": dropped,
        }
    )
    for col in ("split", "trial_type"):
        if col in trials.columns:
            frame[col] = trials[col].to_numpy()
    if getattr(emb, "need_quality", False):  # a QMF calibration's features (interbias.audio.quality)
        add_quality_columns(frame, trials, emb, (efp, tfp), enc.fingerprint)
    return CellScore(row, frame, failures)


def add_quality_columns(
    frame: pd.DataFrame, trials: pd.DataFrame, emb: Embedder, chains: tuple[str, str], enc_fp: str
) -> None:
    """The ``q_<measure>_min/max`` columns of ``frame`` from the embedder's quality measures
    under the (enrolment, test) ``chains`` and the encoder ``enc_fp``."""
    ids = (trials[enrol_columns(trials)[0]].to_numpy(), trials["test"].to_numpy())
    sides = [
        {u: emb.quality[(u, chain, enc_fp)] for u in set(side) if (u, chain, enc_fp) in emb.quality}
        for side, chain in zip(ids, chains, strict=True)
    ]
    for name, values in trial_columns(*ids, *sides).items():
        frame[name] = values
