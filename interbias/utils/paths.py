"""Where interbias keeps things: caches, conditions, models, corpora (all overridable)."""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1]
#: A run directory's provenance record: its one spelling (:mod:`interbias.run.rundir` names every
#: other file of a run; this one lives here so that ``corpora`` can read it without ``run``).
RUN_JSON = "run.json"


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
    """File-name-safe form of a label or cell id, always with a hash (``CAM__-395952``): the
    stored names of run directories (scores/, cells/) and caches, kept as they are so earlier
    runs and caches stay readable. Names a person reads use :func:`readable_slug`."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in text)
    return f"{safe[:80]}-{hashlib.sha256(text.encode()).hexdigest()[:6]}"


#: Characters besides letters and digits a readable slug keeps (safe in file names on Linux,
#: macOS and Windows).
READABLE_EXTRA = "-_.+=,@"


def readable_slug(text: str) -> str:
    """A file or folder name a person can guess from a label or cell id: the text itself
    (``CAM++``, ``gender=female,noise=n10``) when it is made of letters, digits and
    :data:`READABLE_EXTRA`, does not start with ``.`` or ``-`` and has at most 80 characters;
    else every other character becomes ``_`` and a hash of the text is appended
    (``CAM+++orca_1a2b-3c4d5e``), so two labels that read the same stay apart."""
    safe = "".join(c if c.isalnum() or c in READABLE_EXTRA else "_" for c in text)
    if safe == text and text and text[0] not in ".-" and len(text) <= 80:
        return text
    core = safe.lstrip(".-")[:80] or "_"
    return f"{core}-{hashlib.sha256(text.encode()).hexdigest()[:6]}"


def not_a_file(path: Path) -> str | None:
    """Why ``path`` is not a regular file one can read, in words (``None`` when it is one):
    no such file, a folder, a FIFO, a socket, a device, a symbolic-link loop, a dangling link."""
    path = Path(path)
    try:
        st = path.stat()
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "is a symbolic-link loop"
        if exc.errno == errno.ENOENT:
            return "is a dangling symbolic link" if path.is_symlink() else "file does not exist"
        if exc.errno == errno.ENAMETOOLONG:
            return "file name too long"
        return f"cannot be opened ({exc.strerror or exc})"
    mode = st.st_mode
    if stat.S_ISREG(mode):
        return None
    kinds = (
        (stat.S_ISDIR, "is a folder, not a file"),
        (stat.S_ISFIFO, "is a FIFO (named pipe), not a file"),
        (stat.S_ISSOCK, "is a socket, not a file"),
        (stat.S_ISCHR, "is a character device, not a file"),
        (stat.S_ISBLK, "is a block device, not a file"),
    )
    return next((text for test, text in kinds if test(mode)), "is not a regular file")


def usable_dir(path: Path, *, what: str) -> str | None:
    """Why folder ``path`` cannot be made or used (an existing file, a FIFO, a link loop in
    the way), or ``None`` when it is a folder or can be created."""
    path = Path(path)
    for p in (path, *path.parents):
        try:
            st = p.stat()
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return f"{what} {path}: {p} is a symbolic-link loop"
            continue
        if not stat.S_ISDIR(st.st_mode):
            return f"{what} {path}: {p} exists and is not a folder"
        return None
    return None


def threads() -> int | None:
    """``$INTERBIAS_THREADS`` as a positive integer, ``None`` when unset or empty; anything
    else raises ``ValueError`` with a one-line message naming the variable."""
    raw = os.environ.get("INTERBIAS_THREADS", "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"INTERBIAS_THREADS must be a positive integer (threads per process), got {raw!r}")
    return int(raw)
