"""benchmarks/gpu_e2e.py (``gpu_check.py --e2e``): run lists, figures from run.json, a cold
cache that shares everything but the embeddings, and a timed run with a stand-in CLI."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCH))

import gpu_check  # noqa: E402
import gpu_e2e  # noqa: E402


def test_runs_parse_and_a_bad_one_is_refused() -> None:
    assert gpu_e2e.parse_runs(gpu_e2e.RUNS) == [("E16", "CAM++,mfcc-stats"), ("E14", "CAM++")]
    assert gpu_e2e.parse_runs(" E1:a ; ") == [("E1", "a")]
    with pytest.raises(SystemExit, match="'E16' is not EXPERIMENT:ENCODER"):
        gpu_e2e.parse_runs("E16")


def test_times_real_time_come_from_run_json() -> None:
    row = gpu_e2e.E2E("E14", "CAM++", "cpu", 0, process_s=50.0)
    info = {
        "timings": {"embedded_audio_s": 1000.0, "embed_s": 4.0, "total_s": 120.0, "corpus_s": 100.0},
        "counts": {"embedded": 300, "oom_retries": 1},
        "executor": {"jobs": 3},
    }
    gpu_e2e.from_run_json(row, info)
    assert (row.x_embed, row.x_run, row.x_process) == (250.0, 50.0, 20.0)
    assert (row.jobs, row.embedded, row.oom_retries) == (3, 300, 1)
    empty = gpu_e2e.from_run_json(gpu_e2e.E2E("E16", "x", "cpu", 1, 3.0), {})
    assert empty.x_embed is None and empty.audio_s is None
    text = gpu_e2e.report([row, empty])
    assert "| E14 " in text and "| 250 " in text and "| —" in text


def test_cold_cache_links_all_but_the_embeddings(tmp_path: Path, monkeypatch) -> None:
    usual = tmp_path / "usual"
    (usual / "onnx").mkdir(parents=True)
    (usual / "embeddings.sqlite").write_bytes(b"x")
    monkeypatch.setenv("INTERBIAS_CACHE", str(usual))
    cache = gpu_e2e.cold_cache(tmp_path / "run")
    assert sorted(p.name for p in cache.iterdir()) == ["corpora", "onnx"]
    assert (cache / "corpora").resolve() == (usual / "corpora").resolve() and (cache / "onnx").is_symlink()


def test_a_run_is_timed_and_read_back(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("INTERBIAS_CACHE", str(tmp_path / "usual"))
    # a stand-in for `interbias run … --out DIR`: writes DIR/<run>/run.json and exits 0
    fake = (
        "import json, pathlib, sys; a = sys.argv; out = pathlib.Path(a[a.index('--out') + 1]) / 'r1'; "
        "out.mkdir(parents=True); assert '--jobs' in a and a[a.index('--device') + 1] == 'cpu'; "
        "t = {'embedded_audio_s': 600.0, 'embed_s': 2.0, 'total_s': 6.0}; "
        "out.joinpath('run.json').write_text(json.dumps({'timings': t, 'counts': {'embedded': 9}}))"
    )
    monkeypatch.setattr(gpu_e2e, "IB", [sys.executable, "-c", fake])
    args = argparse.Namespace(device="cpu", precision="fp32", jobs=2, max_trials=None, timeout=60.0)
    row = gpu_e2e.time_run("E14", "CAM++", args, tmp_path / "w")
    assert row.rc == 0 and (row.x_embed, row.x_run, row.embedded) == (300.0, 100.0, 9)
    monkeypatch.setattr(gpu_e2e, "IB", [sys.executable, "-c", "import sys; print('boom'); sys.exit(3)"])
    failed = gpu_e2e.time_run("E16", "CAM++", args, tmp_path / "w2")
    assert failed.rc == 3 and failed.x_embed is None and "boom" in failed.tail


def test_gpu_check_hands_e2e_to_the_end_to_end_script(monkeypatch) -> None:
    seen = []
    monkeypatch.setattr(gpu_e2e, "main", lambda argv: seen.append(argv) or 7)
    assert gpu_check.main(["--e2e", "--device", "cpu"]) == 7 and seen == [["--device", "cpu"]]
