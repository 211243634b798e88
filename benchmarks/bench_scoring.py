"""Cosine scoring of many trials: interbias (BLAS-bound, grouped by enrolment) against a
vectorised gather-and-dot baseline and a per-trial loop.

Embeddings: unit-norm float32, dimension 192 (CAM++). Three trial-list designs, ~10⁷ trials
over 2·10⁴ utterances where the design allows:

- ``cross``: every enrolment against every test utterance (500 × 19 500; the CN-Celeb
  evaluation design, 3.7M trials there), in list order (grouped by enrolment);
- ``random``: enrolment and test drawn uniformly from one pool of 2·10⁴ (VoxCeleb1-E/H-like),
  so 2.5 % of all pairs are trials: a dense product computes 40 dot products per trial;
- ``scattered``: 10⁶ trials over 2·10⁵ utterances (few trials per enrolment block: the strategy
  falls back to gathering).

The gather-and-dot baseline is interbias's previous implementation: gather both rows of 2¹⁶
trials at a time, ``einsum`` them row-wise. The per-trial loop is the usual peer script
(``np.dot(a, b) / (‖a‖·‖b‖)`` per trial in Python); it is timed on a sample and extrapolated.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from typing import Any

import numpy as np
from _common import fmt_s, machine, median_time, now, set_clock, table

from interbias.run.scoring import cosine_scores
from interbias.utils.seeding import derive_rng

DIM = 192


def embeddings(n: int, dim: int = DIM, *, name: str = "emb") -> np.ndarray:
    x = derive_rng("bench-scoring", name, n, dim).normal(size=(n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def trials(n_utts: int, n_trials: int) -> tuple[np.ndarray, np.ndarray]:
    """Uniformly random (enrol, test) pairs from one pool of ``n_utts``."""
    rng = derive_rng("bench-scoring", "trials", n_utts, n_trials)
    return rng.integers(0, n_utts, n_trials), rng.integers(0, n_utts, n_trials)


def design(name: str, scale: float = 1.0) -> tuple[str, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(label, enrol embeddings, test embeddings, enrol index, test index) of a design."""
    if name == "cross":
        n_e, n_t = max(2, int(500 * scale)), max(2, int(19_500 * scale))
        ei = np.repeat(np.arange(n_e), n_t)
        ti = np.tile(np.arange(n_t), n_e)
        return f"cross: {n_e} × {n_t}", embeddings(n_e, name="enrol"), embeddings(n_t, name="test"), ei, ti
    if name == "random":
        n_u, n = int(20_000 * scale), int(10_000_000 * scale)
        X = embeddings(n_u)
        ei, ti = trials(n_u, n)
        return f"random: {n:.0e} over {n_u:.0e}", X, X, ei, ti
    if name == "scattered":
        n_u, n = int(200_000 * scale), int(1_000_000 * scale)
        X = embeddings(n_u)
        ei, ti = trials(n_u, n)
        return f"scattered: {n:.0e} over {n_u:.0e}", X, X, ei, ti
    raise SystemExit(f"unknown design {name!r}; valid: cross, random, scattered")


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


def scenario(name: str, reps: int, loop_sample: int, scale: float = 1.0) -> list[list[Any]]:
    label, E, T, ei, ti = design(name, scale)
    n = len(ei)
    strategies: Counter[str] = Counter()
    cosine_scores(E, T, ei[:1000], ti[:1000])
    t_ib, ours = median_time(lambda: cosine_scores(E, T, ei, ti), reps, warmup=False)
    cosine_scores(E, T, ei, ti, strategies=strategies)
    t_gd, base = median_time(lambda: gather_dot(E, T, ei, ti), reps, warmup=False)
    k = min(loop_sample, n)
    sample = derive_rng("bench-scoring", "loop-sample", n).choice(n, size=k, replace=False)
    t = now()
    loop = per_trial_loop(E, T, ei[sample], ti[sample])
    t_loop = (now() - t) * n / k
    strategy = ", ".join(f"{p}×{c}" for p, c in sorted(strategies.items()))
    return [
        [label, f"interbias ({strategy})", fmt_s(t_ib), f"{n / t_ib:.2e}", "1.0", "—"],
        [
            "",
            "gather-and-dot (vectorised)",
            fmt_s(t_gd),
            f"{n / t_gd:.2e}",
            f"{t_gd / t_ib:.1f}",
            f"{np.abs(base - ours).max():.1e}",
        ],
        [
            "",
            f"per-trial loop (timed on {k:.0e}, extrapolated)",
            fmt_s(t_loop),
            f"{n / t_loop:.2e}",
            f"{t_loop / t_ib:.0f}",
            f"{np.abs(loop - ours[sample]).max():.1e}",
        ],
    ]


def run(names: list[str], reps: int, loop_sample: int, clock: str = "wall seconds", scale: float = 1.0) -> str:
    rows = [r for name in names for r in scenario(name, reps, loop_sample, scale)]
    return table(
        f"Scoring: cosine, dim {DIM}, float32 (median of {reps}, {clock})",
        ["trials", "implementation", "time", "trials/s", "× interbias", "max |Δscore|"],
        rows,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("designs", nargs="*", default=["cross", "random", "scattered"])
    ap.add_argument("--quick", action="store_true", help="1 % of the sizes, for a smoke test")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--clock", default="wall", help="wall, or cpu (CPU seconds, one thread)")
    args = ap.parse_args(argv)
    clock = set_clock(args.clock)
    if args.quick:
        out = run(args.designs, reps=1, loop_sample=1_000, clock=clock, scale=0.01)
    else:
        out = run(args.designs, reps=args.reps, loop_sample=20_000, clock=clock)
    print(f"machine: {machine()}\n")
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
