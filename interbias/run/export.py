"""Export a run's per-trial scores and cached embeddings in formats other tools read.

Score files, one per results row (model × cell), hold the trials the row's metrics were
computed on (:func:`interbias.run.measured.measured`: eval split, bona fide, not dropped; dropped
trials and dev/spoof trials are left out and counted in ``export.json`` as ``n_dropped`` and
``n_not_measured``), scores written at
full float64 precision so ``interbias scores metrics FILE`` reproduces the row's EER and minDCF exactly:

- ``wespeaker``: ``<model>/<cell>.score``, lines ``enrol test score target|nontarget``
  (WeSpeaker's score files; its ``compute_metrics`` reads them).
- ``kaldi``: ``<model>/<cell>.scores`` with the same lines, plus ``<model>/<cell>.trials``
  (``enrol test target|nontarget``, Kaldi's trials file).
- ``csv``: ``<model>/<cell>.csv`` with ``trial_id, stratum, enrol, test, enrol_speaker,
  test_speaker, score, label`` (label 1/0).

Utterance names are the trial list's own names for an external list, else manifest ids; a
trial model of K > 1 enrolment utterances (``trials.enrol_utterances``) is named by its K ids
joined with ``+``.

Embeddings (``embeddings/<model>/<chain fingerprint>.npz``, arrays ``ids``, ``vectors``
(N × D float32, L2-normalised), ``chain``, ``chain_fingerprint``, ``encoder``,
``encoder_fingerprint``) are read back from the embedding cache under the keys the run used
(utterance sha256, chain and front-end key, encoder fingerprint); utterances the cache lacks are counted.
A run with score normalisation also gets ``embeddings/<model>/cohort-<chain fingerprint>.npz``
per chain its cohort was embedded under: the cohort utterances' vectors with ``speakers`` (each
utterance's speaker) and ``pool`` (``speaker``: a cohort entry is the mean of a speaker's rows;
``utterance``: each row is an entry), from run.json ``scoring``.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from interbias.run.measured import SV_WORDS, bona_fide, format_scores, in_split, measured
from interbias.run.measured import kept as not_dropped
from interbias.run.rundir import EXPERIMENT, RESULTS, RUN_JSON, TRIALS, TRIALS_META, RunDir
from interbias.trials.enrolment import enrol_columns, first_enrolment
from interbias.trials.sampler import partners
from interbias.utils import atomic
from interbias.utils.errors import AudioError, RunError
from interbias.utils.paths import readable_slug

if TYPE_CHECKING:
    from interbias.corpora.manifest import Manifest
    from interbias.experiments.schema import Experiment

FORMATS = ("wespeaker", "kaldi", "csv")
_SUFFIX = {"wespeaker": ".score", "kaldi": ".scores", "csv": ".csv"}


@dataclass
class ExportSummary:
    out: Path
    files: list[dict[str, Any]] = field(default_factory=list)
    embeddings: list[dict[str, Any]] = field(default_factory=list)


def _utterance_sha(manifest: Any, u: Any) -> str | None:
    """The sha256 the run keyed ``u``'s embeddings by; ``None`` when its file is unreadable."""
    from interbias.embedding.stage import utterance_sha256

    try:
        return utterance_sha256(u, manifest)
    except AudioError:
        return None


def _require(run: RunDir, *names: str) -> None:
    missing = run.missing(*names)
    if missing:
        raise RunError(f"{run.path} is not a complete run directory: missing {', '.join(missing)}")


