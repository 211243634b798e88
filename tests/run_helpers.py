"""Helpers for tests that run ``interbias run`` as a user would: a manifest file of the tiny
corpus (so a run needs no corpus build), the CLI in a child process, and run-directory digests."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import interbias
from interbias.corpora.manifest import Manifest

if TYPE_CHECKING:
    from interbias.run.conductor import RunOutcome

#: The repository root of the package under test (put first on a child's PYTHONPATH).
REPO = Path(interbias.__file__).resolve().parent.parent
CLI = [sys.executable, "-c", "from interbias.cli import main; main()"]
#: Children run single-threaded: on a shared machine idle torch threads spin and cost more CPU
#: than they save on these small runs.
CHILD_ENV = {"INTERBIAS_THREADS": "1", "OMP_NUM_THREADS": "1"}


def manifest_file(corpus: Manifest, folder: Path, *, copy_audio: bool = False) -> Path:
    """Write ``corpus`` as ``folder/manifest.csv``: absolute paths to its audio, or (``copy_audio``)
    a copy of the audio under ``folder/audio`` with relative paths. Recorded sha256s are dropped so
    tests may replace a file's content."""
    folder.mkdir(parents=True, exist_ok=True)
    utts = []
    for u in corpus:
        src = corpus.resolve(u)
        if copy_audio:
            dst = folder / "audio" / Path(u.path)
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst)
            path = str(dst.relative_to(folder))
        else:
            path = str(src)
        utts.append(dataclasses.replace(u, path=path, sha256=None))
    out = folder / "manifest.csv"
    Manifest(corpus.name, folder, tuple(utts)).write(out)
    return out


def run_args(exp: Path, out: Path, cache: Path, *extra: str) -> list[str]:
    """``interbias run`` arguments for one mfcc-stats run of ``exp``."""
    return ["run", str(exp), "--encoders", "mfcc-stats", "--out", str(out), "--cache-dir", str(cache), "-q", *extra]


def run_child(args: list[str], env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """``interbias ARGS`` in a child process with this worktree first on its path."""
    full_env = {**os.environ, "PYTHONPATH": str(REPO), **CHILD_ENV, **(env or {})}
    return subprocess.run([*CLI, *args], env=full_env, capture_output=True, text=True, timeout=timeout)


def start_child(args: list[str], env: dict[str, str] | None = None, **kwargs) -> subprocess.Popen:
    """``interbias ARGS`` started in a child process (not waited for)."""
    full_env = {**os.environ, "PYTHONPATH": str(REPO), **CHILD_ENV, **(env or {})}
    return subprocess.Popen([*CLI, *args], env=full_env, **kwargs)


def outputs(run_dir: Path) -> dict[str, bytes]:
    """The bytes of results.csv, trials.parquet and every per-cell scores file of a run."""
    files = {name: (run_dir / name).read_bytes() for name in ("results.csv", "trials.parquet")}
    for p in sorted((run_dir / "scores").rglob("*.parquet")):
        files[str(p.relative_to(run_dir))] = p.read_bytes()
    return files


def only_run_dir(out: Path) -> Path:
    """The one run directory under ``out``."""
    dirs = [p for p in out.iterdir() if p.is_dir()]
    assert len(dirs) == 1, dirs
    return dirs[0]


def isolated_cache(tmp: Path, session_cache: Path) -> Path:
    """A cache sharing the session's built corpora and attack sets but with its own embedding
    cache, so these runs leave the session's embeddings as other tests expect them."""
    cache = tmp / "cache"
    cache.mkdir(parents=True)
    for sub in ("corpora", "attacks"):
        (session_cache / sub).mkdir(exist_ok=True)
        (cache / sub).symlink_to(session_cache / sub)
    return cache


def run_in_process(exp: Path, tmp: Path, session_cache: Path, **options: Any) -> RunOutcome:
    """One quiet mfcc-stats run of ``exp`` in this process: results under ``tmp/results``, the
    cache of :func:`isolated_cache`; ``options`` are further :class:`RunOptions` fields."""
    from interbias.run.conductor import RunOptions, run

    cache = isolated_cache(tmp, session_cache)
    opts = RunOptions(
        experiment=str(exp), encoders=["mfcc-stats"], out=tmp / "results", cache_dir=cache, quiet=True,
        command=["t"], **options,
    )  # fmt: skip
    return run(opts)
