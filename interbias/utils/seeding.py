"""Derived seeds. Every random draw takes a generator built from a stable hash of what it is for.

There is no module-level or global generator anywhere in interbias: a function that draws takes
a ``numpy.random.Generator`` (or the names to derive one) and the seed lands in the outputs.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

import numpy as np


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys and no whitespace: the byte form that hashes and fingerprints use."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_file(path: str | os.PathLike[str]) -> str:
    """sha256 of a file's bytes, read in 1 MiB blocks (raises ``OSError`` when unreadable)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


#: (resolved path, size, mtime ns, ctime ns, inode) -> sha256, for :func:`content_sha256`.
_HASHED: dict[tuple[str, int, int, int, int], str] = {}


def content_sha256(path: str | os.PathLike[str]) -> str:
    """sha256 of a file's bytes, the key of every operator input read from disk.

    The file's stat (size, mtime, ctime, inode) is only a shortcut to a hash already computed in
    this process, never a stand-in for one: a rewrite changes the ctime even when size and mtime
    are put back (``os.utime`` cannot set ctime), so the file is hashed again."""
    st = os.stat(path)
    key = (os.path.realpath(path), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    if key not in _HASHED:
        _HASHED[key] = sha256_file(path)
    return _HASHED[key]


def derive_seed(*parts: Any) -> int:
    """A 63-bit seed: the first 8 bytes of sha256(canonical_json(parts)), top bit cleared.

    The same parts give the same seed in every process and on every machine; the order of
    calls elsewhere never matters.
    """
    digest = hashlib.sha256(canonical_json(list(parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") & ((1 << 63) - 1)


def derive_rng(*parts: Any) -> np.random.Generator:
    """A PCG64 generator seeded with :func:`derive_seed` of ``parts``."""
    return np.random.Generator(np.random.PCG64(derive_seed(*parts)))
