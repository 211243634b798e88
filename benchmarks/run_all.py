"""Run every ``benchmarks/bench_*.py`` in turn (each in a fresh interpreter), print their
tables, and with ``--write FILE`` save them, with the date, commit and machine, as the Markdown
that the documentation's speed page includes. ``make bench`` calls this with
``--write benchmarks/figures.md``. Times are medians of repetitions measured side by side in one
run; nothing here asserts a time.

Usage: ``python benchmarks/run_all.py [--only NAME ...] [--quick] [--write FILE]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import machine  # noqa: E402

from interbias.run.results import revision  # noqa: E402

#: First line of a written figures file: it is output, not prose to edit.
GENERATED = "<!-- written by `make bench` (benchmarks/run_all.py --write); do not edit by hand -->"


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


def run_script(cmd: list[str], env: dict[str, str]) -> tuple[int, str]:
    """Run ``cmd`` from the checkout's root, echoing its standard output line by line as it
    comes (standard error passes straight through); (exit status, the output)."""
    proc = subprocess.Popen(cmd, cwd=HERE.parent, env=env, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        print(line, end="", flush=True)
        lines.append(line)
    return proc.wait(), "".join(lines)


def demote(text: str) -> str:
    """Headings one level down (``### t`` → ``#### t``), so a script's tables nest under its
    own heading in the figures file."""
    return "\n".join("#" + line if line.startswith("#") else line for line in text.splitlines())


def figures(sections: list[tuple[str, float, int, str]], started: dt.datetime, total_s: float) -> str:
    """The Markdown of one ``make bench`` run: date, commit, machine, then each script's output."""
    head = [
        GENERATED,
        "",
        f"Measured by `make bench` on {started:%Y-%m-%d} (UTC), commit {revision()}, in one run of "
        f"{total_s / 60:.0f} min, on: {machine()}.",
        "",
    ]
    for name, seconds, rc, out in sections:
        status = "" if rc == 0 else f", exit {rc}: its figures are incomplete"
        head += [f"### `{name}` ({seconds:.0f} s{status})", "", demote(out.strip()), ""]
    return "\n".join(head).rstrip() + "\n"


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
    ap.add_argument(
        "--write",
        type=Path,
        help="save the tables as Markdown here (only from a whole run: not with --only or --quick)",
    )
    args = ap.parse_args(argv)
    write = args.write
    if write and (args.only or args.quick):
        print(f"not writing {write}: --only/--quick runs are partial; the figures file holds whole runs")
        write = None
    env = {**os.environ}
    env["PYTHONPATH"] = os.pathsep.join([str(HERE.parent), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    started, t0 = dt.datetime.now(dt.UTC), time.perf_counter()
    sections = []
    for path in scripts(args.only):
        text = path.read_text()
        extra = ["--quick"] if args.quick and "--quick" in text else []
        extra += ["--clock", args.clock] if args.clock != "wall" and "--clock" in text else []
        print(f"## {path.name}", flush=True)
        t = time.perf_counter()
        rc, out = run_script([sys.executable, str(path), *extra], env)
        seconds = time.perf_counter() - t
        print(f"({path.name}: {seconds:.0f} s, exit {rc})\n", flush=True)
        sections.append((path.name, seconds, rc, out))
    if write:
        write.parent.mkdir(parents=True, exist_ok=True)
        write.write_text(figures(sections, started, time.perf_counter() - t0))
        print(f"wrote {write}")
    failed = [name for name, _, rc, _ in sections if rc != 0]
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