def _names(trials: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    enrol = trials["enrol_name"] if "enrol_name" in trials else trials["enrol"]
    cols = enrol_columns(trials)
    if len(cols) > 1:
        enrol = trials[cols].astype(str).agg("+".join, axis=1)
    test = trials["test_name"] if "test_name" in trials else trials["test"]
    return enrol.astype(str), test.astype(str)


def _with_trial_columns(scores: pd.DataFrame, trials: pd.DataFrame) -> pd.DataFrame:
    """``scores`` with the trial list's ``split``/``trial_type`` where the scores file lacks them."""
    scores = scores.copy()
    for col in ("split", "trial_type"):
        if col in trials.columns and col not in scores.columns:
            scores[col] = trials[col].reindex(scores["trial_id"].to_numpy()).to_numpy()
    return scores


def export_scores(run_dir: Path, fmt: str, out: Path) -> ExportSummary:
    """Write one score file per results row of ``run_dir`` into ``out`` (see module docs)."""
    if fmt not in FORMATS:
        raise RunError(f"export format {fmt!r} is not one of {', '.join(FORMATS)}")
    run_dir, out = Path(run_dir), Path(out)
    run = RunDir(run_dir)
    _require(run, RESULTS, TRIALS, TRIALS_META)
    results = run.read_results(dtype={"model": str, "cell": str})
    trials = run.read_trials().frame.set_index("trial_id", drop=False)
    base_names = enrol_names, test_names = _names(trials)
    if fmt != "csv":
        spaced = sorted({n for n in (*enrol_names, *test_names) if any(c.isspace() for c in n)})
        if spaced:
            raise RunError(
                f"{len(spaced)} utterance name(s) contain whitespace, which the {fmt} format cannot hold; "
                f"first: {', '.join(repr(n) for n in spaced[:5])} (use --format csv)"
            )
    summary = ExportSummary(out)
    exp = run.experiment()  # a protocol level's K names a cell's models by its first K ids
    k_of = {c.id: c.enrol_utterances for c in exp.cells()} if exp is not None else {}
    for row in results.itertuples(index=False):
        k = k_of.get(row.cell)
        enrol_names, test_names = base_names if k is None else _names(first_enrolment(trials, k))
        src = run.scores_path(row.model, row.cell)
        if not src.is_file():
            raise RunError(f"{src} is missing: results row {row.model} / {row.cell} has no score file")
        scores = _with_trial_columns(pd.read_parquet(src), trials)
        kept = scores[measured(scores)]
        ids = kept["trial_id"].to_numpy()
        sub = trials.loc[ids]
        if not np.array_equal(sub["label"].to_numpy(), kept["label"].to_numpy()):
            raise RunError(f"{src}: labels disagree with trials.parquet")
        label_words = np.array(SV_WORDS)[kept["label"].to_numpy(dtype=np.int64)]
        e_names, t_names = enrol_names.loc[ids].to_numpy(), test_names.loc[ids].to_numpy()
        score_text = format_scores(kept["score"].to_numpy(dtype=np.float64))
        folder, stem = out / readable_slug(row.model), readable_slug(row.cell)
        target = folder / f"{stem}{_SUFFIX[fmt]}"
        if fmt == "csv":
            frame = pd.DataFrame(
                {
                    "trial_id": ids,
                    "stratum": sub["stratum"].to_numpy(),
                    "enrol": e_names,
                    "test": t_names,
                    "enrol_speaker": sub["enrol_speaker"].to_numpy(),
                    "test_speaker": sub["test_speaker"].to_numpy(),
                    "score": score_text,
                    "label": kept["label"].to_numpy(dtype=np.int64),
                }
            )
            atomic.write_csv(target, frame)
        else:
            body = "".join(
                f"{e} {t} {s} {w}\n" for e, t, s, w in zip(e_names, t_names, score_text, label_words, strict=True)
            )
            atomic.write_text(target, body)
            if fmt == "kaldi":
                trials_body = "".join(f"{e} {t} {w}\n" for e, t, w in zip(e_names, t_names, label_words, strict=True))
                atomic.write_text(folder / f"{stem}.trials", trials_body)
        summary.files.append(
            {
                "model": row.model,
                "cell": row.cell,
                "file": str(target.relative_to(out)),
                "n_trials": len(kept),
                "n_dropped": int((~not_dropped(scores)).sum()),
                "n_not_measured": int((~in_split(scores, "eval") | ~bona_fide(scores)).sum()),
                "eer": row.eer,
                "min_dcf": row.min_dcf,
            }
        )
    return summary


def export_embeddings(run_dir: Path, out: Path, *, cache_dir: Path | None = None) -> list[dict[str, Any]]:
    """Write the run's cached embeddings per encoder and chain as ``.npz`` (see module docs)."""
    from interbias.corpora import load_corpus
    from interbias.embedding.cache import EmbeddingCache
    from interbias.embedding.stage import chains_for_cells

    run, out = RunDir(run_dir), Path(out)
    _require(run, RUN_JSON, EXPERIMENT, TRIALS, TRIALS_META)
    info = run.read_json(RUN_JSON) or {}
    exp = run.experiment()
    assert exp is not None  # required above
    if len({exp.frontend_for(c) for c in exp.cells()}) > 1:
        raise RunError(
            f"{run.path}: its cells embed under different front ends (a protocol factor sets the VAD); "
            "the export names embeddings by chain alone and is not defined for such a run"
        )
    cache = Path(cache_dir) if cache_dir else Path(info["cache"])
    db_path = cache / "embeddings.sqlite"
    if not db_path.is_file():
        raise RunError(f"embedding cache {db_path} does not exist (pass --cache-dir)")
    manifest: Manifest = load_corpus(exp.corpus, root=_root(info), cache=cache)
    if manifest.sha256() != info["corpus"]["manifest_sha256"]:
        raise RunError(f"the corpus manifest changed since run {info['run_id']}: its embeddings cannot be matched")
    trials = run.read_trials()
    exclude = partners(trials.frame)
    by_id = manifest.by_id()
    # chain fingerprint -> (chain, utterance ids scored through it)
    chains = chains_for_cells(exp.cells(), trials.for_stratum)
    sha = {uid: _utterance_sha(manifest, by_id[uid]) for uid in sorted({u for _, ids in chains.values() for u in ids})}
    cohort = _cohort(info, exp, manifest)
    db = EmbeddingCache(db_path)
    try:
        listing = [
            _export_chain(db, out, enc, chain, fp, ids, sha, exclude, exp.frontend, manifest=manifest)
            for enc in info["encoders"]
            for fp, (chain, ids) in sorted(chains.items())
        ]
        if cohort is not None:
            ids, speakers, pool, cohort_chains = cohort
            sha = {uid: _utterance_sha(manifest, by_id[uid]) for uid in ids}
            for enc in info["encoders"]:
                for fp, chain in sorted(cohort_chains.items()):
                    entry = _export_chain(
                        db, out, enc, chain, fp, set(ids), sha, {}, exp.frontend, prefix="cohort-", manifest=manifest
                    )
                    entry.update(_add_speakers(out / entry["file"], speakers, pool))
                    listing.append(entry)
        return listing
    finally:
        db.close()


def _cohort(
    info: dict[str, Any], exp: Experiment, manifest: Manifest
) -> tuple[list[str], dict[str, str], str, dict] | None:
    """(cohort utterance ids, their speakers, pool, chains by fingerprint) of a normalised run."""
    from interbias.operators import Chain

    rec = info.get("scoring") or {}
    if rec.get("norm", "none") == "none":
        return None
    ids = list(rec["cohort"]["utterances"])
    by_id = manifest.by_id()
    speakers = dict(zip(ids, rec["cohort"].get("utterance_speakers") or [by_id[u].speaker for u in ids], strict=True))
    if rec.get("cohort_chain") == "matched":
        chains = {c.fingerprint: c for cell in exp.cells() for c in (cell.enrol_chain, cell.test_chain)}
    else:
        chains = {Chain().fingerprint: Chain()}
    return ids, speakers, str(rec.get("pool", "utterance")), chains


def _add_speakers(path: Path, speakers: dict[str, str], pool: str) -> dict[str, Any]:
    """Add each row's speaker and the pool to an exported cohort ``.npz``."""
    with np.load(path, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    arrays["speakers"] = np.array([speakers[str(u)] for u in arrays["ids"]], dtype=str)
    arrays["pool"] = np.array(pool)
    _write_npz(path, **arrays)
    return {"cohort": True, "pool": pool}


def _export_chain(
    db: Any,
    out: Path,
    enc: dict[str, Any],
    chain: Any,
    fp: str,
    ids: set[str],
    sha: dict[str, str | None],
    exclude: dict[str, frozenset[str]],
    frontend: Any,
    *,
    prefix: str = "",
    manifest: Any = None,
) -> dict[str, Any]:
    """One encoder × chain: the cached vectors of ``ids`` written as one ``.npz``; its listing."""
    from interbias.embedding.cache import cache_chain_key

    order = sorted(ids)
    inputs = chain.inputs_fingerprint(manifest)
    keys = {
        uid: (sha[uid], cache_chain_key(chain, exclude.get(uid, frozenset()), frontend, inputs), enc["fingerprint"])
        for uid in order
        if sha[uid]
    }
    found = db.get_many(keys.values())
    have = [uid for uid in order if uid in keys and keys[uid] in found]
    lacking = [uid for uid in order if uid not in have]
    vectors = (
        np.stack([found[keys[u]].vector for u in have]).astype(np.float32)
        if have
        else np.zeros((0, enc.get("embedding_dim") or 0), np.float32)
    )
    target = out / "embeddings" / readable_slug(enc["label"]) / f"{prefix}{fp}.npz"
    _write_npz(
        target,
        ids=np.array(have, dtype=str),
        vectors=vectors,
        chain=np.array(chain.label),
        chain_fingerprint=np.array(fp),
        encoder=np.array(enc["label"]),
        encoder_fingerprint=np.array(enc["fingerprint"]),
    )
    return {
        "model": enc["label"],
        "chain": chain.label,
        "chain_fingerprint": fp,
        "file": str(target.relative_to(out)),
        "n": len(have),
        "n_missing": len(lacking),
        "missing_first": lacking[:20],
    }


def _root(info: dict[str, Any]) -> Path | None:
    exp_corpus = info.get("experiment", {}).get("corpus")
    if isinstance(exp_corpus, dict) and exp_corpus.get("manifest"):
        return Path(info["corpus"]["root"])
    return None


def _write_npz(path: Path, **arrays: np.ndarray) -> None:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    atomic.write_bytes(path, buf.getvalue())


def write_export_summary(summary: ExportSummary, fmt: str, run_dir: Path) -> Path:
    """``export.json`` beside the files: what was written from which run, with counts."""
    path = summary.out / "export.json"
    payload = {"run_dir": str(Path(run_dir).resolve()), "format": fmt, "files": summary.files}
    if summary.embeddings:
        payload["embeddings"] = summary.embeddings
    atomic.write_text(path, json.dumps(payload, indent=2, sort_keys=True) + "\n")
    return path
