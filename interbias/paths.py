"""Where interbias keeps things: caches, conditions, models, corpora (all overridable)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent


def cache_dir() -> Path:
    """``$INTERBIAS_CACHE`` or ``~/.cache/interbias``: built corpora and the embedding cache."""
    env = os.environ.get("INTERBIAS_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "interbias"


def conditions_dir() -> Path:
    """``$INTERBIAS_CONDITIONS``, else ``./conditions`` when present, else the repository's."""
    env = os.environ.get("INTERBIAS_CONDITIONS")
    if env:
        return Path(env).expanduser()
    local = Path.cwd() / "conditions"
    if local.is_dir():
        return local
    return PACKAGE_DIR.parent / "conditions"


def models_dir() -> Path:
    """``$INTERBIAS_MODELS`` or ``~/.cache/interbias/models``: one folder per encoder label."""
    env = os.environ.get("INTERBIAS_MODELS")
    return Path(env).expanduser() if env else cache_dir() / "models"


def corpora_dir() -> Path:
    """``$INTERBIAS_CORPORA``: the default parent of corpus roots (``<dir>/<corpus name>``)."""
    env = os.environ.get("INTERBIAS_CORPORA")
    return Path(env).expanduser() if env else Path.home() / "corpora"


def slug(text: str) -> str:
    """File-name-safe form of a label or cell id (readable, collision-proofed by a hash)."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in text)
    return f"{safe[:80]}-{hashlib.sha256(text.encode()).hexdigest()[:6]}"
