"""benchmarks/bench_scale.py and bench_cache.py: the growth exponent, the pre-flight refusal,
the fake vectors, and one tiny size through every stage (slow)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCH))

import bench_cache  # noqa: E402
import bench_scale  # noqa: E402


def test_exponent_is_the_log_log_slope() -> None:
    xs = [1e3, 1e4, 1e5]
    assert bench_scale.exponent([(x, 3e-4 * x**1.5) for x in xs]) == pytest.approx(1.5)
    assert bench_scale.exponent([(1e3, 2.0)]) is None


def test_preflight_refuses_an_unwritable_folder(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(SystemExit, match="cannot write"):
        bench_scale.preflight(blocker / "sub", [(100, 1000)])


def test_preflight_refuses_a_size_that_does_not_fit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit, match="not started"):
        bench_scale.preflight(tmp_path, [(10**9, 10**12)])
    assert "needs ~" in capsys.readouterr().out


def test_fake_vectors_are_unit_deterministic_and_not_kept() -> None:
    a, b = bench_scale.FakeVectors(), bench_scale.FakeVectors()
    key = ("spk000001/calm/3", "chain", "enc")
    v = a[key]
    assert v.dtype == np.float32 and np.linalg.norm(v) == pytest.approx(1, abs=1e-6)
    assert np.array_equal(v, b[key]) and key in a and len(a) == 0
    same, other = a[("spk000001/sad/0", "chain", "enc")], a[("spk000002/sad/0", "chain", "enc")]
    assert float(v @ same) > float(v @ other)  # one speaker's vectors are closer


def test_cache_keys_are_distinct_and_realistic() -> None:
    keys = {bench_cache.key(i) for i in range(700)}
    assert len(keys) == 700 and all(len(k[0]) == 64 for k in keys)


@pytest.mark.slow
def test_one_tiny_size_runs_every_stage(tmp_path: Path) -> None:
    result = bench_scale.run_size(tmp_path, 60, 600, 50, keep=False)
    assert not result["failed"], result["failed"]
    stages = [n for names in bench_scale.GROUPS.values() for n in names]
    assert set(result["stages"]) == set(stages)
    assert result["cache"]["vectors"] > 0 and result["n_trials"] > 0


def test_pipeline_line_sums_run_and_report_without_the_fake_encoder() -> None:
    stages = {n: {"s": 2.0, "cpu": 1.0, "rss_mb": 1.0} for n in bench_scale.PIPELINE}
    stages["scoring"] = {"s": 10.0, "cpu": 9.0, "rss_mb": 1.0, "fake_s": 4.0}
    stages["analyze"] = {"s": 99.0, "cpu": 99.0, "rss_mb": 1.0}  # not part of run + report
    r = {"stages": stages}
    assert bench_scale.pipeline_cell(r) == f"{2 * 5 + 10 - 4:.0f} / {5 + 9 - 4:.0f} s"
    assert bench_scale.fake_cell(r) == "4.0 s"
    del stages["report"]
    assert bench_scale.pipeline_cell(r) == ""


def test_memory_estimate_covers_the_measured_voxceleb1_h_peak() -> None:
    """The results stage peaked at 4.0 GB at VoxCeleb1-H (550,896 eval trials; docs/guide/scaling.md)."""
    assert bench_scale.needs(*bench_scale.VOXCELEB1_H)[1] >= 4.0
