"""Embedding cache keyed by (utterance sha256, chain key, encoder fingerprint).

The chain key is the chain's fingerprint (operators and their versions, plus excluded
talkers where an operator draws them), a fingerprint of what its operators read beyond their
parameters (the talker pool, noise or impulse-response files, the room bank:
:meth:`Chain.inputs_fingerprint`) and the front end's fingerprint (:func:`cache_chain_key`).
The table's column for it is named ``chain_fp`` for history: it holds that chain key
(``<chain key>[+in<8 hex>]@fe<8 hex>``), not a bare chain fingerprint. An entry stored before
the inputs were part of the key (``<chain key>@fe<8 hex>`` for such a chain) is never served.

One SQLite file; each batch of embeddings is one transaction, so a crash loses at most the
batch in flight and never leaves a torn row. One connection per :class:`EmbeddingCache`, used by
one thread at a time (a lock): the embedding stage's writer thread writes through it. Values: float32 vector plus the JSON record of
what the operator chain actually did to that utterance (achieved SNR, offsets, …), closed by
the verdict of the audio checks it passed (``{"audio_checks": N}``, :data:`AUDIO_CHECKS`). An
entry stored under other checks (or before checks were recorded) is not served: its item is
computed again and checked, so a warm cache decides what a cold one decides. A second table,
``quality``, holds each vector's blind quality measures (duration, WADA-SNR, magnitude before
normalisation; :mod:`interbias.audio.quality`) under the same key.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from interbias.utils import crashpoints
from interbias.utils.errors import RunError
from interbias.utils.paths import not_a_file, usable_dir
from interbias.utils.seeding import canonical_json, sha256_text

if TYPE_CHECKING:
    from interbias.audio.frontend import FrontEnd
    from interbias.operators import Chain


def cache_chain_key(chain: Chain, exclude: frozenset[str], frontend: FrontEnd, inputs: str = "") -> str:
    """The embedding cache's chain component: the chain's key (:meth:`Chain.key`), the
    fingerprint of its operators' inputs (``inputs``, :meth:`Chain.inputs_fingerprint`; ``""``
    for a chain that reads none) and a fingerprint of the front-end rules (rate, minimum and
    maximum duration), so an embedding made from other audio is never served."""
    fe = sha256_text(canonical_json(frontend.fingerprint()))[:8]
    return f"{chain.key(exclude)}{'+in' + inputs if inputs else ''}@fe{fe}"


def pre_inputs_key(key: str) -> str:
    """The key a chain with operator inputs had before they were part of it (``+in…`` removed)."""
    head, sep, fe = key.rpartition("@fe")
    return f"{head.split('+in')[0]}{sep}{fe}"


_SCHEMA = """
CREATE TABLE IF NOT EXISTS embeddings (
    utt_sha256 TEXT NOT NULL,
    chain_fp TEXT NOT NULL,
    encoder_fp TEXT NOT NULL,
    dim INTEGER NOT NULL,
    vector BLOB NOT NULL,
    realised TEXT NOT NULL,
    PRIMARY KEY (utt_sha256, chain_fp, encoder_fp)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS quality (
    utt_sha256 TEXT NOT NULL,
    chain_fp TEXT NOT NULL,
    encoder_fp TEXT NOT NULL,
    measures TEXT NOT NULL,
    PRIMARY KEY (utt_sha256, chain_fp, encoder_fp)
) WITHOUT ROWID;
"""

Key = tuple[str, str, str]

#: The columns of interbias's table, in order.
COLUMNS = ("utt_sha256", "chain_fp", "encoder_fp", "dim", "vector", "realised")
#: How far a cached vector's L2 norm may stray from 1 (vectors are stored L2-normalised).
NORM_TOLERANCE = 1e-3


#: Version of the audio checks every stored embedding passed: the input's speech floor
#: (:func:`interbias.audio.frontend.check_speech_floor`), the input's signal duration without a
#: VAD (:func:`interbias.audio.frontend.check_signal_duration`, from version 2) and the chain
#: output's near-silence check (:func:`interbias.operators.silence.check_chain_output`). Raise
#: it when any of them changes.
AUDIO_CHECKS = 2
_VERDICT = {"audio_checks": AUDIO_CHECKS}


@dataclass(frozen=True)
class Entry:
    vector: np.ndarray
    realised: list[dict[str, Any]]


def _dim_of(dim: Any) -> int:
    return dim if isinstance(dim, int) else -1


#: SQLite result codes that mean the file itself is damaged (the only case to delete it).
DAMAGED = frozenset({"SQLITE_CORRUPT", "SQLITE_NOTADB"})
#: What to do when the file is intact but cannot be used now, by SQLite result code.
_REMEDY = {
    "SQLITE_FULL": "free disk space",
    "SQLITE_READONLY": "make it and its folder writable",
    "SQLITE_CANTOPEN": "check that the folder exists and is writable",
    "SQLITE_PERM": "check its permissions",
    "SQLITE_BUSY": "another process holds it; wait for it",
    "SQLITE_LOCKED": "another process holds it; wait for it",
    "SQLITE_IOERR": "check the disk (a full or failing device, a lost network mount)",
}


def db_error(path: Path, exc: sqlite3.DatabaseError, doing: str) -> RunError:
    """One line for an SQLite error on the cache: delete-to-rebuild only when SQLite says the
    file is damaged; otherwise the file is intact (a full disk, a read-only mount, a lock) and
    the message says so and what to do, so a user does not destroy good vectors."""
    code = str(getattr(exc, "sqlite_errorname", "") or "")
    base = code.split("_", 2)[:2]
    family = "_".join(base) if len(base) == 2 else code
    if code in DAMAGED or family in DAMAGED:
        return RunError(f"embedding cache {path} is damaged ({exc}); delete it to rebuild")
    remedy = _REMEDY.get(code) or _REMEDY.get(family)
    if remedy is None:
        return RunError(
            f"cannot {doing} the embedding cache {path} ({exc}); it was left as it is (point --cache-dir elsewhere)"
        )
    return RunError(
        f"cannot {doing} the embedding cache {path} ({exc}); the file is not damaged, keep it: {remedy}, "
        "or point --cache-dir elsewhere"
    )


class EmbeddingCache:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.RLock()
        #: Entries the last :meth:`get_many` found stored under other audio checks (not served).
        self.n_unchecked = 0
        problem = usable_dir(self.path.parent, what="cache folder")
        if problem:
            raise RunError(problem)
        if self.path.exists() or self.path.is_symlink():
            kind = not_a_file(self.path)
            if kind:
                raise RunError(f"embedding cache {self.path} {kind}")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            # one connection, used by one thread at a time (the lock): the embedding stage's
            # writer thread (interbias.embedding.writer) writes while its caller waits or computes
            self._db = sqlite3.connect(str(self.path), timeout=60.0, isolation_level=None, check_same_thread=False)
            self._check_schema()
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise db_error(self.path, exc, "open") from exc

    def _check_schema(self) -> None:
        """Refuse an SQLite file that holds something other than interbias's table (it is
        never written to): one line naming the file and what it holds."""
        tables = [r[0] for r in self._db.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        if not tables:
            return
        if "embeddings" not in tables:
            self._db.close()
            raise RunError(
                f"embedding cache {self.path} is an SQLite file of something else (tables: {', '.join(tables[:5])}), "
                "not an interbias embedding cache; point --cache-dir elsewhere"
            )
        cols = tuple(r[1] for r in self._db.execute("PRAGMA table_info(embeddings)"))
        if cols != COLUMNS:
            self._db.close()
            raise RunError(
                f"embedding cache {self.path}: table embeddings has columns {', '.join(cols)}, not interbias's "
                f"({', '.join(COLUMNS)}); point --cache-dir elsewhere"
            )

    def get_many(self, keys: Iterable[Key], *, dims: Mapping[str, int] | None = None) -> dict[Key, Entry]:
        """The entries present for ``keys`` and stored under the current audio checks (the rest
        are left out and counted in ``n_unchecked``). Every vector read is checked: a whole number of
        float32 values, the dimension its row records (and ``dims[encoder fingerprint]``
        where given; else one dimension per encoder), finite, nonzero and L2-normalised as
        stored. A bad entry is a :class:`RunError` naming the cache file and the key."""
        keys = list(keys)
        self.n_unchecked = 0
        out: dict[Key, Entry] = {}
        seen_dim: dict[str, int] = dict(dims or {})
        cur = self._db.cursor()
        # one primary-key lookup per key: ~3x the rate of OR-joined multi-key statements
        sql = "SELECT dim, vector, realised FROM embeddings WHERE utt_sha256=? AND chain_fp=? AND encoder_fp=?"
        with self._lock:
            try:
                for key in dict.fromkeys(tuple(k) for k in keys):
                    for dim, blob, realised in cur.execute(sql, key):
                        enc = key[2]
                        vec = self._checked(key, dim, blob, seen_dim.setdefault(enc, _dim_of(dim)))
                        records = self._realised(key, realised)
                        if not records or records[-1] != _VERDICT:  # not checked as now: computed again
                            self.n_unchecked += 1
                            continue
                        out[key] = Entry(vec, records[:-1])
            except sqlite3.DatabaseError as exc:
                raise db_error(self.path, exc, "read") from exc
        return out

    def _bad(self, key: Key, problem: str) -> RunError:
        return RunError(
            f"embedding cache {self.path}: the entry for utterance sha256 {str(key[0])[:16]}…, chain {key[1]}, "
            f"encoder {key[2]} {problem}; delete the cache file to recompute"
        )

    def _checked(self, key: Key, dim: Any, blob: Any, want: int) -> np.ndarray:
        if not isinstance(blob, bytes) or len(blob) % 4:
            raise self._bad(key, "is not a float32 vector")
        vec = np.frombuffer(blob, dtype=np.float32)
        if vec.shape[0] != dim or vec.shape[0] != want:
            raise self._bad(key, f"holds {vec.shape[0]} values; the row records {dim}, the encoder gives {want}")
        if not np.isfinite(vec).all():
            raise self._bad(key, f"holds {int((~np.isfinite(vec)).sum())} non-finite value(s)")
        norm = float(np.linalg.norm(vec.astype(np.float64)))
        if norm == 0.0:
            raise self._bad(key, "is all zeros")
        if abs(norm - 1.0) > NORM_TOLERANCE:
            raise self._bad(key, f"has L2 norm {norm:.6g}; stored vectors are L2-normalised (norm 1)")
        return vec

    def _realised(self, key: Key, text: Any) -> list[dict[str, Any]]:
        try:
            value = json.loads(text)
        except (TypeError, ValueError):
            value = None
        if not isinstance(value, list):
            raise self._bad(key, "has an unreadable record of what its chain did")
        return value

    def put_many(self, items: Iterable[tuple[Key, np.ndarray, list[dict[str, Any]]]]) -> None:
        """Store vectors with their records; each row closes with the current checks' verdict
        (only embeddings that passed the audio checks are ever stored)."""
        rows = [
            (
                k[0],
                k[1],
                k[2],
                int(v.shape[0]),
                np.ascontiguousarray(v, dtype=np.float32).tobytes(),
                json.dumps([*r, _VERDICT], sort_keys=True),
            )
            for k, v, r in items
        ]
        try:
            with self._lock, self._db:
                self._db.execute("BEGIN")
                self._db.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?, ?, ?, ?)", rows)
                crashpoints.reached("cache-write")
        except sqlite3.DatabaseError as exc:
            raise db_error(self.path, exc, "write") from exc

    def put_quality(self, items: Iterable[tuple[Key, Mapping[str, float]]]) -> None:
        """Store the blind quality measures (:mod:`interbias.audio.quality`) of stored vectors."""
        rows = [(k[0], k[1], k[2], json.dumps(dict(m), sort_keys=True)) for k, m in items]
        try:
            with self._lock, self._db:
                self._db.execute("BEGIN")
                self._db.executemany("INSERT OR REPLACE INTO quality VALUES (?, ?, ?, ?)", rows)
        except sqlite3.DatabaseError as exc:
            raise db_error(self.path, exc, "write") from exc

    def get_quality(self, keys: Iterable[Key]) -> dict[Key, dict[str, float]]:
        """The quality measures stored for ``keys`` (keys without any are left out)."""
        out: dict[Key, dict[str, float]] = {}
        sql = "SELECT measures FROM quality WHERE utt_sha256=? AND chain_fp=? AND encoder_fp=?"
        try:
            with self._lock:
                rows = [
                    (key, text)
                    for key in dict.fromkeys(tuple(k) for k in keys)
                    for (text,) in self._db.execute(sql, key)
                ]
            for key, text in rows:
                value = json.loads(text)
                if isinstance(value, dict):
                    out[key] = {str(m): float(v) for m, v in value.items()}
        except sqlite3.DatabaseError as exc:
            raise db_error(self.path, exc, "read") from exc
        return out

    def count_present(self, keys: Iterable[Key]) -> int:
        """How many of ``keys`` have a row (unchecked: only whether one is stored)."""
        sql = "SELECT 1 FROM embeddings WHERE utt_sha256 = ? AND chain_fp = ? AND encoder_fp = ?"
        cur = self._db.cursor()
        try:
            with self._lock:
                return sum(cur.execute(sql, k).fetchone() is not None for k in dict.fromkeys(tuple(k) for k in keys))
        except sqlite3.DatabaseError as exc:
            raise db_error(self.path, exc, "read") from exc

    def count(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
