"""kill -9 at several moments of ``interbias run``, then the same command again: the resumed run
reuses what was finished and its outputs are byte-identical to an uninterrupted run.

The kills come from :mod:`interbias.utils.crashpoints` (``INTERBIAS_CRASH_AT``) in a child process:
mid-embedding (inside a cache transaction), between cells (while a second run is refused the
lock) and mid-write of results.csv. Each child resumes the previous one's directory and cache.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
from pathlib import Path

import pytest
from conftest import tiny_experiment
from run_helpers import manifest_file, only_run_dir, outputs, run_args, run_child, start_child
from typer.testing import CliRunner

from interbias.cli import app


@pytest.fixture(scope="module")
def setup(tmp_path_factory, tiny_corpus):
    tmp = tmp_path_factory.mktemp("crash")
    manifest = manifest_file(tiny_corpus, tmp / "m")
    exp = tiny_experiment(
        tmp, name="K01", corpus={"manifest": str(manifest)}, trials={"targets": 30, "min_speakers": 4}
    )
    ref = CliRunner().invoke(app, run_args(exp, tmp / "ref", tmp / "ref-cache"))
    assert ref.exit_code == 0, ref.output
    ref_dir = only_run_dir(tmp / "ref")
    return exp, ref_dir, json.loads((ref_dir / "run.json").read_text())["counts"]


def _rows(db: Path) -> int:
    with sqlite3.connect(db) as con:
        return con.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]


def _crash(exp: Path, out: Path, cache: Path, point: str) -> str:
    """Run in a child killed at ``point``; returns its stderr (progress lines, no --quiet), each
    run of whitespace as one space (long lines are wrapped to the width)."""
    args = [a for a in run_args(exp, out, cache) if a != "-q"]
    child = run_child(args, env={"INTERBIAS_CRASH_AT": point})
    assert child.returncode == -signal.SIGKILL, (child.returncode, child.stderr[-2000:])
    return " ".join(child.stderr.split())


def test_killed_runs_resume_to_byte_identical_outputs(setup, tmp_path: Path) -> None:
    exp, ref_dir, ref_counts = setup
    total, cells = ref_counts["embedded"], ref_counts["cells"]
    assert total > 64 and cells == 4  # at least two cache batches, four cells
    out, cache = tmp_path / "out", tmp_path / "cache"
    db = cache / "embeddings.sqlite"

    # 1. mid-embedding: killed inside the second cache transaction, before its commit
    _crash(exp, out, cache, "cache-write@2")
    run_dir = only_run_dir(out)
    first_batch = _rows(db)
    assert 64 <= first_batch < total  # the committed batch survives, the open one is rolled back
    assert not (run_dir / "cells").exists() and not (run_dir / "results.csv").exists()

    # 2. between cells: stopped right after the first cell's completion record, still holding the
    # run lock; a second run of the same command fails at once naming it; then it is killed
    log = tmp_path / "stopped.log"
    with log.open("w") as fh:
        child = start_child(
            [a for a in run_args(exp, out, cache) if a != "-q"],
            env={"INTERBIAS_CRASH_AT": "cell-done@1", "INTERBIAS_CRASH_SIGNAL": "STOP"},
            stderr=fh,
        )
        try:
            _, status = os.waitpid(child.pid, os.WUNTRACED)
            assert os.WIFSTOPPED(status), status
            second = CliRunner().invoke(app, run_args(exp, out, cache))
            assert second.exit_code == 1
            assert second.output == (
                f"error: run directory {run_dir} is in use by another interbias run (pid {child.pid})\n"
            )
        finally:
            child.kill()
            child.wait()
    err = " ".join(log.read_text().split())
    assert f": 0 of {cells} finished earlier (reused), {cells} to score; embeddings: " in err
    assert f"embeddings: {first_batch} from the cache, {total - first_batch} to compute" in err
    assert _rows(db) == total
    assert len(list((run_dir / "cells").rglob("*.json"))) == 1

    # 3. mid-write of results.csv, after every cell is recorded: half its bytes in a temporary
    # file; the killed run's lock is stale and taken over with a notice
    err = _crash(exp, out, cache, "write:results.csv")
    assert f"note: took over the lock of an earlier run (pid {child.pid}) that is no longer running" in err
    assert f": 1 of {cells} finished earlier (reused), {cells - 1} to score; embeddings: " in err
    assert "embeddings: " in err and " 0 to compute" in err
    assert len(list((run_dir / "cells").rglob("*.json"))) == cells and not (run_dir / "results.csv").exists()
    assert len(list(run_dir.glob(".results.csv.*.tmp"))) == 1

    # the same command once more completes the run from what was kept
    res = CliRunner().invoke(app, run_args(exp, out, cache))
    assert res.exit_code == 0, res.output
    assert f"embedded 0, cached 0, cells reused {cells}" in res.output
    assert only_run_dir(out) == run_dir and not list(run_dir.rglob(".*.tmp"))
    assert outputs(run_dir) == outputs(ref_dir)
    counts = json.loads((run_dir / "run.json").read_text())["counts"]
    assert counts["cells_reused"] == cells and counts["forward_calls"] == {"mfcc-stats": 0}
