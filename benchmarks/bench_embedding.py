"""Embedding work: forward passes counted against the unique (utterance, chain) pairs an
experiment needs (must be equal: each embedded once per encoder), and 0 on warm reruns.

The unique pairs are counted independently of the run conductor, from the saved trial list and the
experiment's cells: for every cell, (enrol utterance, enrol chain) and (test utterance, test
chain) over the trials of its stratum. Runs use a fresh embedding cache (the corpus is
shared with ``$INTERBIAS_CACHE``) and a temporary results folder.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd
from _common import machine, table

from interbias.experiments.schema import find_experiment, load_experiment
from interbias.run.conductor import RunOptions, run
from interbias.utils.paths import cache_dir, conditions_dir


def unique_pairs(experiment: str, corpus: str | None, run_dir: Path) -> int:
    """(utterance, chain fingerprint) pairs the experiment's cells need, from trials.parquet."""
    exp = load_experiment(find_experiment(experiment, conditions_dir()), corpus=corpus)
    trials = pd.read_parquet(run_dir / "trials.parquet")
    pairs: set[tuple[str, str]] = set()
    for cell in exp.cells():
        sub = trials[trials.stratum == cell.stratum]
        pairs.update((u, cell.enrol_chain.fingerprint) for u in sub.enrol)
        pairs.update((u, cell.test_chain.fingerprint) for u in sub.test)
    return len(pairs)


def fresh_cache(parent: Path, shared: Path) -> Path:
    """An empty embedding cache that reuses the built corpora of ``shared``."""
    cache = parent / "cache"
    cache.mkdir()
    (shared / "corpora").mkdir(parents=True, exist_ok=True)
    (cache / "corpora").symlink_to((shared / "corpora").resolve())
    return cache


def measure(experiment: str, corpus: str | None, encoders: list[str], max_trials: int | None) -> list[list[Any]]:
    with tempfile.TemporaryDirectory(prefix="interbias-bench-") as tmp:
        tmp_path = Path(tmp)
        cache = fresh_cache(tmp_path, cache_dir())
        opts = dict(
            experiment=experiment, corpus=corpus, encoders=encoders, max_trials=max_trials, quiet=True, cache_dir=cache
        )
        counts = []
        need = 0
        for out in ("cold", "warm", "cold"):  # cold cache; warm cache, new dir; rerun in place
            outcome = run(RunOptions(**opts, out=tmp_path / out, command=["bench"]))
            counts.append(json.loads((outcome.run_dir / "run.json").read_text())["counts"])
            need = need or unique_pairs(experiment, corpus, outcome.run_dir)
    rows = []
    for label in encoders:
        calls = [c["forward_calls"][label] for c in counts]
        rows.append(
            [
                f"{experiment} {corpus or ''}".strip(),
                label,
                need,
                calls[0],
                "yes" if calls[0] == need else "NO",
                calls[1],
                calls[2],
            ]
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("experiment", nargs="?", default="E16")
    ap.add_argument("--corpus", default="synthetic")
    ap.add_argument("--encoders", default="CAM++,mfcc-stats")
    ap.add_argument("--max-trials", type=int, default=50, help="cap per stratum (the count check needs no more)")
    args = ap.parse_args(argv)
    rows = measure(args.experiment, args.corpus, [e for e in args.encoders.split(",") if e], args.max_trials)
    print(f"machine: {machine()}\n")
    print(
        table(
            f"Embedding: forward passes vs unique (utterance, chain) pairs (--max-trials {args.max_trials})",
            [
                "experiment",
                "encoder",
                "unique pairs",
                "forward (cold)",
                "equal",
                "forward (warm, new dir)",
                "forward (rerun, same dir)",
            ],
            rows,
        )
    )
    return 0 if all(r[4] == "yes" and r[5] == 0 and r[6] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
