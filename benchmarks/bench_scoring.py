"""Cosine scoring of many trials: interbias (BLAS-bound, grouped by enrolment) against a
vectorised gather-and-dot baseline and a per-trial loop.

Embeddings: unit-norm float32, dimension 192 (CAM++). Trials: enrolment and test utterances
drawn uniformly from one pool (as in VoxCeleb1-E/H lists). The gather-and-dot baseline is
interbias's previous implementation: gather both rows of 2¹⁶ trials at a time, ``einsum``
them row-wise. The per-trial loop is the usual peer script (``np.dot(a, b) / (‖a‖·‖b‖)``
per trial in Python); it is timed on a sample and extrapolated (marked so).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from typing import Any

import numpy as np
from _common import fmt_s, machine, median_time, now, set_clock, table

from interbias.scoring import cosine_scores
from interbias.seeding import derive_rng

DIM = 192


def embeddings(n: int, dim: int = DIM) -> np.ndarray:
    x = derive_rng("bench-scoring", "emb", n, dim).normal(size=(n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def trials(n_utts: int, n_trials: int) -> tuple[np.ndarray, np.ndarray]:
    rng = derive_rng("bench-scoring", "trials", n_utts, n_trials)
    return rng.integers(0, n_utts, n_trials), rng.integers(0, n_utts, n_trials)


def gather_dot(enrol: np.ndarray, test: np.ndarray, ei: np.ndarray, ti: np.ndarray, block: int = 1 << 16) -> np.ndarray:
    """The vectorised baseline: gather both rows of a block of trials, dot them row-wise."""
    out = np.empty(len(ei), dtype=np.float64)
    for start in range(0, len(ei), block):
        sl = slice(start, start + block)
        out[sl] = np.einsum("ij,ij->i", enrol[ei[sl]], test[ti[sl]])
    return out


def per_trial_loop(enrol: np.ndarray, test: np.ndarray, ei: np.ndarray, ti: np.ndarray) -> np.ndarray:
    """The peer script: one cosine per trial in Python."""
    out = np.empty(len(ei))
    for k in range(len(ei)):
        a, b = enrol[ei[k]], test[ti[k]]
        out[k] = np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b))
    return out


def scenario(n_utts: int, n_trials: int, reps: int, loop_sample: int) -> list[list[Any]]:
    X = embeddings(n_utts)
    ei, ti = trials(n_utts, n_trials)
    plans: Counter[str] = Counter()
    cosine_scores(X, X, ei[:1000], ti[:1000])
    t_ib, ours = median_time(lambda: cosine_scores(X, X, ei, ti), reps, warmup=False)
    cosine_scores(X, X, ei, ti, plans=plans)
    t_gd, base = median_time(lambda: gather_dot(X, X, ei, ti), reps, warmup=False)
    k = min(loop_sample, n_trials)
    t = now()
    loop = per_trial_loop(X, X, ei[:k], ti[:k])
    t_loop = (now() - t) * n_trials / k
    label = f"{n_trials:.0e} trials / {n_utts:.0e} utts"
    plan = ", ".join(f"{p}×{c}" for p, c in sorted(plans.items()))
    return [
        [label, f"interbias ({plan})", fmt_s(t_ib), f"{n_trials / t_ib:.2e}", "1.0", "—"],
        [
            "",
            "gather-and-dot (vectorised)",
            fmt_s(t_gd),
            f"{n_trials / t_gd:.2e}",
            f"{t_gd / t_ib:.1f}",
            f"{np.abs(base - ours).max():.1e}",
        ],
        [
            "",
            f"per-trial loop (timed on {k:.0e}, extrapolated)",
            fmt_s(t_loop),
            f"{n_trials / t_loop:.2e}",
            f"{t_loop / t_ib:.0f}",
            f"{np.abs(loop - ours[:k]).max():.1e}",
        ],
    ]


def run(cases: list[tuple[int, int]], reps: int, loop_sample: int, clock: str = "wall seconds") -> str:
    rows = [r for n_utts, n_trials in cases for r in scenario(n_utts, n_trials, reps, loop_sample)]
    return table(
        f"Scoring: cosine, dim {DIM}, float32 (median of {reps}, {clock})",
        ["trials", "implementation", "time", "trials/s", "× interbias", "max |Δscore|"],
        rows,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes, for a smoke test")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--clock", default="wall", help="wall, or cpu (CPU seconds, one thread)")
    args = ap.parse_args(argv)
    clock = set_clock(args.clock)
    if args.quick:
        out = run([(2_000, 100_000), (50_000, 20_000)], reps=1, loop_sample=2_000, clock=clock)
    else:
        # the case, then a scattered one (few trials per enrolment block: gather wins)
        out = run([(20_000, 10_000_000), (200_000, 1_000_000)], reps=args.reps, loop_sample=20_000, clock=clock)
    print(f"machine: {machine()}\n")
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
