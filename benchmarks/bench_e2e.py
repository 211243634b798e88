"""End to end: ``interbias run EXP --corpus synthetic`` wall time split into encoder forward
passes and everything else (the harness overhead: start-up, imports, model loading, trial
drawing, decoding, operators, caching, scoring, writing).

The command runs in a fresh process with an empty embedding cache (the built corpus is
shared with ``$INTERBIAS_CACHE``, so corpus building is not counted) and a temporary results
folder. The default is E14 capped at 20 trials per stratum (42 cells, 933 embeddings per
encoder; the whole experiment, ``--max-trials 0``, needs 11 296). Forward time is what the
run measured inside ``Encoder.embed`` (run.json ``timings.forward_s``); the wall time is the
whole process, seen from outside.

A second table times ``make demo``'s run part as a newcomer meets it: ``interbias run E16
--corpus synthetic --encoders CAM++,GE2E,mfcc-stats`` in an empty cache, so the embedded corpus
is built and the encoders' ONNX graphs are exported within the run (``--quick`` skips it).

A third table sets ``interbias validate``'s estimate (embeddings, time) beside what the demo's
run and a whole E14 synthetic run with the same three encoders measured (cold embedding cache,
the built corpus shared; ``--quick`` skips both). The measured time compared is the run's own
total minus building the corpus, which the estimate leaves out.

CPU seconds are given too (the process's user + system time; forward: the CPU time of the
thread calling ``Encoder.embed``, ``timings.forward_cpu_s``). With ``--threads 1`` torch
computes on that thread alone, so the CPU split is exact and does not depend on what else the
machine is running — use it on a shared machine, where wall times measure the queue.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import ROOT, fmt_s, machine, table
from bench_embedding import fresh_cache

from interbias.utils.paths import cache_dir


def children_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


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


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f} %"


def split(wall_s: float, info: dict[str, Any], cpu_s: float | None = None) -> list[list[Any]]:
    """Rows (part, wall, share of wall, CPU, share of CPU): the whole process, forward
    passes, the harness overhead, then the run's timed stages (wall only)."""
    t = info["timings"]
    forward = t["forward_s"]
    fcpu = t.get("forward_cpu_s")
    # the forward CPU time is the calling thread's: all of it only when torch uses one thread
    cpu = cpu_s is not None and fcpu is not None and info.get("executor", {}).get("torch_threads") == 1
    rows = [
        ["process", fmt_s(wall_s), "100 %", fmt_s(cpu_s) if cpu_s is not None else "—", "100 %" if cpu else "—"],
        [
            "encoder forward (inside Encoder.embed)",
            fmt_s(forward),
            _pct(forward, wall_s),
            fmt_s(fcpu) if cpu else "— (needs --threads 1)",
            _pct(fcpu, cpu_s) if cpu else "—",
        ],
        [
            "harness overhead (process − forward)",
            fmt_s(wall_s - forward),
            _pct(wall_s - forward, wall_s),
            fmt_s(cpu_s - fcpu) if cpu else "—",
            _pct(cpu_s - fcpu, cpu_s) if cpu else "—",
        ],
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
        rows.append([name, fmt_s(sec), _pct(sec, wall_s), "", ""])
    return rows


def measure(
    experiment: str, corpus: str | None, encoders: str, max_trials: int | None, threads: int | None = None
) -> tuple[list[list[Any]], dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="interbias-e2e-") as tmp:
        tmp_path = Path(tmp)
        cache = fresh_cache(tmp_path, cache_dir())
        args = ["run", experiment, "--encoders", encoders, "--out", str(tmp_path / "out")]
        args += ["--cache-dir", str(cache), "--quiet"] + (["--corpus", corpus] if corpus else [])
        if max_trials:
            args += ["--max-trials", str(max_trials)]
        cpu0 = children_cpu_s()
        t = time.perf_counter()
        proc = cli(args, {"INTERBIAS_THREADS": str(threads)} if threads else None)
        wall = time.perf_counter() - t
        cpu = children_cpu_s() - cpu0
        if proc.returncode != 0:
            raise SystemExit(f"interbias {' '.join(args)} failed:\n{proc.stderr}")
        results = next(line for line in proc.stdout.splitlines() if line.startswith("results: "))
        info = json.loads((Path(results.split(": ", 1)[1]).parent / "run.json").read_text())
    return split(wall, info, cpu), info


def estimate_row(experiment: str, corpus: str, encoders: str, info: dict[str, Any], cache: Path) -> list[Any]:
    """One row: ``interbias validate``'s embeddings and time for ``experiment`` beside the run's
    (``info`` is its run.json; time = run total − corpus building), and measured / estimated."""
    from interbias.experiments.schema import find_experiment
    from interbias.run.validate import validate_file

    path = find_experiment(experiment, ROOT / "conditions")
    report = validate_file(path, encoders=encoders.split(","), corpus=corpus, cache=cache)
    if report.errors or not report.estimates or report.estimates[0].seconds is None:
        raise SystemExit(f"interbias validate {path} --corpus {corpus}: no estimate ({report.errors})")
    est = report.estimates[0]
    assert est.seconds is not None and est.n_embeddings is not None
    t = info["timings"]
    measured = t["total_s"] - t["corpus_s"]
    return [
        f"{experiment} --corpus {corpus} ({est.utterances_from})",
        est.n_embeddings,
        info["counts"]["embedded"],
        fmt_s(est.seconds),
        fmt_s(measured),
        f"{measured / est.seconds:.2f}×",
    ]


ESTIMATE_HEADERS = [
    "run",
    "embeddings estimated",
    "embedded",
    "time estimated",
    "time measured",
    "measured / estimated",
]
ALL_ENCODERS = "CAM++,GE2E,mfcc-stats"


DEMO = ["run", "E16", "--corpus", "synthetic", "--encoders", ALL_ENCODERS]


def demo_run(threads: int | None = None) -> tuple[list[list[Any]], dict[str, Any]]:
    """``make demo``'s run command in a fresh process with an empty cache: (rows, run.json)."""
    with tempfile.TemporaryDirectory(prefix="interbias-demo-") as tmp:
        tmp_path = Path(tmp)
        args = [*DEMO, "--out", str(tmp_path / "out"), "--quiet"]
        env = {"INTERBIAS_CACHE": str(tmp_path / "cache")}
        if threads:
            env["INTERBIAS_THREADS"] = str(threads)
        t = time.perf_counter()
        proc = cli(args, env)
        wall = time.perf_counter() - t
        if proc.returncode != 0:
            raise SystemExit(f"interbias {' '.join(args)} failed:\n{proc.stderr}")
        results = next(line for line in proc.stdout.splitlines() if line.startswith("results: "))
        info = json.loads((Path(results.split(": ", 1)[1]).parent / "run.json").read_text())
    t = info["timings"]
    rows = [
        ["process (cold cache)", fmt_s(wall), "100 %"],
        ["  start-up and imports", fmt_s(wall - t["total_s"]), _pct(wall - t["total_s"], wall)],
        ["  loading encoders (incl. ONNX export)", fmt_s(t["load_encoders_s"]), _pct(t["load_encoders_s"], wall)],
        ["  building the embedded corpus", fmt_s(t["corpus_s"]), _pct(t["corpus_s"], wall)],
        ["  embedding stage", fmt_s(t["embed_s"]), _pct(t["embed_s"], wall)],
    ]
    runtimes = {e["label"]: e.get("runtime", {}).get("name", "eager") for e in info["encoders"]}
    for label, sec in sorted(info["counts"].get("forward_s", {}).items()):
        rows.append([f"    forward {label} ({runtimes.get(label, '?')})", fmt_s(sec), _pct(sec, wall)])
    rows.append(["  scoring and writing cells", fmt_s(t["score_s"]), _pct(t["score_s"], wall)])
    return rows, info


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("experiment", nargs="?", default="E14")
    ap.add_argument("--corpus", default="synthetic")
    ap.add_argument("--encoders", default="CAM++,mfcc-stats")
    ap.add_argument(
        "--max-trials",
        type=int,
        default=20,
        help="cap per stratum; 0: the whole experiment (E14 synthetic: 11 296 embeddings per encoder, "
        "about 12 times the default's 933)",
    )
    ap.add_argument("--threads", type=int, default=None, help="INTERBIAS_THREADS for the run (1: exact CPU split)")
    ap.add_argument("--clock", default="wall", help="cpu implies --threads 1 (both clocks are always shown)")
    ap.add_argument("--quick", action="store_true", help="skip the make demo table")
    args = ap.parse_args(argv)
    if args.clock == "cpu" and args.threads is None:
        args.threads = 1
    rows, info = measure(args.experiment, args.corpus, args.encoders, args.max_trials, args.threads)
    counts = info["counts"]
    print(f"machine: {machine()}\n")
    title = (
        f"End to end: interbias run {args.experiment} --corpus {args.corpus} --encoders {args.encoders}"
        + (f" --max-trials {args.max_trials}" if args.max_trials else "")
        + f" (cold embedding cache; {counts['embedded']} embeddings, {info['trials']['n']} trials,"
        f" {counts['cells']} cells; torch threads {info['executor']['torch_threads']})"
    )
    print(table(title, ["part", "wall", "share of wall", "CPU", "share of CPU"], rows))
    if not args.quick:
        rows, info = demo_run(args.threads)
        title = (
            f"make demo's run part: interbias {' '.join(DEMO)} (empty cache: corpus built, graphs exported; "
            f"{info['counts']['embedded']} embeddings; torch threads {info['executor']['torch_threads']})"
        )
        print(table(title, ["part", "wall", "share of wall"], rows))
        with tempfile.TemporaryDirectory(prefix="interbias-empty-") as empty:
            estimates = [estimate_row("E16", "synthetic", ALL_ENCODERS, info, Path(empty))]
        _, whole = measure("E14", "synthetic", ALL_ENCODERS, 0, args.threads)
        estimates.append(estimate_row("E14", "synthetic", ALL_ENCODERS, whole, cache_dir()))
        title = "interbias validate's estimate against the run (time: run total minus building the corpus)"
        print(table(title, ESTIMATE_HEADERS, estimates))
    return 0


if __name__ == "__main__":
    sys.exit(main())
