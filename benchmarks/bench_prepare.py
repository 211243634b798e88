"""Preparation CPU time per waveform of an experiment's run (default E14 synthetic): decode,
voice activity detection and the operator chains of a sample of the run's utterances, as
:func:`interbias.embedding.tasks.prepare` does it, the way it was done before (``before``,
restored here by :func:`before`) and now (``now``). Before: every crosstalk or babble
application scanned the whole manifest for the talker pool and measured its talker's active
power again, every chain measured its input's level for the near-silence check again, every
path resolution resolved the corpus root again, every chain fingerprint was hashed again. Now:
the pool is indexed once per corpus, a talker's power is cached with its clip, the input's level
is measured once per utterance, the root and the fingerprints once. Both run side by side in one
process, alternately, in CPU seconds of this process; their waveforms are checked equal byte for
byte.

    python benchmarks/bench_prepare.py [--utterances 48] [--reps 3] [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import numpy as np
from _common import machine, table
from run_plan import run_plan


class ScanIndex:
    """The talker pool as each application saw it before indexing: the whole manifest scanned
    for speakers outside the excluded set, the speakers sorted, the drawn speaker's utterances
    sorted by id."""

    def __init__(self, corpus: Any) -> None:
        self.corpus = corpus
        self.by_speaker: dict[str, Any] = {}

    def speakers_outside(self, exclude: frozenset[str]) -> tuple[str, ...]:
        groups: dict[str, list[Any]] = {}
        for u in self.corpus.utterances:
            if u.speaker not in exclude:
                groups.setdefault(u.speaker, []).append(u)
        self.by_speaker = _SortedOnRead(groups)
        return tuple(sorted(groups))


class _SortedOnRead(dict):
    def __getitem__(self, speaker: str) -> list[Any]:
        return sorted(super().__getitem__(speaker), key=lambda u: u.id)


def tasks_of(plan: Any, n: int) -> list[Any]:
    """One task per utterance for ``n`` utterances spread evenly over the plan's sorted ids."""
    from interbias.embedding.tasks import EmbedTask

    chains: dict[str, list[Any]] = {}
    for uid, chain in plan.items:
        chains.setdefault(uid, []).append(chain)
    uids = sorted(chains)
    step = max(1, len(uids) // n)
    picked = uids[::step][:n]
    by_id = plan.manifest.by_id()
    return [
        EmbedTask(
            uid,
            by_id[uid].sha256 or uid,
            plan.exclude.get(uid, frozenset()),
            tuple((c, ("enc",)) for c in sorted(chains[uid], key=lambda c: c.fingerprint)),
        )
        for uid in picked
    ]


@contextmanager
def before() -> Iterator[None]:
    """Preparation as it was before (see the module doc), restored on exit."""
    from functools import lru_cache

    from interbias.audio import frontend as audio
    from interbias.audio.level import active_mask, active_power
    from interbias.corpora.manifest import Manifest
    from interbias.embedding import tasks as T
    from interbias.operators import Chain, noise, silence
    from interbias.utils.seeding import canonical_json, sha256_text

    @lru_cache(maxsize=128)
    def clip_only(path: str, frontend: Any, span: Any = None) -> np.ndarray:
        return audio.load(Path(path), frontend, span=span).samples

    def talker(path: str, frontend: Any, span: Any = None) -> tuple[np.ndarray, float]:
        clip = np.asarray(clip_only(path, frontend, span), np.float64)
        return clip, active_power(clip, active_mask(clip, frontend.sample_rate_hz))

    def resolve(self: Any, utt: Any) -> Path:
        p = Path(utt.path)
        return p if p.is_absolute() else (self.root.resolve() / p).resolve()

    def fingerprint(self: Any) -> str:
        if self.draw:
            return sha256_text(canonical_json({"chain": self.records(), "draw": self.draw}))[:16]
        return sha256_text(canonical_json(self.records()))[:16]

    saved = (noise.talker_index, noise._talker_cached, Manifest.resolve, Chain.__dict__["fingerprint"])
    saved_t = (T.check_chain_output, T.input_speech_db)
    noise.talker_index, noise._talker_cached = ScanIndex, talker  # type: ignore[assignment]
    Manifest.resolve, Chain.fingerprint = resolve, property(fingerprint)  # type: ignore[method-assign,assignment]
    T.check_chain_output = lambda b, a, r, speech_db=None: silence.check_chain_output(b, a, r)  # type: ignore[assignment]
    T.input_speech_db = lambda b, r: 0.0  # type: ignore[assignment]
    try:
        yield
    finally:
        noise.talker_index, noise._talker_cached, Manifest.resolve = saved[:3]  # type: ignore[assignment,method-assign]
        Chain.fingerprint = saved[3]  # type: ignore[method-assign]
        T.check_chain_output, T.input_speech_db = saved_t  # type: ignore[assignment]


def prepare_pass(ctx: Any, tasks: list[Any], how: str) -> tuple[float, list[bytes]]:
    """(CPU seconds, every waveform's bytes) of preparing ``tasks`` ``how`` (before or now)."""
    from interbias.embedding import tasks as T
    from interbias.operators import noise

    noise._talker_cached.cache_clear()  # each pass decodes its talkers afresh
    with before() if how == "before" else nullcontext():
        t = time.process_time()
        waves = [p.wave.tobytes() for task in tasks for p in T.prepare(ctx, task)[0]]
        return time.process_time() - t, waves


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--experiment", default="E14")
    ap.add_argument("--corpus", default="synthetic")
    ap.add_argument("--utterances", type=int, default=48)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="12 utterances, one repetition (a smoke test)")
    args = ap.parse_args(argv)
    if args.quick:
        args.utterances, args.reps = 12, 1
    import threadpoolctl
    import torch

    from interbias.embedding.tasks import EmbedContext
    from interbias.utils.paths import cache_dir

    threadpoolctl.threadpool_limits(1)
    torch.set_num_threads(1)
    plan = run_plan(args.experiment, args.corpus)
    tasks = tasks_of(plan, args.utterances)
    ctx = EmbedContext(plan.exp.frontend, plan.manifest, cache_dir())
    n_waves = sum(len(t.chains) for t in tasks)
    seconds: dict[str, list[float]] = {"before": [], "now": []}
    ref: list[bytes] | None = None
    for _ in range(args.reps):
        for how in ("before", "now"):
            s, waves = prepare_pass(ctx, tasks, how)
            seconds[how].append(s)
            if ref is None:
                ref = waves
            elif waves != ref:
                print(f"bench_prepare: the waveforms differ ({how})", file=sys.stderr)
                return 1
    old, new = statistics.median(seconds["before"]), statistics.median(seconds["now"])
    rows = [
        ["before: pool scanned, levels and keys per use", f"{1e3 * old / n_waves:.2f}", "1.00"],
        ["now: pool indexed, levels and keys once", f"{1e3 * new / n_waves:.2f}", f"{new / old:.2f}"],
    ]
    title = (
        f"Preparation of {args.experiment} --corpus {args.corpus}: {len(tasks)} of "
        f"{len({u for u, _ in plan.items})} utterances, {n_waves} waveforms, CPU ms per waveform "
        f"(median of {args.reps}; waveforms equal byte for byte)"
    )
    print(f"machine: {machine()}\n")
    print(table(title, ["preparation", "CPU ms / waveform", "× before"], rows))
    print(f"\nCPU time per waveform: {100 * (1 - new / old):.0f} % less")
    return 0


if __name__ == "__main__":
    sys.exit(main())
