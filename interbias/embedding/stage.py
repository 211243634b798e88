"""The embedding stage: (manifest, operator chains, encoders, front end, cache) -> vectors.

:class:`Embedder` serves each (utterance, chain, encoder) item from the embedding cache or has an
executor compute it (each file decoded once, each chain applied once for all encoders); it is
the cache's only writer, through a writer thread (:mod:`interbias.embedding.writer`) that
commits every vector before :meth:`Embedder.run` returns, so the thread that drives the
encoders never waits on the disk. The run conductor, the executors' callers, the embedding export and the
geometry audit all key and fill the cache through this module, so an embedding made one way is
found the other ways.

Contracts kept here:

- a failure is recorded per (utterance id, chain fingerprint); the chain ``"*"``
  (:data:`EVERY_CHAIN`) means the utterance failed before any chain (its file is unreadable or
  changed) and so fails under every chain;
- ``realised[(uid, chain fp)]`` is the list of records of what the chain did; its first record
  is always the front end's (``{"frontend": {...}}``: source rate, channels, truncation), the
  operators' records follow.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from interbias.corpora.manifest import Manifest, Utterance
from interbias.embedding.cache import EmbeddingCache, Key, cache_chain_key, pre_inputs_key
from interbias.embedding.executors import EmbedContext, EmbedResult, EmbedTask, Executor, make_executor
from interbias.embedding.writer import CacheWriter
from interbias.operators import Chain
from interbias.trials.enrolment import enrol_columns, first_enrolment
from interbias.utils import crashpoints
from interbias.utils.errors import AudioError, ExecutorError, InterbiasError
from interbias.utils.progress import Reporter, embeddings_ahead
from interbias.utils.seeding import canonical_json, sha256_file, sha256_text

if TYPE_CHECKING:
    import pandas as pd

    from interbias.audio.frontend import FrontEnd
    from interbias.encoders import Encoder
    from interbias.experiments.schema import Cell
    from interbias.trials.sampler import TrialList

#: Embeddings written to the cache per transaction.
CACHE_BATCH = 64
#: The chain of a failure that holds under every chain (the utterance's file itself failed).
EVERY_CHAIN = "*"

#: chain fingerprint -> (the chain, the utterance ids to embed through it)
ChainItems = dict[str, tuple[Chain, set[str]]]


def utterance_sha256(u: Utterance, manifest: Manifest) -> str:
    """sha256 of the file's bytes (the cache key's audio component); for a segment row, that of
    the file's sha256 with the segment's offset and duration (:func:`segment_sha256`), so each
    segment keys its own vectors. A manifest that records another sha256 for the file means the
    file changed after the manifest was made: an error, not a key."""
    try:
        path = manifest.resolve(u)
        if u.span is None:
            sha = sha256_file(path)
        else:  # one recording holds many segments: hash it once
            st = path.stat()
            sha = _file_sha256(str(path), st.st_size, st.st_mtime_ns)
    except OSError as exc:
        raise AudioError(f"{u.id}: cannot read {u.path} ({exc.strerror or exc})") from exc
    if u.sha256 and u.sha256 != sha:
        raise AudioError(
            f"{u.id}: {u.path} has sha256 {sha[:12]}…, the manifest records {u.sha256[:12]}… (the file changed)"
        )
    return sha if u.span is None else segment_sha256(sha, u.span)


def segment_sha256(file_sha256: str, span: tuple[float | None, float | None]) -> str:
    """The audio key of a segment: sha256 of the canonical JSON ``[file sha256, offset, duration]``."""
    return sha256_text(canonical_json([file_sha256, *span]))


@lru_cache(maxsize=64)
def _file_sha256(path: str, size: int, mtime_ns: int) -> str:
    """sha256 of a file, remembered while its size and modification time stay the same."""
    return sha256_file(path)


def chains_for_cells(cells: Iterable[Cell], trials_by_stratum: Any) -> ChainItems:
    """Every (chain, utterance) item that scoring ``cells`` needs, deduplicated across cells:
    each cell's enrolment chain over its stratum's enrolment ids (every one of a trial's K), its
    test chain over the test ids (a protocol level's K: the first K enrolment ids). ``trials_by_stratum(name)``
    gives a stratum's trials (``TrialList.for_stratum``)."""
    items: ChainItems = {}
    for cell in {c.id: c for c in cells}.values():
        sub: pd.DataFrame = first_enrolment(trials_by_stratum(cell.stratum), cell.enrol_utterances)
        for enrol_chain, test_chain in cell.draws():
            enrol_ids = sub[enrol_columns(sub)].to_numpy().ravel()
            for chain, ids in ((enrol_chain, enrol_ids), (test_chain, sub["test"])):
                items.setdefault(chain.fingerprint, (chain, set()))[1].update(ids)
    return items


class Embedder:
    """Computes missing embeddings for (utterance, chain) items across several encoders.

    ``exclude`` maps an utterance id to the speakers an operator drawing other talkers must
    avoid for it (its trial partners); ``known_sha`` seeds the audio hashes already computed."""

    def __init__(
        self,
        manifest: Manifest,
        encoders: Sequence[Encoder],
        cache: EmbeddingCache,
        frontend: FrontEnd,
        reporter: Reporter | None = None,
        *,
        exclude: dict[str, frozenset[str]] | None = None,
        known_sha: dict[str, str] | None = None,
        quality: bool = False,
    ) -> None:
        self.manifest, self.encoders, self.frontend = manifest, encoders, frontend
        self.cache, self.reporter = cache, reporter or Reporter(quiet=True)
        self.by_id = manifest.by_id()
        self.exclude: dict[str, frozenset[str]] = dict(exclude or {})
        self.sha: dict[str, str] = {uid: sha for uid, sha in (known_sha or {}).items() if sha}
        self.failures: dict[tuple[str, str], str] = {}  # (utt id, chain fp or EVERY_CHAIN) -> message
        self.vectors: dict[tuple[str, str, str], np.ndarray] = {}  # (utt id, chain fp, enc fp)
        self.realised: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self.n_embedded = 0
        self.n_cached = 0
        #: Seconds the cache's writer thread spent writing vectors (off the driving thread), the
        #: seconds the driving thread waited for it (a full queue, the last writes), the vectors
        #: it committed.
        self.cache_write_s = 0.0
        self.cache_wait_s = 0.0
        self.n_stored = 0
        #: (utt id, chain fp) -> the cache's chain component (:func:`cache_chain_key`).
        self.cache_keys: dict[tuple[str, str], str] = {}
        #: Serve from the cache only vectors with stored quality measures (a QMF calibration needs them).
        self.need_quality = quality
        #: (utt id, chain fp, enc fp) -> blind quality measures (:mod:`interbias.audio.quality`).
        self.quality: dict[tuple[str, str, str], dict[str, float]] = {}
        self._quality_pending: list[tuple[Key, dict[str, float]]] = []
        #: chain fp -> fingerprint of what its operators read (:meth:`Chain.inputs_fingerprint`).
        self.inputs: dict[str, str] = {}
        #: Entries of the last :meth:`run` stored before their chain's inputs were in the key
        #: (not served: computed again).
        self.n_pre_inputs = 0

    def utt_sha(self, uid: str) -> str | None:
        if uid not in self.sha:
            try:
                self.sha[uid] = utterance_sha256(self.by_id[uid], self.manifest)
            except AudioError as exc:
                self.sha[uid] = ""
                self.failures[(uid, EVERY_CHAIN)] = str(exc)
        return self.sha[uid] or None

    def run(self, items: ChainItems, executor: Executor | None = None, *, ahead: str = "") -> None:
        """Fill ``vectors`` for ``items`` from the cache, computing the rest with ``executor``
        (default: this process, on the encoders' device). Before the work, one line says what
        it is, wrapped to the width of the reporter's stream: ``ahead`` (the caller's part, e.g.
        the run's trials and cells), then the embeddings taken from the cache and those to
        compute per encoder."""
        if executor is None:
            executor = make_executor("local", device=self.encoders[0].device if self.encoders else "cpu", jobs=1)
        wanted, keys = self._wanted(items)
        tasks = self._from_cache(wanted, keys, ahead)
        ctx = EmbedContext(self.frontend, self.manifest, self.cache.path.parent)
        pending: list[tuple[Key, np.ndarray, list[dict[str, Any]]]] = []
        answered: set[tuple[str, str, str]] = set()
        writer = self.writer()
        try:
            with writer, self.reporter.task("embedding", sum(t.n_items for t in tasks)) as advance:
                for result in executor.embed(ctx, self.encoders, tasks):
                    self._take(result, pending)
                    answered.add((result.uid, result.chain_fp, result.encoder_fp))
                    advance(result.n_items)
                    if len(pending) >= CACHE_BATCH:
                        pending = self._store(writer, pending)
                if pending:
                    pending = self._store(writer, pending)
        finally:
            self.cache_write_s += writer.write_s
            self.cache_wait_s += writer.wait_s
            self.n_stored += writer.written
        check_answered(tasks, answered)

    def writer(self) -> CacheWriter:
        """The cache's writer for one :meth:`run` (its own thread: :mod:`interbias.embedding.writer`)."""
        return CacheWriter(self.cache)

    def _store(
        self, writer: CacheWriter, pending: list[tuple[Key, np.ndarray, list[dict[str, Any]]]]
    ) -> list[tuple[Key, np.ndarray, list[dict[str, Any]]]]:
        """Hand ``pending`` and the quality measures taken with it to ``writer``; an empty list."""
        writer.put(pending, self._quality_pending)
        self._quality_pending = []
        return []

    def _wanted(self, items: ChainItems) -> tuple[list[tuple[str, Chain, Encoder]], list[Key]]:
        """Every (utterance, chain, encoder) item with a readable file, and its cache key."""
        wanted: list[tuple[str, Chain, Encoder]] = []
        keys: list[Key] = []
        for _fp, (chain, uids) in sorted(items.items()):
            for uid in sorted(uids):
                sha = self.utt_sha(uid)
                if sha is None:
                    continue
                if chain.fingerprint not in self.inputs:
                    self.inputs[chain.fingerprint] = chain.inputs_fingerprint(self.manifest)
                inputs = self.inputs[chain.fingerprint]
                ckey = cache_chain_key(chain, self.exclude.get(uid, frozenset()), self.frontend, inputs)
                self.cache_keys[(uid, chain.fingerprint)] = ckey
                for enc in self.encoders:
                    wanted.append((uid, chain, enc))
                    keys.append((sha, ckey, enc.fingerprint))
        return wanted, keys

    def _from_cache(self, wanted: list[tuple[str, Chain, Encoder]], keys: list[Key], ahead: str) -> list[EmbedTask]:
        """Take what the cache holds; the rest as one task per utterance (sorted ids and chains).
        Says so in one line, after ``ahead`` (see :meth:`run`)."""
        found = self.cache.get_many(
            keys, dims={e.fingerprint: e.card.embedding_dim for e in self.encoders if e.card.embedding_dim}
        )
        todo: dict[str, dict[str, tuple[Chain, list[str]]]] = {}
        measures = self.cache.get_quality(found) if self.need_quality else {}
        for (uid, chain, enc), key in zip(wanted, keys, strict=True):
            entry = found.get(key)
            if entry is not None and self.need_quality:
                if key not in measures:  # stored before quality measures were: computed again
                    entry = None
                else:
                    self.quality[(uid, chain.fingerprint, enc.fingerprint)] = measures[key]
            if entry is not None:
                self.vectors[(uid, chain.fingerprint, enc.fingerprint)] = entry.vector
                self.realised[(uid, chain.fingerprint)] = entry.realised
                self.n_cached += 1
            else:
                slot = todo.setdefault(uid, {})
                slot.setdefault(chain.fingerprint, (chain, []))[1].append(enc.fingerprint)
        n_todo = sum(len(encs) for per in todo.values() for _, encs in per.values())
        line = embeddings_ahead(self.encoders, todo, len(wanted) - n_todo)
        if self.cache.n_unchecked:
            line += (
                f"; {self.cache.n_unchecked} cached embedding(s) stored under earlier audio checks are computed "
                "again and checked"
            )
        self.n_pre_inputs = self.cache.count_present(
            (k[0], pre_inputs_key(k[1]), k[2]) for k in keys if k not in found and "+in" in k[1]
        )
        if self.n_pre_inputs:
            line += (
                f"; {self.n_pre_inputs} cached embedding(s) of chains that draw talkers, noise or room files were "
                "stored before those inputs were part of the cache key and are computed again"
            )
        self.reporter.info(f"{ahead}; {line}" if ahead else line, wrap=True)
        return [
            EmbedTask(
                uid,
                self.sha[uid],
                self.exclude.get(uid, frozenset()),
                tuple((chain, tuple(encs)) for _, (chain, encs) in sorted(todo[uid].items())),
            )
            for uid in sorted(todo)
        ]

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
        if r.quality is not None:
            self.quality[(r.uid, r.chain_fp, r.encoder_fp)] = r.quality
            self._quality_pending.append((key, r.quality))
        self.n_embedded += 1
        crashpoints.reached("embedded")

    def failed(self, uid: str, chain_fp: str) -> str | None:
        """Why ``uid`` has no embedding under ``chain_fp`` (its own failure or an every-chain one)."""
        return self.failures.get((uid, chain_fp)) or self.failures.get((uid, EVERY_CHAIN))

    def frontend_record(self, uid: str, chain_fp: str) -> dict[str, Any]:
        """What the front end did to ``uid`` under ``chain_fp`` (the first realised record)."""
        return (self.realised.get((uid, chain_fp)) or [{}])[0].get("frontend", {})


def check_answered(tasks: Sequence[EmbedTask], answered: set[tuple[str, str, str]]) -> None:
    """Every (utterance, chain, encoder) item of ``tasks`` got a vector or a counted failure
    (``answered`` holds (uid, chain fp, encoder fp); encoder fp ``""`` answers the whole chain):
    an executor that lost items is an error before anything is scored."""
    missing = [
        f"{t.uid} ({chain.label}, encoder {fp})"
        for t in tasks
        for chain, fps in t.chains
        if (t.uid, chain.fingerprint, "") not in answered
        for fp in fps
        if (t.uid, chain.fingerprint, fp) not in answered
    ]
    if missing:
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        raise ExecutorError(
            f"the executor returned nothing for {len(missing)} requested embedding(s): {', '.join(missing[:3])}{more}"
        )


def audio_digests(trials: TrialList, manifest: Manifest) -> tuple[dict[str, str], dict[str, str]]:
    """sha256 of every trial utterance's file (``""`` when unreadable; part of the run id,
    :func:`interbias.run.results.run_id`) and, per stratum, one digest of its utterances' hashes:
    a finished cell is reused only for the same audio."""
    by_id = manifest.by_id()
    shas: dict[str, str] = {}
    for uid in sorted(trials.utterance_ids()):
        try:
            shas[uid] = utterance_sha256(by_id[uid], manifest)
        except InterbiasError:  # unreadable or outside the root: the embedder reports it
            shas[uid] = ""
    digests = {}
    for name in trials.strata:
        sub = trials.for_stratum(name)
        ids = sorted(set(sub[enrol_columns(sub)].to_numpy().ravel()) | set(sub["test"]))
        digests[name] = sha256_text(canonical_json([[u, shas[u]] for u in ids]))
    return shas, digests
