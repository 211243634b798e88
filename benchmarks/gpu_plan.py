"""``gpu_check.py --plan EXP``: what a run of EXP would ask of the device, measured on the run's
own batching without embedding the run.

From the lengths of every waveform the run embeds (``run_plan.py``: the experiment's trials
drawn, its (utterance, chain) items listed, lengths from the manifest's durations, in the order
the run's driver gathers them, task by task), the driver's flushes are replayed (the first
network batch as soon as it is full, ``first_group``; the first ``FIRST_BUFFER`` waveforms, then
``GPU_BUFFER`` at a time, ``ready_groups``: a bucket's short last batch held for the next flush):
``first_batch_after`` (waveforms come before the first batch), ``distinct_shapes`` (network batch shapes, items × padded frames),
``padding_share`` (padded / all frames) and ``utterances_per_call``. ``ops_per_forward`` counts
the operators torch.profiler records in one masked CAM++ forward of 32 utterances of the plan's
lengths (fbank excluded), ``ops_unmasked`` the wheel's unmasked module on the same batch padded
to equal length. A sample of the corpus's utterances is embedded in the run's batches and one
at a time on the CPU (the reference): ``max_cosine_distance``, and vectors/s and × real time of
the batched path, cold (a first pass: every shape new) and warm (the same again); the first
``--bf16-sample`` of them in bfloat16 too (``max_cosine_distance_bf16``).

    python benchmarks/gpu_check.py --device cpu --plan E14 --json
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from typing import Any

import numpy as np

#: Utterances per network forward whose operators are counted.
OPS_ITEMS = 32


def parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--plan", default="E14", help="the experiment whose run is replayed")
    ap.add_argument("--corpus", default="synthetic")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--encoder", default="CAM++")
    ap.add_argument("--sample", type=int, default=48, help="utterances embedded for agreement and speed")
    ap.add_argument("--bf16-sample", type=int, default=8, help="of those, embedded in bf16 too")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    return ap.parse_args(argv)


def replay(enc: Any, lengths: list[int], tasks: list[int] | None = None, *, early: bool = True) -> dict[str, Any]:
    """The driver's flushes over ``lengths`` (run order; ``tasks``: waveforms per task, the
    driver's step, one each when not given; ``early``: as ``tasks.drive``'s): shapes, padding,
    batches, calls, and the waveforms that had come when the first batch went."""
    from interbias.embedding import tasks as T
    from interbias.encoders.batching import frame_bucket

    shapes: dict[tuple[int, int], int] = {}
    valid = padded = 0
    pending: list[int] = []
    limit, arrived, first_batch_at = min(T.FIRST_BUFFER, T.GPU_BUFFER), 0, 0

    def flush(mode: str) -> list[int]:
        nonlocal valid, padded, first_batch_at
        mine = sorted(pending, key=lambda i: (lengths[i], i))
        mine_lengths = [lengths[i] for i in mine]
        if mode == "first":
            groups, held = T.first_group(enc, mine_lengths)
        else:
            groups, held = T.ready_groups(enc, mine_lengths, final=mode == "final")
        for g in groups:
            frames = [enc.frame_count(lengths[mine[j]]) for j in g]
            bucket = frame_bucket(max(frames))
            shapes[(len(g), bucket)] = shapes.get((len(g), bucket), 0) + 1
            valid += sum(frames)
            padded += len(g) * bucket - sum(frames)
        first_batch_at = first_batch_at or (arrived if groups else 0)
        return [mine[j] for j in held]

    for n in tasks or [1] * len(lengths):
        pending.extend(range(arrived, arrived + n))
        arrived += n
        if len(pending) >= limit:
            pending, limit = flush("buffer"), T.GPU_BUFFER
        elif early and not first_batch_at:
            pending = flush("first")
    flush("final")
    n_batches = sum(shapes.values())
    return {
        "waveforms": len(lengths),
        "audio_s": sum(lengths) / 16000,
        "network_batches": n_batches,
        "distinct_shapes": len(shapes),
        "shapes": {f"{n}x{f}": c for (n, f), c in sorted(shapes.items())},
        "padding_share": padded / max(valid + padded, 1),
        "utterances_per_call": len(lengths) / max(n_batches, 1),
        "first_batch_after": first_batch_at,
    }


def count_ops(fn: Any) -> int:
    """Operators torch.profiler records while ``fn()`` runs (every recorded op, nested included)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    with torch.inference_mode(), profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    return len(prof.events())


