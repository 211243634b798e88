"""The run-directory lock against a real second process: refused while held (naming the holder's
pid), free after a clean exit, taken over (with the dead holder's pid) after a kill -9."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from run_helpers import REPO

from interbias.run.lock import RunLock
from interbias.utils.errors import RunError

#: Holds the lock until its stdin closes, then releases it as ``interbias run`` does on return.
HOLD = (
    "import sys; from interbias.run.lock import RunLock; lock = RunLock(sys.argv[1]).acquire(); "
    "print('held', flush=True); sys.stdin.read(); lock.release()"
)


def _holder(directory: Path) -> subprocess.Popen:
    child = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(directory)],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout.readline() == "held\n"
    return child


def test_a_held_lock_refuses_at_once_naming_the_pid_and_frees_on_exit(tmp_path: Path) -> None:
    child = _holder(tmp_path)
    try:
        with pytest.raises(RunError) as info:
            RunLock(tmp_path).acquire()
        assert str(info.value) == f"run directory {tmp_path} is in use by another interbias run (pid {child.pid})"
    finally:
        child.stdin.close()  # the holder exits normally and releases
        assert child.wait(timeout=30) == 0
    with RunLock(tmp_path) as lock:
        assert lock.previous_pid is None  # a clean exit leaves no stale pid
        assert (tmp_path / ".lock").read_text() == str(os.getpid())
    assert (tmp_path / ".lock").read_text() == ""


def test_a_killed_holders_lock_is_taken_over_with_its_pid(tmp_path: Path) -> None:
    child = _holder(tmp_path)
    child.send_signal(signal.SIGKILL)
    assert child.wait(timeout=30) == -signal.SIGKILL
    assert (tmp_path / ".lock").read_text() == str(child.pid)  # the dead holder's pid stays behind
    with RunLock(tmp_path) as lock:
        assert lock.previous_pid == child.pid
        with pytest.raises(RunError, match=rf"in use by another interbias run \(pid {os.getpid()}\)$"):
            RunLock(tmp_path).acquire()  # a second holder in this same process is refused too
