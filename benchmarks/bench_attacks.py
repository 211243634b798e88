"""Attack cost: seconds per attacked trial per encoder and method on this CPU, for a 3 s
voiced probe signal (:func:`interbias.encoders.base.probe_wave`) against the embedding of
another probe: FGSM (one gradient), PGD (``--steps`` gradients, as E24 runs it) under L∞ ε =
0.002, and NES with a query budget of ``--queries`` (the attacker's threshold is unreachable,
so every query is spent). An encoder without a differentiable path shows ``refused`` for the
white-box methods. Medians of ``--reps`` attacks after one untimed warm-up.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
from _common import fmt_s, machine, median_time, set_clock, table

from interbias.encoders import load_encoders
from interbias.encoders.attacks import AttackParams, attack
from interbias.encoders.base import probe_wave
from interbias.utils.errors import EncoderError
from interbias.utils.seeding import derive_rng


def measure(labels: list[str], steps: int, queries: int, reps: int) -> list[list[str]]:
    x = probe_wave(3.0)
    other = (0.7 * probe_wave(2.5) + 0.02 * derive_rng("bench-attacks").standard_normal(40000)).astype(np.float32)
    rows = []
    for enc in load_encoders(labels, "cpu"):
        enrol = enc.embed([other])[0]
        row = [enc.label, enc.runtime]
        for p in (
            AttackParams("fgsm", "linf", 0.002),
            AttackParams("pgd", "linf", 0.002, steps=steps),
            AttackParams("nes", "linf", 0.002, steps=10**6, nes_samples=10, queries=queries),
        ):

            def one(p: AttackParams = p, enc: object = enc, enrol: np.ndarray = enrol) -> object:
                rng = derive_rng("bench-attacks", p.method)
                return attack(x, enc, enrol, p, sample_rate_hz=16000, direction=1, threshold=2.0, rng=rng)

            try:
                seconds, _ = median_time(one, reps)
                row.append(fmt_s(seconds))
            except EncoderError:
                row.append("refused")
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--encoders", default="CAM++,GE2E,mfcc-stats")
    ap.add_argument("--steps", type=int, default=5, help="PGD steps (E24's synthetic variant: 5)")
    ap.add_argument("--queries", type=int, default=210, help="NES query budget")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--clock", default="wall", choices=["wall", "cpu"])
    ap.add_argument("--quick", action="store_true", help="one repetition, 2 PGD steps, 42 queries")
    args = ap.parse_args(argv)
    clock = set_clock(args.clock)
    steps, queries, reps = (2, 42, 1) if args.quick else (args.steps, args.queries, args.reps)
    rows = measure([e for e in args.encoders.split(",") if e], steps, queries, reps)
    print(f"machine: {machine()}\n")
    print(
        table(
            f"Attacks: {clock} per attacked trial (3 s utterance, L∞ ε = 0.002)",
            ["encoder", "runtime", "FGSM", f"PGD ({steps} steps)", f"NES ({queries} queries)"],
            rows,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
