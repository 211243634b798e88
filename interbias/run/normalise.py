"""Score normalisation in a run: the cohort's embedding items, the normalised row of a scored
cell (a separate results model, ``<model> +<norm>``), and resuming finished ones.

Cohort entries are per-speaker mean embeddings (``cohort.pool: speaker``, WeSpeaker's recipe)
or the utterance embeddings themselves (``pool: utterance``). The cohort is embedded clean (``cohort_chain: clean``) or through the same chain as the side
it normalises (``matched``: the cell's enrolment chain for μ_e, σ_e and its test chain for
μ_t, σ_t). A cohort utterance that fails to embed is left out and counted (run.json
``scoring``); the normalised row is otherwise measured on exactly the raw row's trials.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from interbias.metrics import verification as metrics
from interbias.metrics.score_norm import cohort_stats, normalise
from interbias.metrics.spoof import spoof_summary
from interbias.operators import Chain
from interbias.run.cells import CellScore
from interbias.trials.cohort import Cohort, speaker_means
from interbias.utils.errors import MetricError

if TYPE_CHECKING:
    import pandas as pd

    from interbias.corpora.manifest import Manifest
    from interbias.embedding.stage import ChainItems, Embedder
    from interbias.encoders import Encoder
    from interbias.experiments.decision_spec import ScoreNormSpec
    from interbias.experiments.schema import Cell
    from interbias.run.rundir import RunDir
    from interbias.run.work import RunWork


def norm_top_k(spec: ScoreNormSpec) -> int | None:
    """The top-k of ``spec``: ``None`` (whole cohort) for s-norm."""
    return None if spec.norm == "s-norm" else spec.top_k


def norm_label(model: str, spec: ScoreNormSpec) -> str:
    """The results ``model`` of normalised scores: ``CAM++ +as-norm``."""
    return f"{model} +{spec.norm}"


def cohort_digest(cohort: Cohort, spec: ScoreNormSpec) -> str:
    """sha256 of the cohort's utterance ids and the normalisation settings (a finished normalised
    cell is reused only for the same digest)."""
    pool = ["pool=speaker"] if spec.cohort.pool == "speaker" else []  # utterance: the digest runs had before pools
    text = "\n".join([spec.norm, str(norm_top_k(spec)), spec.cohort_chain, *pool, *cohort.ids])
    return hashlib.sha256(text.encode()).hexdigest()


def cohort_audio_sha256(cohort: Cohort, manifest: Manifest) -> dict[str, str]:
    """sha256 of every cohort utterance's file bytes (``""`` when unreadable: the embedder then
    leaves it out and counts it), for the run id's audio digest: other bytes at a cohort path
    make a new run, as they do for a trial utterance."""
    from interbias.embedding.stage import utterance_sha256
    from interbias.utils.errors import InterbiasError

    by_id = manifest.by_id()
    out: dict[str, str] = {}
    for uid in cohort.ids:
        try:
            out[uid] = utterance_sha256(by_id[uid], manifest)
        except InterbiasError:
            out[uid] = ""
    return out


def cohort_chains(cell: Cell, spec: ScoreNormSpec) -> tuple[Chain, Chain]:
    """The chains the cohort is embedded under for the enrolment and the test side."""
    if spec.cohort_chain == "matched":
        return cell.enrol_chain, cell.test_chain
    return Chain(), Chain()


def add_cohort_items(items: ChainItems, cells: Sequence[Cell], cohort: Cohort, spec: ScoreNormSpec) -> None:
    """Add the (chain, cohort utterance) items that normalising ``cells`` needs."""
    for cell in cells:
        for chain in cohort_chains(cell, spec):
            items.setdefault(chain.fingerprint, (chain, set()))[1].update(cohort.ids)


def _vectors(emb: Embedder, ids: Sequence[str], fp: str, enc: Encoder) -> np.ndarray:
    return np.stack([emb.vectors[(u, fp, enc.fingerprint)] for u in ids])


def _cohort_vectors(emb: Embedder, cohort: Cohort, fp: str, enc: Encoder, pool: str) -> tuple[np.ndarray, int]:
    """The cohort entries under chain ``fp`` (per-speaker means of the utterances that embedded,
    or those utterances) and the number of cohort utterances left out."""
    ok = [u for u in cohort.ids if (u, fp, enc.fingerprint) in emb.vectors and emb.failed(u, fp) is None]
    if len(ok) < 2:
        raise MetricError(f"only {len(ok)} of {len(cohort.ids)} cohort utterances have an embedding")
    vectors = _vectors(emb, ok, fp, enc)
    if pool == "speaker":
        vectors = speaker_means(ok, vectors, cohort.speaker_of)[1]
    return vectors, len(cohort.ids) - len(ok)


def normalised_cell(
    cell: Cell, enc: Encoder, trials: pd.DataFrame, emb: Embedder, cohort: Cohort, spec: ScoreNormSpec, raw: CellScore
) -> tuple[CellScore, int]:
    """The normalised version of ``raw`` (same trials, same counts, normalised scores and the
    metrics of them) and the number of cohort utterances left out (no embedding)."""
    frame = raw.frame.copy()
    keep = ~frame["dropped"].to_numpy(dtype=bool)
    enrol_ids, test_ids = trials["enrol"].to_numpy()[keep], trials["test"].to_numpy()[keep]
    k = norm_top_k(spec)
    (ce, te), missing = cohort_chains(cell, spec), 0
    stats = []
    for ids, side_fp, cohort_fp in (
        (enrol_ids, cell.enrol_chain.fingerprint, ce.fingerprint),
        (test_ids, cell.test_chain.fingerprint, te.fingerprint),
    ):
        uniq = np.unique(ids)
        vecs, n_missing = _cohort_vectors(emb, cohort, cohort_fp, enc, spec.cohort.pool)
        missing += n_missing
        mu, sd = cohort_stats(_vectors(emb, list(uniq), side_fp, enc), vecs, k)
        pos = np.searchsorted(uniq, ids)
        stats += [mu[pos], sd[pos]]
    scores = frame["score"].to_numpy(np.float64).copy()
    scores[keep] = normalise(scores[keep], *stats)
    frame["score"] = scores
    use = keep.copy()
    if "split" in frame.columns:
        use &= frame["split"].to_numpy() == "eval"
    types = frame["trial_type"].to_numpy() if "trial_type" in frame.columns else None
    bona = use if types is None else use & (types != "spoof")
    labels = frame["label"].to_numpy()
    row = {**raw.row, **metrics.summarize(scores[bona], labels[bona]).as_dict()}
    if types is not None:
        row.update(spoof_summary(scores[use], types[use]).as_dict())
    return CellScore(row, frame, raw.failures), missing


def reuse_normalised(work: RunWork, run: RunDir, encoders: Sequence[Encoder], spec: ScoreNormSpec, digest: str) -> None:
    """Take finished normalised rows into ``work.rows``; a raw cell whose normalised row is
    missing or was made with another cohort goes back to pending (scored again, with both)."""
    for enc in encoders:
        label = norm_label(enc.label, spec)
        for cell in work.cells:
            if (enc.label, cell.id) not in work.rows or any(c is cell and e is enc for c, e in work.pending):
                continue
            rec = run.cell_record(label, cell.id)
            raw = run.cell_record(enc.label, cell.id) or {}
            if (
                rec is not None
                and rec.get("cohort_sha256") == digest
                and rec.get("audio_sha256") == raw.get("audio_sha256")
            ):
                work.rows[(label, cell.id)] = rec["row"]
                work.reused += 1
            else:
                del work.rows[(enc.label, cell.id)]
                work.reused -= 1
                work.pending.append((cell, enc))


def scoring_record(spec: ScoreNormSpec, cohort: Cohort | None, missing: dict[str, int]) -> dict[str, Any]:
    """run.json ``scoring``: the normalisation, its cohort and cohort utterances left out per model."""
    if cohort is None:
        return {"norm": "none"}
    return {
        "norm": spec.norm,
        "top_k": norm_top_k(spec),
        "cohort_chain": spec.cohort_chain,
        "pool": spec.cohort.pool,
        "cohort": {
            **cohort.info,
            "utterances": list(cohort.ids),
            "utterance_speakers": [cohort.speaker_of[u] for u in cohort.ids],
        },
        "cohort_left_out": missing,
        "formula": "s' = ½·[(s − μ_e)/σ_e + (s − μ_t)/σ_t] over the top_k cohort scores (WeSpeaker score_norm.py); "
        + (
            "a cohort entry is a speaker's mean embedding (WeSpeaker tools/vector_mean.py)"
            if spec.cohort.pool == "speaker"
            else "a cohort entry is one utterance's embedding"
        ),
    }
