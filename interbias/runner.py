"""The runner: experiment + corpus + encoders -> results/<run_id>/.

1. Load the experiment, the corpus manifest and every encoder (all failures before work).
2. Derive the run id from what was asked; lock ``results/<run_id>/``.
3. Draw (or re-read and verify) the trial list; every cell and encoder scores exactly it.
4. Embed each needed (utterance, chain) once per encoder, reusing the embedding cache
   (computed by an executor, here or on Ray; the runner alone writes the cache);
   each utterance is decoded once and each chain applied once for all encoders.
5. Score each cell × encoder, write its per-trial scores and a completion record.
6. Assemble results.csv (DESIGN schema) and run.json (provenance, counts, timings).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from interbias import atomic, audio, crashpoints, metrics
from interbias.analysis.fairness import fairness_for_run
from interbias.analysis.spoofing import SPOOF_COLUMNS, dsr_by_cell, spoof_summary
from interbias.cache import EmbeddingCache, Key
from interbias.corpora import check_manifest, check_runnable, load_corpus
from interbias.corpora.attacks import AttackSet, load_attacks
from interbias.encoders import Encoder, load_encoder, overlap_warning, restore_threads
from interbias.errors import AudioError, EncoderError, InterbiasError, RunError
from interbias.executors import EmbedContext, EmbedResult, EmbedTask, Executor, make_executor
from interbias.experiments import Cell, Experiment, find_experiment, load_experiment, resource_problems, with_data
from interbias.lock import RunLock
from interbias.manifest import Manifest, Utterance
from interbias.operators import Chain
from interbias.paths import cache_dir as default_cache_dir
from interbias.paths import conditions_dir, slug
from interbias.progress import Reporter, embeddings_ahead
from interbias.results import COLUMNS, hardware, package_versions, revision
from interbias.scoring import cosine_scores
from interbias.seeding import canonical_json, sha256_text
from interbias.trials import TrialList, draw_trials, external_trials, partners

#: Embeddings written to the cache per transaction.
_CACHE_BATCH = 64


@dataclass
class RunOptions:
    experiment: str
    encoders: Sequence[str] = ("CAM++", "GE2E", "mfcc-stats")
    corpus: str | None = None
    corpus_root: Path | None = None
    out: Path = Path("results")
    device: str = "cpu"
    max_trials: int | None = None
    max_failure_share: float = 0.01
    cache_dir: Path | None = None
    quiet: bool = False
    #: A user's manifest (CSV/JSONL/Lhotse) replacing the experiment's corpus, its data root,
    #: and an external trial list (with its format) replacing the sampled one.
    manifest: Path | None = None
    data_root: Path | None = None
    trials: Path | None = None
    trials_format: str | None = None
    #: Who computes embeddings: ``local`` (this process) or ``ray`` (see interbias.executors).
    executor: str = "local"
    #: Ray cluster address for ``executor="ray"`` (None: a local Ray instance).
    address: str | None = None
    command: list[str] = field(default_factory=lambda: list(sys.argv))


@dataclass
class RunOutcome:
    run_dir: Path
    results: pd.DataFrame
    n_embedded: int
    n_cached: int
    cells_done_before: int
    errored_cells: list[str]


def _check_device(device: str) -> None:
    if device == "cpu":
        return
    import torch

    if device.startswith("cuda") and not torch.cuda.is_available():
        raise EncoderError(f"--device {device} requested but CUDA is not available on this machine")
    if not device.startswith("cuda"):
        raise EncoderError(f"--device {device!r}: use cpu or cuda[:N]")


def load_encoders(
    labels: Sequence[str], device: str, options: dict[str, dict[str, Any]] | None = None
) -> list[Encoder]:
    """Load every requested encoder (with its ``options``), or fail listing every one that is unavailable."""
    _check_device(device)
    encoders, problems = [], []
    for label in labels:
        try:
            encoders.append(load_encoder(label, device=device, options=(options or {}).get(label)))
        except EncoderError as exc:
            problems.append(str(exc))
    restore_threads()
    if problems:
        raise EncoderError("unavailable encoder(s): " + "; ".join(problems))
    if len({e.label for e in encoders}) != len(encoders):
        raise EncoderError("an encoder label is listed twice")
    return encoders


def _torch_threads() -> int:
    import torch

    return torch.get_num_threads()


def run_id_for(
    exp: Experiment,
    manifest: Manifest,
    encoders: Sequence[Encoder],
    rev: str,
    max_trials: int | None,
    listed: TrialList | None = None,
    attacks_sha256: str | None = None,
) -> str:
    payload = {
        "experiment": exp.resolved(),
        "manifest": manifest.sha256(),
        "max_trials": max_trials,
        "encoders": [[e.label, e.fingerprint] for e in encoders],
        "revision": rev,
    }
    if exp.corpus.manifest:  # a user's manifest: where its relative paths point matters too
        payload["manifest_root"] = str(manifest.root.resolve())
    if listed is not None:
        payload["trial_list"] = [listed.sha256, listed.info["file_sha256"]]
    if attacks_sha256 is not None:  # spoofing experiments: the attack audio's content
        payload["attacks"] = attacks_sha256
    return f"{exp.name}-{hashlib.sha256(canonical_json(payload).encode()).hexdigest()[:12]}"


def _utterance_sha(u: Utterance, manifest: Manifest) -> str:
    """sha256 of the file's bytes (the cache key's audio component); a manifest that records
    another sha256 means the file changed after the manifest was made: an error, not a key."""
    try:
        sha = hashlib.sha256(manifest.resolve(u).read_bytes()).hexdigest()
    except OSError as exc:
        raise AudioError(f"{u.id}: cannot read {u.path} ({exc.strerror or exc})") from exc
    if u.sha256 and u.sha256 != sha:
        raise AudioError(
            f"{u.id}: {u.path} has sha256 {sha[:12]}…, the manifest records {u.sha256[:12]}… (the file changed)"
        )
    return sha


def cache_chain_key(chain: Chain, exclude: frozenset[str], frontend: audio.FrontEnd) -> str:
    """The embedding cache's chain component: the chain's key (:meth:`Chain.key`) plus a
    fingerprint of the front-end rules (rate, minimum and maximum duration), so an embedding
    made under other front-end rules is never served."""
    fe = sha256_text(canonical_json(dataclasses.asdict(frontend)))[:8]
    return f"{chain.key(exclude)}@fe{fe}"


class _Embedder:
    """Computes missing embeddings for (utterance, chain) items across several encoders."""

    def __init__(
        self,
        exp: Experiment,
        manifest: Manifest,
        encoders: Sequence[Encoder],
        cache: EmbeddingCache,
        reporter: Reporter,
    ) -> None:
        self.exp, self.manifest, self.encoders = exp, manifest, encoders
        self.cache, self.reporter = cache, reporter
        self.by_id = manifest.by_id()
        self.sha: dict[str, str] = {}
        self.failures: dict[tuple[str, str], str] = {}  # (utt id, chain fp) -> message
        self.vectors: dict[tuple[str, str, str], np.ndarray] = {}  # (utt id, chain fp, enc fp)
        self.realised: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self.n_embedded = 0
        self.n_cached = 0
        self.exclude: dict[str, frozenset[str]] = {}
        #: (utt id, chain fp) -> the cache's chain component (:func:`cache_chain_key`).
        self.cache_keys: dict[tuple[str, str], str] = {}

    def utt_sha(self, uid: str) -> str | None:
        if uid not in self.sha:
            try:
                self.sha[uid] = _utterance_sha(self.by_id[uid], self.manifest)
            except AudioError as exc:
                self.sha[uid] = ""
                self.failures[(uid, "*")] = str(exc)
        return self.sha[uid] or None

    def run(self, items: dict[str, tuple[Chain, set[str]]], executor: Executor | None = None) -> None:
        """Fill ``vectors`` for ``items`` from the cache, computing the rest with ``executor``
        (default: this process, on the encoders' device)."""
        if executor is None:
            executor = make_executor("local", device=self.encoders[0].device if self.encoders else "cpu")
        wanted: list[tuple[str, Chain, Encoder]] = []
        keys: list[Key] = []
        for _fp, (chain, uids) in sorted(items.items()):
            for uid in sorted(uids):
                sha = self.utt_sha(uid)
                if sha is None:
                    continue
                ckey = cache_chain_key(chain, self.exclude.get(uid, frozenset()), self.exp.frontend)
                self.cache_keys[(uid, chain.fingerprint)] = ckey
                for enc in self.encoders:
                    wanted.append((uid, chain, enc))
                    keys.append((sha, ckey, enc.fingerprint))
        found = self.cache.get_many(keys)
        todo: dict[str, dict[str, tuple[Chain, list[str]]]] = {}
        for (uid, chain, enc), key in zip(wanted, keys, strict=True):
            entry = found.get(key)
            if entry is not None:
                self.vectors[(uid, chain.fingerprint, enc.fingerprint)] = entry.vector
                self.realised[(uid, chain.fingerprint)] = entry.realised
                self.n_cached += 1
            else:
                slot = todo.setdefault(uid, {})
                slot.setdefault(chain.fingerprint, (chain, []))[1].append(enc.fingerprint)
        n_todo = sum(len(encs) for per in todo.values() for _, encs in per.values())
        self.reporter.info(embeddings_ahead(self.encoders, todo, len(wanted) - n_todo))
        tasks = [
            EmbedTask(
                uid,
                self.sha[uid],
                self.exclude.get(uid, frozenset()),
                tuple((chain, tuple(encs)) for _, (chain, encs) in sorted(todo[uid].items())),
            )
            for uid in sorted(todo)
        ]
        ctx = EmbedContext(self.exp, self.manifest, self.cache.path.parent)
        pending: list[tuple[Key, np.ndarray, list[dict[str, Any]]]] = []
        with self.reporter.task("embedding", sum(t.n_items for t in tasks)) as advance:
            for result in executor.embed(ctx, self.encoders, tasks):
                self._take(result, pending)
                advance(result.n_items)
                if len(pending) >= _CACHE_BATCH:
                    self.cache.put_many(pending)
                    pending = []
        if pending:
            self.cache.put_many(pending)

    def _take(self, r: EmbedResult, pending: list[tuple[Key, np.ndarray, list[dict[str, Any]]]]) -> None:
        """Record one executor result; vectors are queued for the cache (written here only)."""
        if r.realised is not None:
            self.realised[(r.uid, r.chain_fp)] = r.realised
        if r.error is not None or r.vector is None:
            self.failures[(r.uid, r.chain_fp)] = r.error or f"{r.uid}: no embedding was produced"
            return
        self.vectors[(r.uid, r.chain_fp, r.encoder_fp)] = r.vector
        key = (self.sha[r.uid], self.cache_keys[(r.uid, r.chain_fp)], r.encoder_fp)
        pending.append((key, r.vector, r.realised or []))
        self.n_embedded += 1
        crashpoints.reached("embedded")

    def failed(self, uid: str, chain_fp: str) -> str | None:
        return self.failures.get((uid, chain_fp)) or self.failures.get((uid, "*"))


def _audio_digests(trials: TrialList, manifest: Manifest) -> tuple[dict[str, str], dict[str, str]]:
    """sha256 of every trial utterance's file (``""`` when unreadable) and, per stratum, one
    digest of its utterances' hashes: a finished cell is reused only for the same audio."""
    by_id = manifest.by_id()
    shas: dict[str, str] = {}
    for uid in sorted(trials.utterance_ids()):
        try:
            shas[uid] = _utterance_sha(by_id[uid], manifest)
        except InterbiasError:  # unreadable or outside the root: the embedder reports it
            shas[uid] = ""
    digests = {}
    for name in trials.strata:
        sub = trials.for_stratum(name)
        ids = sorted(set(sub["enrol"]) | set(sub["test"]))
        digests[name] = sha256_text(canonical_json([[u, shas[u]] for u in ids]))
    return shas, digests


def _finished(run_dir: Path, cell: Cell, enc: Encoder, trials_sha256: str, audio_sha256: str) -> dict[str, Any] | None:
    """The completion record of ``cell`` × ``enc`` if it is valid for this run: same encoder,
    trials, chains and audio, and its scores file present; else ``None`` (scored again)."""
    path = run_dir / "cells" / slug(enc.label) / f"{slug(cell.id)}.json"
    if not path.is_file() or not (run_dir / "scores" / slug(enc.label) / f"{slug(cell.id)}.parquet").is_file():
        return None
    try:
        rec = json.loads(path.read_text(encoding="utf-8"))
        chains = rec["row"]["chain_fingerprint"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    ok = (
        rec.get("encoder_fingerprint") == enc.fingerprint
        and rec.get("trials_sha256") == trials_sha256
        and rec.get("audio_sha256") == audio_sha256
        and chains == f"{cell.enrol_chain.fingerprint}:{cell.test_chain.fingerprint}"
    )
    return rec if ok else None


def _row_base(exp: Experiment, cell: Cell) -> dict[str, Any]:
    row: dict[str, Any] = {}
    levels = dict(cell.levels)
    for slot, factor in zip("abc", list(exp.factors) + [None] * 3, strict=False):
        row[f"factor_{slot}"] = factor.name if factor else ""
        row[f"level_{slot}"] = levels[factor.name] if factor else ""
        row[f"ref_{slot}"] = factor.reference if factor else ""
    return row


def _score_cell(
    exp: Experiment, cell: Cell, enc: Encoder, trials: pd.DataFrame, emb: _Embedder, max_failure_share: float
) -> tuple[dict[str, Any], pd.DataFrame, list[dict[str, str]]]:
    efp, tfp = cell.enrol_chain.fingerprint, cell.test_chain.fingerprint
    enrol_ids = trials["enrol"].to_numpy()
    test_ids = trials["test"].to_numpy()
    failed_items: dict[tuple[str, str], str] = {}
    for side_ids, fp, side in ((enrol_ids, efp, "enrol"), (test_ids, tfp, "test")):
        for uid in np.unique(side_ids):
            msg = emb.failed(uid, fp)
            if msg is None and (uid, fp, enc.fingerprint) not in emb.vectors:
                msg = f"{uid}: no embedding was produced"
            if msg is not None:
                failed_items[(uid, side)] = msg
    bad_enrol = np.array([(u, "enrol") in failed_items for u in enrol_ids], dtype=bool)
    bad_test = np.array([(u, "test") in failed_items for u in test_ids], dtype=bool)
    dropped = bad_enrol | bad_test
    n_dropped = int(dropped.sum())
    share = n_dropped / max(1, len(trials))
    if share > max_failure_share:
        first = next(iter(failed_items.values()))
        raise RunError(
            f"cell {cell.id} / {enc.label}: {len(failed_items)} utterance(s) failed, dropping {n_dropped} of "
            f"{len(trials)} trials ({share:.1%} > the {max_failure_share:.1%} limit); first: {first}"
        )
    keep = ~dropped
    uniq_e = np.unique(enrol_ids[keep])
    uniq_t = np.unique(test_ids[keep])
    E = (
        np.stack([emb.vectors[(u, efp, enc.fingerprint)] for u in uniq_e])
        if len(uniq_e)
        else np.zeros((0, 1), np.float32)
    )
    T = (
        np.stack([emb.vectors[(u, tfp, enc.fingerprint)] for u in uniq_t])
        if len(uniq_t)
        else np.zeros((0, 1), np.float32)
    )
    scores = np.full(len(trials), np.nan)
    scores[keep] = cosine_scores(
        E, T, np.searchsorted(uniq_e, enrol_ids[keep]), np.searchsorted(uniq_t, test_ids[keep])
    )
    labels = trials["label"].to_numpy()
    # Metrics use the eval split's bona fide trials (all trials when neither feature is used).
    use = keep.copy()
    if "split" in trials.columns:
        use &= trials["split"].to_numpy() == "eval"
    types = trials["trial_type"].to_numpy() if "trial_type" in trials.columns else None
    bona = use if types is None else use & (types != "spoof")
    summary = metrics.summarize(scores[bona], labels[bona])
    kept = trials[bona]
    # what the front end did to the cell's utterances (counted per utterance and side)
    truncated = resampled = downmixed = 0
    for uid, fp in [(u, efp) for u in uniq_e] + [(u, tfp) for u in uniq_t]:
        front = (emb.realised.get((uid, fp)) or [{}])[0].get("frontend", {})
        truncated += bool(front.get("truncated"))
        resampled += front.get("source_rate_hz", exp.frontend.sample_rate_hz) != exp.frontend.sample_rate_hz
        downmixed += front.get("channels", 1) > 1
    row = {
        **summary.as_dict(),
        "n_speakers": len(set(kept["enrol_speaker"]) | set(kept["test_speaker"])),
        "n_failed": len(failed_items),
        "n_utterances": len(set(uniq_e) | set(uniq_t)),
        "n_dropped_trials": n_dropped,
        "n_truncated": truncated,
        "n_resampled": int(resampled),
        "n_downmixed": int(downmixed),
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
    failures = [{"utterance": u, "side": s, "error": m} for (u, s), m in sorted(failed_items.items())]
    return row, frame, failures


def _spoofing_and_fairness(
    run_dir: Path,
    results: pd.DataFrame,
    trials: TrialList,
    scored: Manifest,
    attacks: AttackSet | None,
    errored: list[str],
) -> dict[str, Any]:
    """spoofing.csv (DSR over encoders per cell) for spoofing experiments; attributes.parquet
    and the fairness report (fairness.csv, fairness_groups.csv) when dev trials exist. A
    failure here is reported like an errored cell; results.csv is already written."""
    out: dict[str, Any] = {}
    try:
        if attacks is not None and len(results):
            atomic.write_csv(run_dir / "spoofing.csv", dsr_by_cell(results))
            out["spoofing"] = "spoofing.csv"
        if "split" in trials.frame.columns:
            by_id = scored.by_id()
            ids = sorted(trials.utterance_ids())
            table = pd.DataFrame([{k: v for k, v in by_id[u].to_dict().items() if k != "path"} for u in ids])
            atomic.write_parquet(run_dir / "attributes.parquet", table.astype(object).where(table.notna(), None))
            report = fairness_for_run(run_dir) if len(results) else None
            if report is not None:
                out["fairness"] = [p.name for p in report.write(run_dir)]
    except InterbiasError as exc:
        errored.append(f"analysis: {exc}")
    return out


def run(options: RunOptions, reporter: Reporter | None = None) -> RunOutcome:
    reporter = reporter or Reporter(quiet=options.quiet)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    exp = load_experiment(find_experiment(options.experiment, conditions_dir()), corpus=options.corpus)
    if options.manifest or options.data_root or options.trials or options.trials_format:
        exp = with_data(
            exp,
            manifest=options.manifest,
            data_root=options.data_root,
            trials=options.trials,
            trials_format=options.trials_format,
        )
    check_runnable(exp, root=options.corpus_root)  # data it needs is here, before any work
    problems = resource_problems(exp)
    if problems:
        raise RunError(f"{exp.name} cannot run here: " + "; ".join(problems))
    cache = Path(options.cache_dir) if options.cache_dir else default_cache_dir()
    if not 0 <= options.max_failure_share < 1:
        raise RunError("--max-failure-share must be in [0, 1)")
    executor = make_executor(options.executor, device=options.device, address=options.address)
    encoders = load_encoders(options.encoders, options.device)
    timings["load_encoders_s"] = time.perf_counter() - t0
    t = time.perf_counter()
    reporter.info(f"corpus {exp.corpus.name}: preparing manifest")
    manifest = load_corpus(exp.corpus, root=options.corpus_root, cache=cache)
    check_manifest(exp, manifest)
    listed = external_trials(exp, manifest, max_trials=options.max_trials)
    timings["corpus_s"] = time.perf_counter() - t
    attacks = None
    if listed is not None and exp.spoofing is not None:
        raise RunError(f"{exp.name}: spoof trials are sampled; an external trial list (trials.list) cannot carry them")
    if exp.spoofing is not None:
        t = time.perf_counter()
        attacks = load_attacks(exp.spoofing, exp.corpus, manifest, cache)
        timings["attacks_s"] = time.perf_counter() - t
    t = time.perf_counter()  # drawn before the run directory exists: a refusal leaves nothing behind
    trials = (
        listed if listed is not None else draw_trials(exp, manifest, max_trials=options.max_trials, attacks=attacks)
    )
    timings["trials_s"] = time.perf_counter() - t
    rev = revision()
    run_id = run_id_for(exp, manifest, encoders, rev, options.max_trials, listed, attacks.sha256 if attacks else None)
    run_dir = Path(options.out) / run_id
    with RunLock(run_dir) as lock:
        if lock.previous_pid:
            reporter.notice(
                f"note: took over the lock of an earlier run (pid {lock.previous_pid}) that is no longer running"
            )
        atomic.remove_stale_temps(run_dir)
        try:
            return _run_locked(
                exp,
                manifest,
                encoders,
                options,
                reporter,
                run_dir,
                run_id,
                rev,
                cache,
                timings,
                t0,
                trials,
                executor,
                attacks,
            )
        except atomic.WriteError as exc:
            done = sum(1 for _ in (run_dir / "cells").rglob("*.json"))
            raise RunError(
                f"{exc}; {done} finished cell(s) are kept in {run_dir}: rerun the same command to resume"
            ) from exc


def _run_locked(
    exp: Experiment,
    manifest: Manifest,
    encoders: list[Encoder],
    options: RunOptions,
    reporter: Reporter,
    run_dir: Path,
    run_id: str,
    rev: str,
    cache: Path,
    timings: dict[str, float],
    t0: float,
    trials: TrialList,
    executor: Executor,
    attacks: AttackSet | None = None,
) -> RunOutcome:
    t = time.perf_counter()
    scored = attacks.extend(manifest) if attacks else manifest  # attack audio is embedded too
    if (run_dir / "trials.json").is_file():
        try:
            earlier = TrialList.read(run_dir)
        except (OSError, ValueError) as exc:
            raise RunError(
                f"{run_dir}: the saved trial list cannot be read ({type(exc).__name__}); remove the directory to start over"
            ) from exc
        if earlier.sha256 != trials.sha256:
            raise RunError(
                f"{run_dir}: the saved trial list differs from a fresh draw; remove the directory to start over"
            )
    else:
        trials.write(run_dir)
    atomic.write_text(run_dir / "experiment.resolved.json", json.dumps(exp.resolved(), indent=2, sort_keys=True) + "\n")
    timings["trials_s"] += time.perf_counter() - t
    reporter.info(f"run {run_id}: {len(trials.frame)} trials, {len(exp.cells())} cells × {len(encoders)} encoders")

    cells = exp.cells()
    done_dir = run_dir / "cells"
    shas, audio = _audio_digests(trials, scored)
    pending: list[tuple[Cell, Encoder]] = []
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    all_failures: list[dict[str, str]] = []
    for enc in encoders:
        for cell in cells:
            rec = _finished(run_dir, cell, enc, trials.sha256, audio[cell.stratum])
            # a cell kept under a laxer --max-failure-share is scored again (and errors) under this one
            n_cell = len(trials.for_stratum(cell.stratum))
            if rec is not None and rec["row"].get("n_dropped_trials", 0) / max(1, n_cell) <= options.max_failure_share:
                rows[(enc.label, cell.id)] = rec["row"]
                all_failures.extend({"model": enc.label, "cell": cell.id, **f} for f in rec.get("failures", []))
                continue
            pending.append((cell, enc))
    cells_done_before = len(rows)
    reporter.info(
        f"cells: {cells_done_before} of {len(cells) * len(encoders)} finished earlier (reused), {len(pending)} to score"
    )

    # Everything the pending cells need, deduplicated across cells: chain fp -> utterances.
    items: dict[str, tuple[Chain, set[str]]] = {}
    for cell in {c.id: c for c, _ in pending}.values():
        sub = trials.for_stratum(cell.stratum)
        for chain, ids in ((cell.enrol_chain, sub["enrol"]), (cell.test_chain, sub["test"])):
            items.setdefault(chain.fingerprint, (chain, set()))[1].update(ids)
    t = time.perf_counter()
    db = EmbeddingCache(cache / "embeddings.sqlite")
    emb = _Embedder(exp, scored, [e for e in encoders if any(e is pe for _, pe in pending)], db, reporter)
    # Operators that draw other talkers must avoid every speaker an utterance is paired with.
    emb.exclude = partners(trials.frame)
    emb.sha.update({uid: sha for uid, sha in shas.items() if sha})
    if pending:
        emb.run(items, executor)
    db.close()
    timings["embed_s"] = time.perf_counter() - t
    timings["forward_s"] = sum(executor.stats.forward_s.values())
    timings["forward_cpu_s"] = sum(executor.stats.forward_cpu_s.values())

    t = time.perf_counter()
    errored: list[str] = []
    seeds = {name: s.seed for name, s in trials.strata.items()}
    with reporter.task("scoring", len(pending)) as advance:
        for cell, enc in pending:
            sub = trials.for_stratum(cell.stratum)
            try:
                metrics_row, frame, failures = _score_cell(exp, cell, enc, sub, emb, options.max_failure_share)
            except (RunError, InterbiasError) as exc:
                errored.append(str(exc))
                advance(1)
                continue
            row = {
                "experiment": exp.name,
                "dataset": manifest.name,
                "model": enc.label,
                "family": enc.family,
                "cell": cell.id,
                **_row_base(exp, cell),
                **metrics_row,
                "run_id": run_id,
                "revision": rev,
                "encoder_source": enc.source,
                "checkpoint_sha256": enc.checkpoint_sha256,
                "chain_fingerprint": f"{cell.enrol_chain.fingerprint}:{cell.test_chain.fingerprint}",
                "trials_sha256": trials.sha256,
                "seed": seeds[cell.stratum],
                "stratum": cell.stratum,
                "enrol_chain": cell.enrol_chain.label,
                "test_chain": cell.test_chain.label,
                "overlap_warning": overlap_warning(enc.card, manifest.name),
            }
            atomic.write_parquet(run_dir / "scores" / slug(enc.label) / f"{slug(cell.id)}.parquet", frame)
            rec = {
                "row": row,
                "encoder_fingerprint": enc.fingerprint,
                "trials_sha256": trials.sha256,
                "audio_sha256": audio[cell.stratum],
                "failures": failures,
            }
            atomic.write_text(
                done_dir / slug(enc.label) / f"{slug(cell.id)}.json", json.dumps(rec, indent=1, sort_keys=True) + "\n"
            )
            rows[(enc.label, cell.id)] = row
            all_failures.extend({"model": enc.label, "cell": cell.id, **f} for f in failures)
            advance(1)
            crashpoints.reached("cell-done")
    timings["score_s"] = time.perf_counter() - t

    ordered = [rows[(e.label, c.id)] for e in encoders for c in cells if (e.label, c.id) in rows]
    results = pd.DataFrame(ordered, columns=COLUMNS + (SPOOF_COLUMNS if attacks else []))
    atomic.write_csv(run_dir / "results.csv", results)
    analyses = _spoofing_and_fairness(run_dir, results, trials, scored, attacks, errored)
    timings["total_s"] = time.perf_counter() - t0
    run_json = {
        "run_id": run_id,
        "revision": rev,
        "command": options.command,
        "experiment": exp.resolved(),
        "corpus": {
            "name": manifest.name,
            "root": str(manifest.root),
            "manifest_sha256": manifest.sha256(),
            "n_utterances": len(manifest),
        },
        "encoders": [e.provenance() for e in encoders],
        "device": options.device,
        "executor": {**executor.describe(), "torch_threads": _torch_threads()},
        "trials": {
            "sha256": trials.sha256,
            "n": len(trials.frame),
            "source": trials.source,
            "strata": {k: vars(v) for k, v in trials.strata.items()},
            **trials.info,
        },
        "operator_seeds": "derive_rng('operator', utterance sha256, chain fingerprint, position, name)",
        "counts": {
            "cells": len(cells) * len(encoders),
            "cells_complete": len(ordered),
            "cells_reused": cells_done_before,
            "embedded": emb.n_embedded,
            "from_cache": emb.n_cached,
            "forward_calls": {e.label: e.forward_calls + executor.stats.remote_calls[e.label] for e in encoders},
            "forward_s": dict(executor.stats.forward_s),
            "failed_items": len(emb.failures),
        },
        "failures": all_failures[:200],
        "n_failures": len(all_failures),
        "errored_cells": errored,
        "packages": package_versions(),
        "hardware": hardware(),
        "timings": timings,
        "max_failure_share": options.max_failure_share,
        "frontend": dataclasses.asdict(exp.frontend),
        "cache": str(cache),
        **({"analyses": analyses} if analyses else {}),
    }
    atomic.write_text(run_dir / "run.json", json.dumps(run_json, indent=2, sort_keys=True, default=str) + "\n")
    return RunOutcome(run_dir, results, emb.n_embedded, emb.n_cached, cells_done_before, errored)
