"""Embedding cache keyed by (utterance sha256, chain key, encoder fingerprint).

The chain key is the chain's fingerprint (operators and their versions, plus excluded
talkers where an operator draws them) and the front end's fingerprint
(:func:`cache_chain_key`). The table's column for it is named ``chain_fp`` for history: it holds
that chain key with the front-end suffix (``<chain key>@fe<8 hex>``), not a bare chain fingerprint.

One SQLite file; each batch of embeddings is one transaction, so a crash loses at most the
batch in flight and never leaves a torn row. Values: float32 vector plus the JSON record of
what the operator chain actually did to that utterance (achieved SNR, offsets, …).
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from interbias import crashpoints
from interbias.errors import RunError
from interbias.seeding import canonical_json, sha256_text

if TYPE_CHECKING:
    from interbias.audio import FrontEnd
    from interbias.operators import Chain


def cache_chain_key(chain: Chain, exclude: frozenset[str], frontend: FrontEnd) -> str:
    """The embedding cache's chain component: the chain's key (:meth:`Chain.key`) plus a
    fingerprint of the front-end rules (rate, minimum and maximum duration), so an embedding
    made under other front-end rules is never served."""
    fe = sha256_text(canonical_json(dataclasses.asdict(frontend)))[:8]
    return f"{chain.key(exclude)}@fe{fe}"


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
"""

Key = tuple[str, str, str]


@dataclass(frozen=True)
class Entry:
    vector: np.ndarray
    realised: list[dict[str, Any]]


class EmbeddingCache:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(str(self.path), timeout=60.0, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise RunError(f"embedding cache {self.path} is unusable ({exc}); delete it to rebuild") from exc

    def get_many(self, keys: Iterable[Key]) -> dict[Key, Entry]:
        keys = list(keys)
        out: dict[Key, Entry] = {}
        cur = self._db.cursor()
        for i in range(0, len(keys), 300):
            chunk = keys[i : i + 300]
            where = " OR ".join(["(utt_sha256=? AND chain_fp=? AND encoder_fp=?)"] * len(chunk))
            params = [v for k in chunk for v in k]
            for utt, chain, enc, dim, blob, realised in cur.execute(
                f"SELECT utt_sha256, chain_fp, encoder_fp, dim, vector, realised FROM embeddings WHERE {where}",
                params,
            ):
                vec = np.frombuffer(blob, dtype=np.float32)
                if vec.shape[0] != dim:
                    continue
                out[(utt, chain, enc)] = Entry(vec, json.loads(realised))
        return out

    def put_many(self, items: Iterable[tuple[Key, np.ndarray, list[dict[str, Any]]]]) -> None:
        rows = [
            (
                k[0],
                k[1],
                k[2],
                int(v.shape[0]),
                np.ascontiguousarray(v, dtype=np.float32).tobytes(),
                json.dumps(r, sort_keys=True),
            )
            for k, v, r in items
        ]
        try:
            with self._db:
                self._db.execute("BEGIN")
                self._db.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?, ?, ?, ?)", rows)
                crashpoints.reached("cache-write")
        except sqlite3.OperationalError as exc:
            raise RunError(f"cannot write the embedding cache {self.path}: {exc}") from exc

    def count(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])

    def close(self) -> None:
        self._db.close()
