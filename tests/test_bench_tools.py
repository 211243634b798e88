"""benchmarks/: run_all discovery, the embedding-count and end-to-end scripts on the tiny
corpus, and the CPU-side logic of the GPU check (its CUDA part is not run here)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import tiny_experiment

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCH))

import _common  # noqa: E402
import bench_e2e  # noqa: E402
import bench_embedding  # noqa: E402
import gpu_check  # noqa: E402
import run_all  # noqa: E402


def test_run_all_finds_every_bench_script_and_rejects_unknown_names() -> None:
    names = [p.name for p in run_all.scripts()]
    assert {"bench_metrics.py", "bench_scoring.py", "bench_embedding.py", "bench_e2e.py"} <= set(names)
    assert {"bench_driver.py", "bench_prepare.py"} <= set(names)  # make bench runs them too
    assert names == sorted(names)
    assert [p.name for p in run_all.scripts(["scoring", "bench_metrics"])] == ["bench_scoring.py", "bench_metrics.py"]
    with pytest.raises(SystemExit, match=r"unknown benchmark\(s\) nope; valid: .*metrics"):
        run_all.scripts(["nope"])


def test_table_and_median_time() -> None:
    out = _common.table("T", ["a", "bb"], [[1, "x"], ["long", 2]])
    assert out.splitlines()[2:] == ["| a    | bb |", "|------|----|", "| 1    | x  |", "| long | 2  |"]
    calls = []
    t, result = _common.median_time(lambda: calls.append(1) or len(calls), 3)
    assert len(calls) == 4 and result == 4 and t >= 0  # one warm-up call, three timed


def test_embedding_counts_on_tiny_experiment(tmp_path: Path, tiny_corpus, session_cache) -> None:
    exp = tiny_experiment(tmp_path, name="T05", seed=3)
    rows = bench_embedding.measure(str(exp), None, ["mfcc-stats"], None)
    (_, label, need, cold, equal, warm_new, warm_same) = rows[0]
    assert label == "mfcc-stats" and need > 0 and cold == need and equal == "yes"
    assert warm_new == 0 and warm_same == 0


def test_e2e_split_arithmetic() -> None:
    info = {
        "timings": {
            "forward_s": 6.0,
            "forward_cpu_s": 5.0,
            "total_s": 9.0,
            "load_encoders_s": 1.0,
            "corpus_s": 0.5,
            "trials_s": 0.25,
            "embed_s": 7.0,
            "score_s": 0.25,
        },
        "executor": {"torch_threads": 1},
    }
    rows = {r[0].strip(): r for r in bench_e2e.split(10.0, info, 8.0)}
    assert rows["process"][1:] == ["10.00 s", "100 %", "8.00 s", "100 %"]
    assert rows["encoder forward (inside Encoder.embed)"][2:] == ["60.0 %", "5.00 s", "62.5 %"]
    assert rows["harness overhead (process − forward)"][1:] == ["4.00 s", "40.0 %", "3.00 s", "37.5 %"]
    assert rows["start-up and imports (wall − run total)"][1] == "1.00 s"
    info["executor"]["torch_threads"] = 2  # the calling thread's CPU time is then not all of it
    rows = {r[0].strip(): r for r in bench_e2e.split(10.0, info, 8.0)}
    assert rows["encoder forward (inside Encoder.embed)"][3:] == ["— (needs --threads 1)", "—"]
    assert rows["embedding stage minus forward (decode, operators, cache)"][1] == "1.00 s"


def test_e2e_runs_the_cli_in_a_fresh_process(tmp_path: Path, tiny_corpus, session_cache) -> None:
    exp = tiny_experiment(tmp_path, name="T06", seed=4)
    rows, info = bench_e2e.measure(str(exp), None, "mfcc-stats", 10, threads=1)
    assert info["counts"]["embedded"] > 0 and info["timings"]["forward_s"] > 0
    assert info["executor"]["torch_threads"] == 1 and 0 < info["timings"]["forward_cpu_s"]
    wall = float(rows[0][1].split()[0]) if rows[0][1].endswith(" s") else float(rows[0][1].split()[0]) / 1000
    assert wall >= info["timings"]["total_s"] and rows[0][3] != "—"


def test_gpu_check_distances_and_verdict() -> None:
    a = np.array([[1.0, 0.0], [0.6, 0.8], [1.0, 1.0]])
    b = np.array([[1.0, 0.0], [0.8, 0.6], [2.0, 2.0]])
    np.testing.assert_allclose(gpu_check.cosine_distances(a, b), [0.0, 1 - 0.96, 0.0], atol=1e-15)
    assert gpu_check.verdict(np.array([0.0, 1e-4])) == "PASS"
    assert gpu_check.verdict(np.array([0.0, 1.01e-4])) == "FAIL"
    assert gpu_check.times_real_time(120.0, 2.0) == 60.0
    with pytest.raises(ValueError, match="shapes differ"):
        gpu_check.cosine_distances(a, b[:2])


def test_gpu_check_runs_its_logic_on_cpu(tiny_corpus, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        gpu_check.main(["--device", "cpu", "--encoder", "mfcc-stats", "--n", "6", "--batch", "4", "--reps", "1"]) == 0
    )
    out = capsys.readouterr().out
    assert re.search(r"\| agreement \(max ≤ 1e-05\) +\| PASS +\|", out) and "| 6 / " in out
    assert re.search(r"\| network calls per pass / utterances per call +\| 2 / 3.00 +\|", out)
    assert re.search(r"\| batching \(≥ 0.75 × 4 per call\) +\| PASS +\|", out)


def test_gpu_check_without_cuda_is_not_run(capsys: pytest.CaptureFixture[str]) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present: the check would run")
    assert gpu_check.main(["--device", "cuda"]) == 2
    assert "gpu_check: not run on cuda: CUDA is not available" in capsys.readouterr().err


def test_cpu_clock_limits_threads_and_unknown_clock_is_an_error() -> None:
    import threadpoolctl
    import torch

    threads = torch.get_num_threads()
    blas = max(i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas")
    try:
        assert _common.set_clock("cpu") == "CPU seconds, one thread"
        assert torch.get_num_threads() == 1
        assert all(i["num_threads"] == 1 for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas")
        t0 = _common.now()
        sum(range(200_000))
        assert _common.now() > t0
    finally:
        _common.set_clock("wall")
        torch.set_num_threads(threads)
        threadpoolctl.threadpool_limits(blas, user_api="blas")
    with pytest.raises(SystemExit, match="unknown clock 'gpu'; valid: wall, cpu"):
        _common.set_clock("gpu")


def test_throughput_rows_per_encoder_runtime_and_threads() -> None:
    import bench_throughput

    from interbias.encoders import probe_wave

    waves = [probe_wave(1.0), probe_wave(2.0)]
    rows = bench_throughput.measure(["mfcc-stats"], ["eager", "onnxruntime", "auto"], [1, 2], waves, 1)
    # mfcc-stats offers eager only: one row per thread count, 3 s of audio each
    assert [(r[0], r[1], r[2]) for r in rows] == [("mfcc-stats", "eager", 1), ("mfcc-stats", "eager", 2)]
    assert all(r[4].endswith("×") and float(r[4][:-1]) > 0 for r in rows)


def test_figures_file_names_date_commit_machine_and_nests_each_scripts_tables() -> None:
    import datetime as dt

    out = run_all.figures(
        [("bench_a.py", 12.4, 0, "machine: x\n\n### T\n\n| a |\n|---|\n| 1 |\n"), ("bench_b.py", 3.0, 1, "### U\n")],
        dt.datetime(2026, 12, 1, tzinfo=dt.UTC),
        125.0,
    )
    lines = out.splitlines()
    assert lines[0] == run_all.GENERATED
    assert lines[2].startswith("Measured by `make bench` on 2026-12-01 (UTC), commit ")
    assert "in one run of 2 min, on: " in lines[2]
    assert "### `bench_a.py` (12 s)" in lines and "#### T" in lines and "| 1 |" in lines
    assert "### `bench_b.py` (3 s, exit 1: its figures are incomplete)" in lines and "#### U" in lines


def test_run_all_writes_figures_only_from_a_whole_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "bench_fake.py"
    script.write_text("print('### Fake')\n")
    monkeypatch.setattr(run_all, "scripts", lambda only=None: [script])
    monkeypatch.setattr(run_all, "run_script", lambda cmd, env: (0, "### Fake\n\n| x |\n"))
    target = tmp_path / "figures.md"
    assert run_all.main(["--write", str(target), "--quick"]) == 0
    assert not target.exists()  # a --quick run is partial: nothing written
    assert run_all.main(["--write", str(target)]) == 0
    text = target.read_text()
    assert text.startswith(run_all.GENERATED) and "### `bench_fake.py`" in text and "#### Fake" in text


def test_estimate_row_sets_validates_estimate_beside_the_runs_own_time(tmp_path: Path) -> None:
    from interbias.run.validate import validate_file

    info = {"timings": {"total_s": 120.0, "corpus_s": 47.0}, "counts": {"embedded": 5976}}
    row = bench_e2e.estimate_row("E16", "synthetic", "CAM++,GE2E,mfcc-stats", info, tmp_path)
    est = validate_file(
        BENCH.parent / "conditions" / "E16.yaml",
        encoders=["CAM++", "GE2E", "mfcc-stats"],
        corpus="synthetic",
        cache=tmp_path,
    ).estimates[0]
    assert est.seconds is not None
    assert row[1:] == [est.n_embeddings, 5976, _common.fmt_s(est.seconds), "73.00 s", f"{73.0 / est.seconds:.2f}×"]


def test_a_pipe_inside_a_table_cell_is_escaped() -> None:
    out = _common.table("T", ["max |Δ|"], [["a|b"]])
    assert out.splitlines()[2] == "| max \\|Δ\\| |" and out.splitlines()[4] == "| a\\|b      |"


def test_gpu_plan_replays_the_drivers_flushes_and_counts_padding_from_the_shapes() -> None:
    import gpu_plan

    from interbias.encoders import Encoder, EncoderCard

    class Bucketed(Encoder):
        supports_masks = True
        frame_buckets = True

        def frame_count(self, n_samples: int) -> int:
            return n_samples // 160

    card = EncoderCard(label="b", family="baseline", backend="test", embedding_dim=3)
    enc = Bucketed(card, source="test", checkpoint_sha256="0" * 64)
    enc.set_batching("always")
    rng = np.random.default_rng(7)
    lengths = [int(n) for n in rng.integers(16_000, 80_000, 3000)]
    runs = {early: gpu_plan.replay(enc, lengths, early=early) for early in (False, True)}
    for got in runs.values():
        shapes = {tuple(map(int, k.split("x"))): c for k, c in got["shapes"].items()}
        assert got["waveforms"] == 3000 and sum(n * c for (n, _), c in shapes.items()) == 3000
        assert got["network_batches"] == sum(shapes.values()) and got["distinct_shapes"] == len(shapes) <= 16
        all_frames = sum(n * f * c for (n, f), c in shapes.items())
        valid = sum(n // 160 for n in lengths)
        assert got["padding_share"] == pytest.approx((all_frames - valid) / all_frames)
        assert all(n * f <= enc.max_batch_frames for n, f in shapes)
    late, early = runs[False], runs[True]
    assert late["first_batch_after"] == 256 and late["padding_share"] < 0.1  # the buckets keep padding low
    # the first batch, sent as soon as it is full, is padded to its longest row: one batch's cost
    assert early["first_batch_after"] < 256 and early["padding_share"] - late["padding_share"] < 0.015
