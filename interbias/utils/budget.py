"""What a count asked for implies before the work starts: a replicate or permutation count,
a batch or a layer width times the bytes each one holds, against the memory this machine has
free; and the time the count implies at a stated cost per unit, against a limit a flag lifts.
One line when it cannot fit, never numpy's or torch's allocation error, nor hours of silence."""

from __future__ import annotations

import os

from interbias.utils.errors import ConfigError, InterbiasError
from interbias.utils.progress import duration

GIB = 1024**3
#: Longest work a count may imply before it is refused unless the user lifts the limit.
TIME_LIMIT_S = 3600.0
#: Shortest estimate worth printing before the work starts.
SAY_TIME_S = 60.0


def available_bytes() -> int:
    """Memory free for a new allocation: ``MemAvailable`` of /proc/meminfo, else the physical
    memory (``os.sysconf``)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


def size_text(n_bytes: float) -> str:
    """``253 GiB``, ``1.5 GiB``, ``12 MiB``."""
    for unit, size in (("TiB", 1024**4), ("GiB", GIB), ("MiB", 1024**2)):
        if n_bytes >= size:
            v = n_bytes / size
            return f"{v:.3g} {unit}" if v < 100 else f"{v:,.0f} {unit}"
    return f"{n_bytes / 1024:.3g} KiB"


def check_memory(
    option: str,
    count: int,
    bytes_each: int,
    each: str,
    *,
    error: type[InterbiasError] = ConfigError,
    available: int | None = None,
) -> None:
    """Refuse ``option count`` when ``count × bytes_each`` (at least what the work holds at once;
    ``each`` says what one unit holds, e.g. "a weight per trial, 1,920 × 8 bytes") exceeds the
    memory this machine has free, naming the implied memory and the largest count that fits."""
    free = available_bytes() if available is None else available
    need = int(count) * int(bytes_each)
    if need <= free:
        return
    fits = max(0, free // max(1, bytes_each))
    raise error(
        f"{option} {count:,}: needs at least {size_text(need)} of memory ({each} each); this machine has "
        f"{size_text(free)} free, enough for at most {fits:,}"
    )


def estimate_time(
    option: str,
    count: int,
    seconds_each: float,
    each: str,
    *,
    allow: str,
    limit_s: float | None = TIME_LIMIT_S,
    error: type[InterbiasError] = ConfigError,
) -> str:
    """The time ``option count`` implies at ``seconds_each`` per unit (``each`` says what one unit
    costs, e.g. "23,310 trial weights at 100 ns"): refused when above ``limit_s`` (None: no limit),
    naming the estimate, the largest count within the limit and ``allow``, the flag that lifts it;
    else the line to print before the work when it is at least :data:`SAY_TIME_S` ("" below)."""
    seconds = int(count) * float(seconds_each)
    say = f"{option} {count:,}: about {duration(seconds)} ({each} each)"
    if limit_s is not None and seconds > limit_s:
        fits = int(limit_s / max(seconds_each, 1e-12))
        raise error(f"{say}; refused above {duration(limit_s)} (at most {fits:,} within it): pass {allow} to run it")
    return say if seconds >= SAY_TIME_S else ""
