"""``--jobs N``: worker processes give the same bytes as one process; a dying worker is a retried
unit or one error naming the utterances, never a missing vector."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from conftest import tiny_experiment

from interbias.embedding import executors as X
from interbias.embedding.stage import check_answered
from interbias.operators import Chain
from interbias.run.conductor import RunOptions, run
from interbias.utils.errors import ExecutorError, RunError


def _cold_cache(tmp: Path, session_cache: Path, name: str) -> Path:
    cache = tmp / name
    cache.mkdir()
    (cache / "corpora").symlink_to(session_cache / "corpora")  # share the built corpus, not embeddings
    return cache


def _run(tmp_path: Path, session_cache: Path, name: str, jobs: int | None):
    exp = tiny_experiment(tmp_path, name="T16", seed=16, trials={"targets": 16, "min_speakers": 4})
    cache = _cold_cache(tmp_path, session_cache, name)
    opts = RunOptions(
        experiment=str(exp),
        encoders=["mfcc-stats"],
        quiet=True,
        command=["test"],
        out=tmp_path / name,
        cache_dir=cache,
        jobs=jobs,
    )
    return run(opts), cache


def _cached(cache: Path) -> list[tuple]:
    with sqlite3.connect(cache / "embeddings.sqlite") as db:
        return db.execute("SELECT * FROM embeddings ORDER BY utt_sha256, chain_fp, encoder_fp").fetchall()


def _same_outputs(a, b) -> None:
    files = sorted(
        p.relative_to(a.run_dir) for p in a.run_dir.rglob("*") if p.is_file() and p.name not in ("run.json", ".lock")
    )
    assert any(str(f).startswith("scores/") for f in files) and Path("results.csv") in files
    for rel in files:
        assert (b.run_dir / rel).read_bytes() == (a.run_dir / rel).read_bytes(), rel


@pytest.fixture(scope="module")
def serial(tmp_path_factory, tiny_corpus, session_cache):
    """One run in this process (workers take this process's thread count: equal bytes)."""
    return _run(tmp_path_factory.mktemp("serial"), session_cache, "one", 1)


def test_jobs_2_equals_one_process_byte_for_byte(tmp_path: Path, session_cache, serial) -> None:
    serial, cache_1 = serial
    pooled, cache_2 = _run(tmp_path, session_cache, "two", 2)
    assert pooled.run_dir.name == serial.run_dir.name
    assert pooled.n_embedded == serial.n_embedded > 0 and pooled.n_cached == 0
    _same_outputs(serial, pooled)
    rows = _cached(cache_1)
    assert rows and rows == _cached(cache_2)  # every cached vector and realised record, bytes
    info_1 = json.loads((serial.run_dir / "run.json").read_text())
    info_2 = json.loads((pooled.run_dir / "run.json").read_text())
    assert info_1["executor"]["jobs"] == 1 and "threads_per_job" not in info_1["executor"]
    ex = info_2["executor"]
    assert (ex["jobs"], ex["jobs_requested"], ex["threads_per_job"], ex["worker_restarts"]) == (2, 2, 1, 0)
    assert info_2["counts"]["forward_calls"] == info_1["counts"]["forward_calls"]
    assert info_1["precision"] == "fp32" and info_1["counts"]["oom_retries"] == 0
    assert info_1["counts"]["batch_fallbacks"] == info_2["counts"]["batch_fallbacks"] == 0
    assert info_1["timings"]["embedded_audio_s"] == info_2["timings"]["embedded_audio_s"] > 0


def test_a_killed_worker_is_retried_and_the_run_is_whole(tmp_path: Path, session_cache, serial, monkeypatch) -> None:
    serial, _ = serial
    # the first worker to start its second chunk SIGKILLs itself; the fresh pool's workers do not
    monkeypatch.setenv("INTERBIAS_CRASH_AT", "worker-task@2")
    monkeypatch.setenv("INTERBIAS_CRASH_ONCE", str(tmp_path / "crashed"))
    pooled, cache = _run(tmp_path, session_cache, "two", 2)
    assert (tmp_path / "crashed").is_file()
    _same_outputs(serial, pooled)
    assert len(_cached(cache)) == pooled.n_embedded == serial.n_embedded
    ex = json.loads((pooled.run_dir / "run.json").read_text())["executor"]
    assert ex["worker_restarts"] == 1


@pytest.mark.slow  # 14 s; a killed worker's retry runs in make test
def test_workers_that_keep_dying_end_in_one_error_naming_utterances(
    tmp_path: Path, tiny_corpus, session_cache, monkeypatch
) -> None:
    monkeypatch.setenv("INTERBIAS_CRASH_AT", "worker-task")  # every worker dies on its first chunk
    with pytest.raises(ExecutorError, match=r"a worker process died 3 times while embedding \S+") as err:
        _run(tmp_path, session_cache, "two", 2)
    assert "rerun with --jobs 1" in str(err.value)
    assert not list((tmp_path / "two").rglob("results.csv"))  # nothing scored on missing vectors


def test_an_executor_that_loses_items_is_an_error() -> None:
    chain = Chain()
    task = X.EmbedTask("u1", "sha", frozenset(), ((chain, ("encA", "encB")),))
    check_answered([task], {("u1", chain.fingerprint, "encA"), ("u1", chain.fingerprint, "encB")})
    check_answered([task], {("u1", chain.fingerprint, "")})  # a failure before the encoders answers both
    with pytest.raises(ExecutorError, match=r"nothing for 1 requested embedding\(s\): u1 \(clean, encoder encB\)"):
        check_answered([task], {("u1", chain.fingerprint, "encA")})


def test_jobs_are_resolved_and_checked() -> None:
    assert X.LocalExecutor(jobs=4).resolve_jobs(9) == 2  # no more processes than chunks
    assert X.LocalExecutor(jobs=1).resolve_jobs(1000) == 1
    assert X.LocalExecutor().resolve_jobs(X.AUTO_JOBS_MIN_TASKS - 1) == 1  # small runs stay in process
    assert X.LocalExecutor(device="cuda", jobs=None).resolve_jobs(X.AUTO_JOBS_MIN_TASKS - 1) == 1
    with pytest.raises(RunError, match="--jobs must be at least 1"):
        X.LocalExecutor(jobs=0)
    with pytest.raises(RunError, match="--jobs is only used with --executor local"):
        X.make_executor("ray", jobs=2)


def test_cli_refuses_bad_jobs_and_runtime_before_any_work(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from interbias.cli import app

    exp = tiny_experiment(tmp_path, name="T17")
    out = ["--out", str(tmp_path / "r"), "--encoders", "mfcc-stats"]
    res = CliRunner().invoke(app, ["run", str(exp), "--jobs", "0", *out])
    assert res.exit_code == 1 and "error: --jobs must be a whole number >= 1, got 0" in res.output
    res = CliRunner().invoke(app, ["run", str(exp), "--runtime", "tensorrt", *out])
    assert res.exit_code == 1 and "--runtime 'tensorrt': use auto, eager, onnxruntime" in res.output
    assert not (tmp_path / "r").exists()