def forward_ops(enc: Any, lengths: list[int]) -> tuple[int, int]:
    """(masked forward, the wheel's unmasked module) operator counts on :data:`OPS_ITEMS`
    waveforms of the plan's median lengths."""
    mid = len(lengths) // 2
    chosen = sorted(lengths)[mid : mid + OPS_ITEMS]
    rng = np.random.default_rng(0)
    waves = [rng.standard_normal(n).astype(np.float32) * 0.1 for n in chosen]
    feats, frames = enc.batch_features(waves)
    masked = count_ops(lambda: enc.masked(feats, frames))
    unmasked = count_ops(lambda: enc.model(feats))
    return masked, unmasked


def sample_waves(plan: Any, n: int) -> list[np.ndarray]:
    """``n`` of the plan's utterances, spread over its sorted ids, through the run's front end."""
    from interbias.audio import frontend as audio

    uids = sorted({u for u, _ in plan.items})
    by_id = plan.manifest.by_id()
    picked = uids[:: max(1, len(uids) // n)][:n]
    return [audio.load(plan.manifest.resolve(by_id[u]), plan.exp.frontend, vad=True).samples for u in picked]


def agreement_and_speed(args: argparse.Namespace, plan: Any) -> dict[str, Any]:
    from interbias.encoders import load_encoder, restore_threads

    waves = sample_waves(plan, args.sample)
    audio_s = sum(len(w) for w in waves) / 16000
    cpu = load_encoder(args.encoder, device="cpu")
    restore_threads()
    ref = cpu.embed(waves)
    dev = load_encoder(args.encoder, device=args.device, options={"batch": "always"})
    out: dict[str, Any] = {"sample_utterances": len(waves), "sample_audio_s": audio_s}
    for phase in ("cold", "warm"):
        t = time.perf_counter()
        got = dev.embed(waves)
        if args.device.startswith("cuda"):
            import torch

            torch.cuda.synchronize()
        wall = time.perf_counter() - t
        out[f"vectors_per_s_{phase}"] = len(waves) / wall
        out[f"x_real_time_{phase}"] = audio_s / wall
    out["max_cosine_distance"] = max_distance(ref, got)
    few = waves[: args.bf16_sample]  # bf16 off the GPU is emulated on most CPUs: slow
    low = load_encoder(args.encoder, device=args.device, options={"batch": "always", "precision": "bf16"})
    out["max_cosine_distance_bf16"] = max_distance(ref[: len(few)], low.embed(few))
    return out


def max_distance(ref: np.ndarray, got: np.ndarray) -> float:
    """Largest 1 − cos between rows of unit-norm embeddings."""
    return float((1.0 - np.einsum("ij,ij->i", ref.astype(np.float64), got.astype(np.float64))).max())


def main(argv: list[str]) -> int:
    import sys

    from _common import device_available, machine
    from run_plan import run_plan

    from interbias.encoders import load_encoder

    args = parse(argv)
    why = device_available(args.device)
    if why:
        print(f"gpu_check: not run on {args.device}: {why}", file=sys.stderr)
        return 2
    plan = run_plan(args.plan, args.corpus)
    order = sorted(range(len(plan.items)), key=lambda i: (plan.items[i][0], plan.items[i][1].fingerprint))
    all_lengths = plan.lengths()
    lengths = [all_lengths[i] for i in order]  # the driver gathers task by task (utterance id, chain)
    tasks = [len(list(g)) for _, g in itertools.groupby(plan.items[i][0] for i in order)]
    enc = load_encoder(args.encoder, device=args.device, options={"batch": "always"})
    report: dict[str, Any] = {"plan": f"{args.plan} --corpus {args.corpus}", "device": args.device}
    report.update(replay(enc, lengths, tasks))
    report["ops_per_forward"], report["ops_unmasked"] = forward_ops(enc, lengths)
    report.update(agreement_and_speed(args, plan))
    report["machine"] = machine()
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        for k, v in report.items():
            print(f"{k}: {v:.4g}" if isinstance(v, float) else f"{k}: {v}")
    ok = (
        report["distinct_shapes"] <= 16
        and report["padding_share"] <= 0.10
        and report["ops_per_forward"] <= 1.15 * report["ops_unmasked"]
        and report["max_cosine_distance"] <= 1e-5
    )
    return 0 if ok else 1
