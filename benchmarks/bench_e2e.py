"""End to end: ``interbias run EXP --corpus synthetic`` wall time split into encoder forward
passes and everything else (the harness overhead: start-up, imports, model loading, trial
drawing, decoding, operators, caching, scoring, writing).

The command runs in a fresh process with an empty embedding cache (the built corpus is
shared with ``$INTERBIAS_CACHE``, so corpus building is not counted) and a temporary results
folder. Forward time is what the run measured inside ``Encoder.embed`` (run.json
``timings.forward_s``); the wall time is the whole process, seen from outside.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import ROOT, fmt_s, machine, table
from bench_embedding import fresh_cache

from interbias.paths import cache_dir


def cli(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``interbias ARGS`` in a fresh interpreter that imports this checkout."""
    env = {**os.environ, **(env or {})}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return subprocess.run(
        [sys.executable, "-c", "from interbias.cli import main; main()", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )


def split(wall_s: float, info: dict[str, Any]) -> list[list[Any]]:
    """Rows: the wall time, forward passes, and the run's other timed stages."""
    t = info["timings"]
    forward = t["forward_s"]
    rows = [
        ["process wall time", fmt_s(wall_s), "100 %"],
        ["encoder forward (inside Encoder.embed)", fmt_s(forward), f"{100 * forward / wall_s:.1f} %"],
        ["harness overhead (wall − forward)", fmt_s(wall_s - forward), f"{100 * (wall_s - forward) / wall_s:.1f} %"],
    ]
    stages = [
        ("  start-up and imports (wall − run total)", wall_s - t["total_s"]),
        ("  loading encoders", t["load_encoders_s"]),
        ("  corpus manifest", t["corpus_s"]),
        ("  drawing trials", t["trials_s"]),
        ("  embedding stage minus forward (decode, operators, cache)", t["embed_s"] - forward),
        ("  scoring and writing cells", t["score_s"]),
    ]
    for name, sec in stages:
        rows.append([name, fmt_s(sec), f"{100 * sec / wall_s:.1f} %"])
    return rows


def measure(
    experiment: str, corpus: str | None, encoders: str, max_trials: int | None
) -> tuple[list[list[Any]], dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="interbias-e2e-") as tmp:
        tmp_path = Path(tmp)
        cache = fresh_cache(tmp_path, cache_dir())
        args = ["run", experiment, "--encoders", encoders, "--out", str(tmp_path / "out")]
        args += ["--cache-dir", str(cache), "--quiet"] + (["--corpus", corpus] if corpus else [])
        if max_trials:
            args += ["--max-trials", str(max_trials)]
        t = time.perf_counter()
        proc = cli(args)
        wall = time.perf_counter() - t
        if proc.returncode != 0:
            raise SystemExit(f"interbias {' '.join(args)} failed:\n{proc.stderr}")
        results = next(line for line in proc.stdout.splitlines() if line.startswith("results: "))
        info = json.loads((Path(results.split(": ", 1)[1]).parent / "run.json").read_text())
    return split(wall, info), info


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("experiment", nargs="?", default="E16")
    ap.add_argument("--corpus", default="synthetic")
    ap.add_argument("--encoders", default="CAM++,mfcc-stats")
    ap.add_argument("--max-trials", type=int, default=None)
    args = ap.parse_args(argv)
    rows, info = measure(args.experiment, args.corpus, args.encoders, args.max_trials)
    counts = info["counts"]
    print(f"machine: {machine()}\n")
    title = (
        f"End to end: interbias run {args.experiment} --corpus {args.corpus} --encoders {args.encoders}"
        + (f" --max-trials {args.max_trials}" if args.max_trials else "")
        + f" (cold embedding cache; {counts['embedded']} embeddings, {info['trials']['n']} trials,"
        f" {counts['cells']} cells)"
    )
    print(table(title, ["part", "time", "share of wall"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
