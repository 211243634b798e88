"""benchmarks/bench_metrics.py: its peers compute what the table says they compute."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import bench_metrics as B


@pytest.mark.parametrize("n", [200, 2001])
def test_peers_agree_with_interbias_on_the_bench_inputs(n: int) -> None:
    s, lab = B.scores(n)
    assert lab.sum() == n // 2 and np.array_equal(s, s.astype(np.float32).astype(np.float64))
    ib = B.interbias_all(s, lab)
    sk = B.sklearn_all(s, lab)
    assert sk["eer"] == pytest.approx(ib["eer"], abs=1e-9)  # brentq's tolerance
    assert sk["min_dcf"] == pytest.approx(ib["min_dcf"], abs=1e-12)
    assert sk["auc"] == pytest.approx(ib["auc"], abs=1e-12)
    if B.speechbrain_unavailable():
        pytest.skip(f"speechbrain does not import here: {B.speechbrain_unavailable()}")
    sb = B.speechbrain_all(s, lab, with_min_dcf=True)
    # SpeechBrain's EER is the nearest-point kind; it computes in float32
    assert sb["eer"] == pytest.approx(ib["eer_legacy"], abs=1e-6)
    assert sb["min_dcf"] == pytest.approx(ib["min_dcf"], abs=1e-5)


def test_speechbrain_min_dcf_memory_estimate() -> None:
    assert B.sb_min_dcf_bytes(10_000) == 5 * 10**8
    assert B.sb_min_dcf_bytes(100_000) > 32 * 2**30  # why 1e5 runs EER only


def test_quick_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert B.main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "sklearn roc_curve+brentq" in out and "machine:" in out
    sb_missing = B.speechbrain_unavailable()
    assert ("speechbrain EER+minDCF" in out) != bool(sb_missing)
    assert (f"speechbrain: unavailable ({sb_missing})" in out) == bool(sb_missing)
    assert out.count("interbias (EER+minDCF+AUC)") == 3
