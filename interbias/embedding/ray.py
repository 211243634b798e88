"""The ``ray`` executor: shards of tasks on Ray actors (one per ``threads`` CPUs, or per GPU),
each holding the encoders; vectors come back to the driver. Actors use the driver's torch
thread count, so their CPU embeddings equal a serial run's byte for byte.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import Any

from interbias.embedding.tasks import (
    EmbedContext,
    EmbedResult,
    EmbedTask,
    ExecStats,
    Executor,
    embed_tasks,
    register,
    shards,
)
from interbias.encoders import Encoder
from interbias.utils.errors import EncoderError, RunError, see_docs

#: Utterances per Ray shard.
RAY_SHARD = 8


def import_ray() -> Any:
    """The ``ray`` module, or a :class:`RunError` saying why it is unavailable."""
    try:
        import ray
    except Exception as exc:
        raise RunError(
            f"--executor ray: unavailable: {type(exc).__name__}: {exc} (install with: pip install 'interbias[ray]'; "
            f"{see_docs('scaling')})"
        ) from None
    return ray


class RayWorker:
    """A Ray actor: loads the encoders once, then embeds shards of tasks."""

    def __init__(self, ctx: EmbedContext, labels: list[str], device: str, threads: int) -> None:
        self.ctx, self.device, self.problem = ctx, device, ""
        self.encoders: list[Encoder] = []
        try:
            from interbias.encoders import load_encoders

            self.encoders = load_encoders(labels, device)
        except Exception as exc:
            self.problem = f"{type(exc).__name__}: {exc}"
        import torch

        torch.set_num_threads(threads)

    def fingerprints(self) -> dict[str, Any]:
        import socket

        return {
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "problem": self.problem,
            "encoders": {e.label: e.fingerprint for e in self.encoders},
        }

    def run(self, tasks: list[EmbedTask]) -> tuple[list[EmbedResult], ExecStats]:
        stats = ExecStats()
        before = {e.label: e.forward_calls for e in self.encoders}
        out = list(embed_tasks(self.ctx, self.encoders, tasks, self.device, stats))
        for e in self.encoders:
            stats.remote_calls[e.label] = e.forward_calls - before[e.label]
        return out, stats


@register("ray")
class RayExecutor(Executor):
    """Shards of tasks on Ray actors. ``address``: as ``ray.init`` takes it (``auto``,
    ``HOST:6379``, ``ray://HOST:10001``); none starts a local Ray instance on this machine
    (or joins the one this process already started)."""

    def __init__(self, *, device: str = "cpu", address: str | None = None, jobs: int | None = None) -> None:
        super().__init__(device=device, address=address, jobs=jobs)
        import_ray()  # unavailable is an error before any work

    def embed(
        self, ctx: EmbedContext, encoders: Sequence[Encoder], tasks: Sequence[EmbedTask]
    ) -> Iterator[EmbedResult]:
        ray = import_ray()
        import torch
        from ray.util import ActorPool

        started = False
        if not ray.is_initialized():
            ray.init(address=self.address, include_dashboard=False, log_to_driver=False)
            started = True
        threads = torch.get_num_threads()
        cuda = self.device.startswith("cuda")
        work = shards(tasks, RAY_SHARD)
        capacity = ray.cluster_resources().get("GPU" if cuda else "CPU", 0)
        n = max(1, min(len(work), int(capacity // (1 if cuda else threads))))
        env = {k: v for k, v in os.environ.items() if k.startswith("INTERBIAS_")}
        actor_cls = ray.remote(num_cpus=0 if cuda else threads, num_gpus=1 if cuda else 0)(RayWorker)
        ctx_ref = ray.put(ctx)
        actors = [
            actor_cls.options(runtime_env={"env_vars": env}).remote(
                ctx_ref, [e.load_label for e in encoders], self.device, threads
            )
            for _ in range(n)
        ]
        try:
            expected = {e.label: e.fingerprint for e in encoders}
            for info in ray.get([a.fingerprints.remote() for a in actors]):
                if info["problem"]:
                    raise EncoderError(f"ray worker on {info['host']}: {info['problem']}")
                if info["encoders"] != expected:
                    raise EncoderError(
                        f"ray worker on {info['host']} loaded encoders {info['encoders']}, the driver {expected}: "
                        "install the same interbias and checkpoints on every node"
                    )
            self.stats.workers = n
            pool = ActorPool(actors)
            for results, stats in pool.map_unordered(lambda a, shard: a.run.remote(shard), work):
                self.stats.merge(stats)
                yield from results
        except ray.exceptions.RayError as exc:
            raise RunError(f"ray: a worker failed ({type(exc).__name__}: {str(exc).strip().splitlines()[-1]})") from exc
        finally:
            for a in actors:
                ray.kill(a)
            if started:
                ray.shutdown()
