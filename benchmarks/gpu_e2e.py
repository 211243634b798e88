"""End-to-end embedding speed (``gpu_check.py --e2e``): whole ``interbias run`` invocations on a device.

Runs, each as a fresh ``interbias run`` process in an empty embedding cache (built corpora and
exported graphs are shared through links, so nothing else is made again):

- ``E16 --corpus synthetic --encoders CAM++,mfcc-stats``
- ``E14 --corpus synthetic --encoders CAM++``

and reads each run's run.json: ``timings.embedded_audio_s`` (seconds of audio through the
encoders, each waveform once per encoder), ``timings.embed_s`` (the embedding stage),
``timings.total_s`` (the whole run from loading the encoders) less ``timings.corpus_s`` (so a
first build of the synthetic corpus does not count). Reports × real time = embedded audio
seconds / wall seconds for the embedding stage, that run and the whole process (interpreter
start and any corpus build included). ``--device cpu`` runs the same on the CPU.

On an accelerator machine prepared by ``../shared/tools/device_bundle.sh``::

    source .device/env.sh; python3 benchmarks/gpu_check.py --e2e --device cuda:0 --write "$OUT/e2e.json"

Exit 0 when every run finished, 1 when one failed or ran over ``--timeout``, 2 when the
device is not available (nothing is run).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from _common import ROOT, device_available, machine, table

#: (experiment, encoders) timed by default, as ``EXP:ENC1,ENC2`` joined by ``;``.
RUNS = "E16:CAM++,mfcc-stats;E14:CAM++"
#: The interbias command line, in this interpreter (the forkserver of the corpus renderer
#: imports ``__main__``; ``-c`` has no file for it to import).
IB = [sys.executable, "-c", "import sys; from interbias.cli import main; sys.exit(main())"]


@dataclass
class E2E:
    """One timed run (seconds are wall seconds; ``x_*`` are × real time)."""

    experiment: str
    encoders: str
    device: str
    rc: int
    process_s: float
    jobs: int | None = None
    embedded: int | None = None
    audio_s: float | None = None
    embed_s: float | None = None
    #: The run's seconds without loading (or building) the corpus.
    total_s: float | None = None
    oom_retries: int | None = None
    x_embed: float | None = None
    x_run: float | None = None
    x_process: float | None = None
    tail: str = ""


def parse_runs(text: str) -> list[tuple[str, str]]:
    """``"E16:CAM++,mfcc-stats;E14:CAM++"`` → ``[("E16", "CAM++,mfcc-stats"), ("E14", "CAM++")]``."""
    runs = []
    for part in filter(None, (p.strip() for p in text.split(";"))):
        exp, sep, encs = part.partition(":")
        if not sep or not exp or not encs:
            raise SystemExit(f"--runs: {part!r} is not EXPERIMENT:ENCODER[,ENCODER…]")
        runs.append((exp, encs))
    return runs


def cold_cache(parent: Path) -> Path:
    """A cache under ``parent`` with no embeddings whose other entries (built corpora, exported
    graphs) are links to the usual cache's, so nothing but the embeddings is made again."""
    from interbias.utils.paths import cache_dir

    usual = cache_dir()
    (usual / "corpora").mkdir(parents=True, exist_ok=True)
    cache = parent / "cache"
    cache.mkdir(parents=True)
    for entry in usual.iterdir():
        if not entry.name.startswith("embeddings"):
            (cache / entry.name).symlink_to(entry.resolve())
    return cache


def from_run_json(row: E2E, run_json: dict[str, Any]) -> E2E:
    """``row`` with the figures of a finished run's run.json."""
    t = run_json.get("timings", {})
    counts = run_json.get("counts", {})
    row.jobs = run_json.get("executor", {}).get("jobs")
    row.embedded = counts.get("embedded")
    row.oom_retries = counts.get("oom_retries")
    row.audio_s, row.embed_s = t.get("embedded_audio_s"), t.get("embed_s")
    row.total_s = t["total_s"] - t.get("corpus_s", 0.0) if "total_s" in t else None
    if row.audio_s:
        row.x_embed = row.audio_s / row.embed_s if row.embed_s else None
        row.x_run = row.audio_s / row.total_s if row.total_s else None
        row.x_process = row.audio_s / row.process_s
    return row


