"""A test hook that stops or kills this process at a named point; inert unless its variable is set.

``INTERBIAS_CRASH_AT=PATTERN[@N]`` sends ``SIGKILL`` to this process the ``N``-th time (default
1) execution reaches a point whose name matches ``PATTERN`` (``fnmatch``);
``INTERBIAS_CRASH_SIGNAL=STOP`` sends ``SIGSTOP`` instead (the process keeps its run lock).
Points: ``write:<file name>`` (an atomic write, half of the bytes in the temporary file),
``embedded`` (an embedding computed, not yet in the cache), ``cache-write`` (inside a cache
transaction, before its commit), ``cell-done`` (a cell's completion record written).
tests/test_crash_resume.py uses it to kill ``interbias run`` between cells, mid-cell and mid-write.
"""

from __future__ import annotations

import fnmatch
import os
import signal

ENV = "INTERBIAS_CRASH_AT"
SIGNAL_ENV = "INTERBIAS_CRASH_SIGNAL"
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
    if _hits[0] == int(nth or 1):
        sig = signal.SIGSTOP if os.environ.get(SIGNAL_ENV, "KILL").upper() == "STOP" else signal.SIGKILL
        os.kill(os.getpid(), sig)
