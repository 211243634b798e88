"""benchmarks/bench_attacks.py: one row per encoder with a time per method, white-box refused
for an encoder without a differentiable path."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import bench_attacks


def test_rows_time_each_method_per_encoder() -> None:
    rows = bench_attacks.measure(["mfcc-stats"], steps=1, queries=22, reps=1)
    assert len(rows) == 1 and rows[0][:2] == ["mfcc-stats", "eager"]
    assert all(cell.endswith(" s") or cell.endswith("ms") or cell.endswith("µs") for cell in rows[0][2:])
