"""benchmarks/bench_scoring.py: both baselines score what interbias scores."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import bench_scoring as B

from interbias.run.scoring import cosine_scores


def test_baselines_match_interbias() -> None:
    X = B.embeddings(300, dim=32)
    ei, ti = B.trials(300, 5000)
    ours = cosine_scores(X, X, ei, ti)
    np.testing.assert_allclose(B.gather_dot(X, X, ei, ti, block=777), ours, atol=2 * 32 * 2.0**-24, rtol=0)
    np.testing.assert_allclose(B.per_trial_loop(X, X, ei[:300], ti[:300]), ours[:300], atol=1e-6, rtol=0)
    assert np.allclose(np.linalg.norm(X, axis=1), 1, atol=1e-6)


def test_quick_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert B.main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "gather-and-dot (vectorised)" in out and "extrapolated" in out
    assert "cross: 5 × 195" in out and "interbias (dense×" in out  # dense designs take matrix products
    assert "interbias (gather×" in out  # the scattered case gathers
