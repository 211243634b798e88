"""An exclusive lock on a run directory (``flock`` on ``.lock``, holder pid written inside).

The kernel releases a ``flock`` when its holder dies, so a lock left by a killed run is
taken over at once; the notice names the pid that held it.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from interbias.utils.errors import RunError


class RunLock:
    def __init__(self, directory: Path) -> None:
        self.path = Path(directory) / ".lock"
        self._fh = None
        self.previous_pid: int | None = None

    def acquire(self) -> RunLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(self.path, "a+")
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "unknown"
            fh.close()
            raise RunError(
                f"run directory {self.path.parent} is in use by another interbias run (pid {holder})"
            ) from None
        fh.seek(0)
        old = fh.read().strip()
        if old.isdigit() and int(old) != os.getpid():
            self.previous_pid = int(old)
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        self._fh = fh
        return self

    def release(self) -> None:
        if self._fh is not None:
            self._fh.seek(0)
            self._fh.truncate()
            self._fh.flush()
            fcntl.flock(self._fh.fileno(), fcntl.LOCK_UN)
            self._fh.close()
            self._fh = None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
