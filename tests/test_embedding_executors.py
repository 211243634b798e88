"""Executors: the local pipeline (prefetch, CUDA-style length batches) and Ray against serial."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest
from conftest import tiny_experiment

from interbias.embedding import executors as X
from interbias.embedding import tasks as embed_tasks_module
from interbias.encoders import Encoder, EncoderCard
from interbias.operators import Chain, parse_chain
from interbias.run.conductor import RunOptions, run
from interbias.utils.errors import EncoderError, RunError


class FakeEncoder(Encoder):
    """Embeds by simple waveform statistics (batch-independent); records every batch."""

    def __init__(self, label: str = "fake", poison: np.ndarray | None = None) -> None:
        card = EncoderCard(label=label, family="baseline", backend="test", embedding_dim=3)
        super().__init__(card, source="test", checkpoint_sha256="0" * 64)
        self.seen: list[list[int]] = []
        self.poison = poison

    def embed(self, waves):  # type: ignore[override]
        self.seen.append([len(w) for w in waves])
        if self.poison is not None and any(np.array_equal(w, self.poison) for w in waves):
            raise EncoderError(f"{self.label}: poisoned input")
        return super().embed(waves)

    def _embed_one(self, wave: np.ndarray) -> np.ndarray:
        return np.array([wave.mean(), wave.std(), len(wave)], dtype=np.float32)


def waves_ctx(tiny_corpus, tmp_path: Path) -> X.EmbedContext:
    from interbias.experiments.schema import load_experiment

    return X.EmbedContext(load_experiment(tiny_experiment(tmp_path)).frontend, tiny_corpus, tmp_path)


def tasks_for(manifest, encoders, n: int, chains: tuple[Chain, ...]) -> list[X.EmbedTask]:
    fps = tuple(e.fingerprint for e in encoders)
    return [
        X.EmbedTask(u.id, u.sha256 or u.id, frozenset(), tuple((c, fps) for c in chains))
        for u in list(manifest.utterances)[:n]
    ]


def test_prefetched_keeps_order_runs_ahead_on_one_thread_and_raises() -> None:
    seen: list[str] = []

    def fn(x: int) -> int:
        seen.append(threading.current_thread().name)
        if x == 7:
            raise ValueError("seven")
        return x * x

    assert list(X.prefetched(fn, range(6), depth=3)) == [x * x for x in range(6)]
    assert seen and all(name.startswith("interbias-load") for name in seen)
    with pytest.raises(ValueError, match="seven"):
        list(X.prefetched(fn, range(10), depth=2))


def test_length_batches_sorted_and_bounded() -> None:
    items = [X.Prepared(f"u{i}", "c", "c", np.zeros(n, np.float32), [], ("e",)) for i, n in enumerate([5, 3, 9, 3, 7])]
    batches = X.length_batches(items, 2)
    assert [[len(p.wave) for p in b] for b in batches] == [[3, 3], [5, 7], [9]]
    assert [p.uid for p in batches[0]] == ["u1", "u3"]  # equal lengths ordered by utterance


def test_pin_is_identity_on_cpu() -> None:
    w = np.ones(4, np.float32)
    assert X.pin(w, "cpu") is w


def test_cuda_path_batches_by_length_and_equals_cpu(tiny_corpus, tmp_path: Path, monkeypatch) -> None:
    ctx = waves_ctx(tiny_corpus, tmp_path)
    chains = (Chain(), parse_chain([{"op": "noise", "kind": "gaussian", "snr_db": 10}], where="t"))
    cpu_enc, gpu_enc = FakeEncoder(), FakeEncoder()
    tasks = tasks_for(tiny_corpus, [cpu_enc], 12, chains)
    cpu = list(X.embed_tasks(ctx, [cpu_enc], tasks, "cpu", X.ExecStats()))
    assert all(len(b) == 1 for b in cpu_enc.seen) and len(cpu_enc.seen) == 24

    monkeypatch.setattr(embed_tasks_module, "pin", lambda w, device: w.copy())  # no CUDA here: the batching logic only
    monkeypatch.setattr(embed_tasks_module, "GPU_BATCH", 5)
    monkeypatch.setattr(embed_tasks_module, "GPU_BUFFER", 10)
    stats = X.ExecStats()
    gpu = list(X.embed_tasks(ctx, [gpu_enc], tasks, "cuda", stats))
    sizes = [len(b) for b in gpu_enc.seen]
    assert max(sizes) == 5 and sum(sizes) == 24 and gpu_enc.forward_calls == 24
    assert all(b == sorted(b) for b in gpu_enc.seen)
    key = lambda r: (r.uid, r.chain_key)  # noqa: E731
    assert [key(r) for r in sorted(cpu, key=key)] == [key(r) for r in sorted(gpu, key=key)]
    for a, b in zip(sorted(cpu, key=key), sorted(gpu, key=key), strict=True):
        assert np.array_equal(a.vector, b.vector) and a.realised == b.realised
    assert stats.forward_s["fake"] > 0


def test_failed_batch_is_retried_item_by_item(tiny_corpus, tmp_path: Path, monkeypatch) -> None:
    from interbias.audio import frontend as audio

    ctx = waves_ctx(tiny_corpus, tmp_path)
    monkeypatch.setattr(embed_tasks_module, "pin", lambda w, device: w.copy())
    victim = tiny_corpus.utterances[2]
    enc = FakeEncoder(poison=audio.load(tiny_corpus.resolve(victim), ctx.frontend).samples)
    results = list(X.embed_tasks(ctx, [enc], tasks_for(tiny_corpus, [enc], 4, (Chain(),)), "cuda", X.ExecStats()))
    bad = [r for r in results if r.error]
    assert len(results) == 4 and [r.uid for r in bad] == [victim.id]
    assert bad[0].error == f"{victim.id}: fake: poisoned input" and bad[0].vector is None
    assert bad[0].realised is not None  # the chain ran; only the encoder failed
    assert len(enc.seen) == 1 + 4  # one batch of four, then each alone
    assert sum(r.vector is not None for r in results) == 3


def test_unknown_executor_and_address_without_ray(tmp_path: Path) -> None:
    with pytest.raises(RunError, match=r"unknown executor 'dask'; valid: local, ray"):
        X.make_executor("dask")
    with pytest.raises(RunError, match="--address is only used with --executor ray"):
        X.make_executor("local", address="auto")


def test_ray_unavailable_is_reported(monkeypatch) -> None:
    import builtins

    real = builtins.__import__

    def no_ray(name, *a, **k):
        if name == "ray" or name.startswith("ray."):
            raise ModuleNotFoundError("No module named 'ray'")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    with pytest.raises(RunError, match=r"--executor ray: unavailable: ModuleNotFoundError: No module named 'ray'"):
        X.make_executor("ray")


def _cold_cache(tmp: Path, session_cache: Path, name: str) -> Path:
    cache = tmp / name
    cache.mkdir()
    (cache / "corpora").symlink_to(session_cache / "corpora")  # share the built corpus, not embeddings
    return cache


@pytest.mark.slow  # 15 s: starts a Ray cluster
def test_ray_run_equals_serial_byte_for_byte(tmp_path: Path, tiny_corpus, session_cache, monkeypatch) -> None:
    ray = pytest.importorskip("ray", reason="ray is not importable here (pip install 'interbias[ray]')")
    # torch's CPU kernels round differently with 1 and 2 threads: both runs use one
    monkeypatch.setenv("INTERBIAS_THREADS", "1")
    exp = tiny_experiment(tmp_path, name="T03", seed=9, trials={"targets": 16, "min_speakers": 4})
    common = dict(experiment=str(exp), encoders=["CAM++", "mfcc-stats"], quiet=True, command=["test"])
    serial = run(RunOptions(**common, out=tmp_path / "serial", cache_dir=_cold_cache(tmp_path, session_cache, "a")))
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        dist = run(
            RunOptions(
                **common, out=tmp_path / "ray", cache_dir=_cold_cache(tmp_path, session_cache, "b"), executor="ray"
            )
        )
    finally:
        ray.shutdown()
    assert serial.run_dir.name == dist.run_dir.name
    assert dist.n_embedded == serial.n_embedded > 0 and dist.n_cached == 0
    files = sorted(
        p.relative_to(serial.run_dir)
        for p in serial.run_dir.rglob("*")
        if p.is_file() and p.name not in ("run.json", ".lock")
    )
    assert any(str(f).startswith("scores/") for f in files) and Path("results.csv") in files
    for rel in files:
        assert (dist.run_dir / rel).read_bytes() == (serial.run_dir / rel).read_bytes(), rel
    info_s = json.loads((serial.run_dir / "run.json").read_text())
    info_r = json.loads((dist.run_dir / "run.json").read_text())
    assert info_r["executor"]["name"] == "ray" and info_r["executor"]["workers"] == 2
    assert info_r["executor"]["torch_threads"] == info_s["executor"]["torch_threads"] == 1
    assert info_r["counts"]["forward_calls"] == info_s["counts"]["forward_calls"]
    assert info_r["timings"]["forward_s"] > 0
    # the driver, the only cache writer, timed its writes: a part of the embedding wall time
    for info in (info_s, info_r):
        assert 0 < info["timings"]["cache_write_s"] < info["timings"]["embed_s"]


def test_cli_rejects_unknown_executor_and_stray_address(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from interbias.cli import app

    exp = tiny_experiment(tmp_path, name="T04")
    res = CliRunner().invoke(app, ["run", str(exp), "--executor", "dask", "--out", str(tmp_path / "r")])
    assert res.exit_code == 1 and "error: unknown executor 'dask'; valid: local, ray" in res.output
    res = CliRunner().invoke(app, ["run", str(exp), "--address", "auto", "--out", str(tmp_path / "r")])
    assert res.exit_code == 1 and "error: --address is only used with --executor ray" in res.output
    assert not (tmp_path / "r").exists()  # refused before any work
