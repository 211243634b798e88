"""Atomic file writes: temporary file in the same folder, fsync, rename, fsync the folder.

A reader (or a resumed run) sees either the old file or the complete new one, never a torn
write. Errors from the file system (a full disk) surface as :class:`RunError` naming the path.
"""

from __future__ import annotations

import io
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from interbias.errors import RunError


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
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise RunError(f"cannot write {path}: {exc.strerror or exc}") from exc
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
