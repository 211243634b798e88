"""Run every ``benchmarks/bench_*.py`` in turn (each in a fresh interpreter) and print their
tables. ``make bench`` calls this. Times are medians of repetitions measured side by side in
one run; nothing here asserts a time.

Usage: ``python benchmarks/run_all.py [--only NAME ...] [--quick]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def scripts(only: list[str] | None = None) -> list[Path]:
    """The bench_*.py files in name order, restricted to ``only`` (names with or without
    the ``bench_`` prefix); an unknown name is an error listing the valid ones."""
    found = sorted(HERE.glob("bench_*.py"))
    if not only:
        return found
    names = {p.stem.removeprefix("bench_"): p for p in found}
    wanted = [n.removeprefix("bench_").removesuffix(".py") for n in only]
    unknown = [n for n in wanted if n not in names]
    if unknown:
        raise SystemExit(f"unknown benchmark(s) {', '.join(unknown)}; valid: {', '.join(sorted(names))}")
    return [names[n] for n in wanted]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="+", help="benchmarks to run (e.g. metrics scoring)")
    ap.add_argument("--quick", action="store_true", help="pass --quick to the benchmarks that take it")
    ap.add_argument(
        "--clock",
        choices=["wall", "cpu"],
        default="wall",
        help="cpu: CPU seconds with one thread (for a machine shared with other work)",
    )
    args = ap.parse_args(argv)
    env = {**os.environ}
    env["PYTHONPATH"] = os.pathsep.join([str(HERE.parent), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    failed = []
    for path in scripts(args.only):
        text = path.read_text()
        extra = ["--quick"] if args.quick and "--quick" in text else []
        extra += ["--clock", args.clock] if args.clock != "wall" and "--clock" in text else []
        print(f"## {path.name}", flush=True)
        t = time.perf_counter()
        rc = subprocess.call([sys.executable, str(path), *extra], cwd=HERE.parent, env=env)
        print(f"({path.name}: {time.perf_counter() - t:.0f} s, exit {rc})\n", flush=True)
        if rc != 0:
            failed.append(path.name)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
