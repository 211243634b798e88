"""Shared helpers of the benchmark scripts: timing (median of repetitions), tables, machine."""

from __future__ import annotations

import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


#: What the timings measure: ``wall`` seconds, or ``cpu`` seconds of this process with
#: BLAS and torch held to one thread (robust on a machine shared with other work, where
#: wall times measure the queue; it hides any multi-core speed-up).
CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}
_clock = {"name": "wall"}


def set_clock(name: str) -> str:
    """Select the clock (see :data:`CLOCKS`); ``cpu`` also limits BLAS and torch to one thread.
    Returns a phrase for table titles."""
    if name not in CLOCKS:
        raise SystemExit(f"unknown clock {name!r}; valid: {', '.join(CLOCKS)}")
    _clock["name"] = name
    if name == "cpu":
        import threadpoolctl
        import torch

        threadpoolctl.threadpool_limits(1)
        torch.set_num_threads(1)
        return "CPU seconds, one thread"
    return "wall seconds"


def now() -> float:
    return CLOCKS[_clock["name"]]()


def median_time(fn: Callable[[], Any], reps: int, *, warmup: bool = True) -> tuple[float, Any]:
    """(median seconds on the selected clock over ``reps`` calls, the last result); one
    untimed call first unless ``warmup`` is false."""
    result = fn() if warmup else None
    times = []
    for _ in range(reps):
        t = now()
        result = fn()
        times.append(now() - t)
    return statistics.median(times), result


def fmt_s(seconds: float) -> str:
    if seconds >= 100:
        return f"{seconds:.0f} s"
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1000:.1f} ms"
    return f"{seconds * 1e6:.0f} µs"


def table(title: str, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A Markdown table (pipes inside a cell escaped), readable as plain text too."""
    cell = lambda c: str(c).replace("|", "\\|")  # noqa: E731  (a pipe inside a cell would split it)
    cells = [[cell(h) for h in headers]] + [[cell(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    line = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |"  # noqa: E731
    out = [f"### {title}", "", line(cells[0]), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += [line(r) for r in cells[1:]]
    return "\n".join(out) + "\n"


def machine() -> str:
    """One line: CPU model, logical cores, memory, BLAS, torch threads."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(next(x for x in Path("/proc/meminfo").read_text().splitlines() if x.startswith("MemTotal")).split()[1])
        mem = f", {kb / 2**20:.0f} GiB RAM"
    except (OSError, StopIteration, ValueError):
        pass
    blas = ""
    try:
        import numpy as np

        cfg = np.show_config(mode="dicts")
        b = cfg["Build Dependencies"]["blas"]
        blas = f", numpy {np.__version__} with {b.get('name')} {b.get('version', '')}".rstrip()
    except Exception:
        pass
    try:
        load = os.getloadavg()[0]
        load_s = f", load average {load:.1f} at start"
    except OSError:
        load_s = ""
    return f"{model}, {os.cpu_count()} logical cores{mem}{blas}, Python {platform.python_version()}{load_s}"


def device_available(device: str) -> str:
    """Empty when usable, else why not."""
    if device == "cpu":
        return ""
    import torch

    if not device.startswith("cuda"):
        return f"unknown device {device!r}"
    if not torch.cuda.is_available():
        return "CUDA is not available (torch.cuda.is_available() is False)"
    return ""
