"""A test hook that stops or kills this process at a named point; inert unless its variable is set.

``INTERBIAS_CRASH_AT=PATTERN[@N]`` sends ``SIGKILL`` to this process the ``N``-th time (default
1) execution reaches a point whose name matches ``PATTERN`` (``fnmatch``);
``INTERBIAS_CRASH_SIGNAL=STOP`` sends ``SIGSTOP`` instead (the process keeps its run lock).
``INTERBIAS_CRASH_ONCE=FILE`` signals only the first process to get there (it creates ``FILE``;
later processes, e.g. the workers of a fresh pool, find it and carry on).
Points: ``write:<file name>`` (an atomic write, half of the bytes in the temporary file),
``embedded`` (an embedding computed, not yet in the cache), ``cache-write`` (inside a cache
transaction, before its commit), ``cell-done`` (a cell's completion record written), ``worker-task`` (a local worker process
starting a chunk of utterances; counted per worker process), ``prepare-task`` (a preparation worker
feeding a device starting a chunk).
tests/test_crash_resume.py uses it to kill ``interbias run`` between cells, mid-cell and mid-write.
"""

from __future__ import annotations

import fnmatch
import os
import signal

ENV = "INTERBIAS_CRASH_AT"
SIGNAL_ENV = "INTERBIAS_CRASH_SIGNAL"
ONCE_ENV = "INTERBIAS_CRASH_ONCE"
_hits = [0]


def reached(point: str) -> None:
    """Mark ``point``; signal this process if ``INTERBIAS_CRASH_AT`` selects this visit."""
    spec = os.environ.get(ENV)
    if not spec:
        return
    pattern, _, nth = spec.partition("@")
    if not fnmatch.fnmatchcase(point, pattern):
        return
    _hits[0] += 1
    if _hits[0] == int(nth or 1) and first_here():
        sig = signal.SIGSTOP if os.environ.get(SIGNAL_ENV, "KILL").upper() == "STOP" else signal.SIGKILL
        os.kill(os.getpid(), sig)


def first_here() -> bool:
    """False when ``INTERBIAS_CRASH_ONCE`` names a file that exists (another process crashed)."""
    marker = os.environ.get(ONCE_ENV)
    if not marker:
        return True
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True