def time_run(exp: str, encoders: str, args: argparse.Namespace, work: Path) -> E2E:
    """One ``interbias run`` in a fresh cache and output folder; its figures from run.json."""
    out = work / f"{exp}-out"
    cmd = [*IB, "run", exp, "--corpus", "synthetic", "--encoders", encoders, "--device", args.device]
    cmd += ["--out", str(out), "--cache-dir", str(cold_cache(work / exp)), "--quiet", "--json"]
    cmd += ["--precision", args.precision] if args.precision != "fp32" else []
    cmd += ["--jobs", str(args.jobs)] if args.jobs else []
    cmd += ["--max-trials", str(args.max_trials)] if args.max_trials else []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    t = time.perf_counter()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, env=env, cwd=ROOT)
        rc, text = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as exc:
        rc, text = 124, f"over --timeout {args.timeout} s: {exc.stderr or ''}"
    row = E2E(exp, encoders, args.device, rc, time.perf_counter() - t, tail="\n".join(str(text).splitlines()[-6:]))
    found = sorted(out.glob("*/run.json"))
    if found:
        from_run_json(row, json.loads(found[-1].read_text()))
    return row


def fmt(x: float | None, spec: str) -> str:
    return "—" if x is None else format(x, spec)


def report(rows: list[E2E]) -> str:
    headers = ["run", "encoders", "jobs", "embedded", "audio s", "embed s", "× RT embed", "run s", "× RT run"]
    headers += ["× RT process", "OOM halvings", "exit"]
    body = [
        [
            r.experiment,
            r.encoders,
            r.jobs if r.jobs is not None else "—",
            r.embedded if r.embedded is not None else "—",
            fmt(r.audio_s, ".0f"),
            fmt(r.embed_s, ".1f"),
            fmt(r.x_embed, ".0f"),
            fmt(r.total_s, ".1f"),
            fmt(r.x_run, ".0f"),
            fmt(r.x_process, ".0f"),
            r.oom_retries if r.oom_retries is not None else "—",
            r.rc,
        ]
        for r in rows
    ]
    return table(f"interbias run end to end on {rows[0].device if rows else '?'}", headers, body)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="gpu_check.py --e2e", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--runs", default=RUNS, help=f"EXP:ENC[,ENC…] joined by ';' (default {RUNS!r})")
    ap.add_argument("--jobs", type=int, default=None, help="interbias run --jobs (default: its automatic choice)")
    ap.add_argument("--precision", default="fp32", help="interbias run --precision")
    ap.add_argument("--max-trials", type=int, default=None, help="interbias run --max-trials (a shorter check)")
    ap.add_argument("--timeout", type=float, default=280.0, help="seconds per run before it counts as failed")
    ap.add_argument("--write", type=Path, default=None, help="also write the figures as JSON here")
    args = ap.parse_args(argv)
    why = device_available(args.device)
    if why:
        print(f"gpu_check --e2e: not run on {args.device}: {why}", file=sys.stderr)
        return 2
    rows = []
    with tempfile.TemporaryDirectory(prefix="interbias-e2e-") as tmp:
        for exp, encs in parse_runs(args.runs):
            work = Path(tmp) / exp
            work.mkdir()
            rows.append(time_run(exp, encs, args, work))
    print(f"machine: {machine()}\n")
    print(report(rows))
    for r in rows:
        if r.rc != 0:
            print(f"\n{r.experiment} exited {r.rc}:\n{r.tail}", file=sys.stderr)
    if args.write:
        args.write.write_text(json.dumps({"machine": machine(), "runs": [asdict(r) for r in rows]}, indent=1) + "\n")
    return 0 if all(r.rc == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
