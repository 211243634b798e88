"""Atomic file writes: temporary file in the same folder, fsync, rename, fsync the folder.

A reader (or a resumed run) sees either the old file or the complete new one, never a torn
write. A file gets the mode a plain ``open()`` would give it (0666 less the umask). Errors
from the file system (a full disk) surface as :class:`WriteError` naming the path; a
temporary file left by a killed writer (``.<name>.<8 chars>.tmp``) is removed by
:func:`remove_stale_temps` under the run lock.
"""

from __future__ import annotations

import io
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from interbias.utils import crashpoints
from interbias.utils.errors import RunError

_TEMP = re.compile(r"^\..+\.[A-Za-z0-9_]{8}\.tmp$")


class WriteError(RunError):
    """The file system refused a write (full disk, permissions, read-only folder)."""


def _umask() -> int:
    """The process umask, read without changing it where /proc allows."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # pragma: no cover - no /proc
    os.umask(mask)  # pragma: no cover
    return mask  # pragma: no cover


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - some file systems refuse directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically."""
    path = Path(path)
    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as fh:
            half = len(data) // 2
            fh.write(data[:half])
            fh.flush()
            crashpoints.reached(f"write:{path.name}")
            fh.write(data[half:])
            fh.flush()
            os.fchmod(fh.fileno(), 0o666 & ~_umask())
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        raise WriteError(f"cannot write {path}: {exc.strerror or exc}") from exc
    _fsync_dir(path.parent)


def write_text(path: Path, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def _write_with(path: Path, writer: Callable[[io.BytesIO], None]) -> None:
    buf = io.BytesIO()
    writer(buf)
    write_bytes(path, buf.getvalue())


def write_csv(path: Path, frame: pd.DataFrame) -> None:
    """CSV with ``\\n`` line ends, no index, floats at full repr precision."""
    write_text(path, frame.to_csv(index=False, lineterminator="\n"))


def write_parquet(path: Path, frame: pd.DataFrame) -> None:
    """Parquet without pandas index metadata or creation timestamps (byte-stable)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(frame, preserve_index=False).replace_schema_metadata(None)
    _write_with(path, lambda buf: pq.write_table(table, buf, compression="zstd"))


def remove_stale_temps(directory: Path) -> int:
    """Delete temporary files that killed writers left under ``directory``; returns how many.
    Call it only while holding the directory's lock (no live writer then)."""
    n = 0
    for p in Path(directory).rglob(".*.tmp"):
        if p.is_file() and _TEMP.match(p.name):
            p.unlink(missing_ok=True)
            n += 1
    return n
