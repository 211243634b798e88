"""GPU check: an encoder's batched embedding on the device (× real time) against one at a time.

Embeds the utterances of a small synthetic corpus (mixed lengths; built offline with espeak-ng
into ``$INTERBIAS_CACHE`` if missing, a few seconds) once on the CPU, one at a time (the
reference, the CPU default), and on the device in batches: sorted by length, cut into groups of
``--batch`` from pinned memory, each group one ``embed`` call that the encoder cuts by its frame
budget into masked batches of mixed lengths (``batch="always"``, so ``--device cpu`` runs the
batched path on the CPU). Reports throughput as seconds of audio per wall second (median of
repetitions) for each path, network calls and utterances per call, the padding share (padded /
all frames), and the cosine distance 1 − ⟨e_ref, e_batched⟩ per utterance. PASS when the
largest distance is ≤ the tolerance (1e-4; on ``--device cpu``, where both paths share the CPU, 1e-5) and the
batches average ≥ 0.75 × ``--batch`` utterances per call. Exit 0 on PASS, 1 on FAIL, 2 when the
device is not available (nothing is run then).
``--e2e`` times whole ``interbias run`` invocations instead (``benchmarks/gpu_e2e.py``; its
options: ``gpu_check.py --e2e --help``); ``--plan EXP`` replays a run of EXP's batching on its
waveform lengths and reports shapes, padding, operators per forward and agreement as JSON with
``--json`` (``benchmarks/gpu_plan.py``; ``gpu_check.py --plan E14 --help``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np
from _common import device_available, machine, table

TOLERANCE = 1e-4
#: The tolerance on ``--device cpu``: the masked batches against one at a time on one device.
CPU_TOLERANCE = 1e-5
#: Utterances per network call wanted, as a share of ``--batch``.
FILL = 0.75
#: The corpus: 2 accents × 2 genders × 3 voices × N sentences, neutral adults.
SPEC = {"accents": ["us", "wi"], "age_bands": ["adult"], "voices_per_cell": 3, "styles": ["neutral"]}


def cosine_distances(ref: np.ndarray, other: np.ndarray) -> np.ndarray:
    """1 − cos(ref_i, other_i) per row (rows need not be unit-norm)."""
    ref = np.asarray(ref, dtype=np.float64)
    other = np.asarray(other, dtype=np.float64)
    if ref.shape != other.shape:
        raise ValueError(f"shapes differ: {ref.shape} vs {other.shape}")
    num = np.einsum("ij,ij->i", ref, other)
    return 1.0 - num / (np.linalg.norm(ref, axis=1) * np.linalg.norm(other, axis=1))


def verdict(distances: np.ndarray, tolerance: float = TOLERANCE) -> str:
    return "PASS" if float(np.max(distances)) <= tolerance else "FAIL"


def times_real_time(audio_s: float, wall_s: float) -> float:
    return audio_s / wall_s


def load_waves(n: int, sentences: int) -> list[np.ndarray]:
    from interbias.audio import frontend as audio
    from interbias.corpora.synthetic import SyntheticSpec, build
    from interbias.utils.paths import cache_dir

    manifest, _ = build(SyntheticSpec.from_options({**SPEC, "n_sentences": sentences}), cache_dir())
    utts = list(manifest.utterances)[:n]
    return [audio.load(manifest.resolve(u)).samples for u in utts]


def embed_batched(enc, waves: list[np.ndarray], device: str, batch: int) -> np.ndarray:
    """Embeddings in input order, computed in length-sorted batches from pinned memory."""
    from interbias.embedding.executors import pin

    order = sorted(range(len(waves)), key=lambda i: (len(waves[i]), i))
    out = np.empty((len(waves), enc.card.embedding_dim or 0), dtype=np.float32)
    for start in range(0, len(order), batch):
        idx = order[start : start + batch]
        vecs = enc.embed([pin(waves[i], device) for i in idx])
        if out.shape[1] != vecs.shape[1]:
            out = np.empty((len(waves), vecs.shape[1]), dtype=np.float32)
        out[idx] = vecs
    return out


def parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--encoder", default="CAM++")
    ap.add_argument("--n", type=int, default=60, help="utterances (at most 12 × --sentences)")
    ap.add_argument("--sentences", type=int, default=5)
    ap.add_argument("--batch", type=int, default=32, help="utterances per embed call (and most per network call)")
    ap.add_argument("--precision", default="fp32", help="fp32, tf32 or bf16 on the device")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--tolerance", type=float, help=f"default {TOLERANCE:g}, on --device cpu {CPU_TOLERANCE:g}")
    args = ap.parse_args(argv)
    if args.tolerance is None:
        args.tolerance = CPU_TOLERANCE if args.device == "cpu" else TOLERANCE
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--e2e" in argv:  # whole interbias runs on the device (benchmarks/gpu_e2e.py)
        from gpu_e2e import main as e2e

        return e2e([a for a in argv if a != "--e2e"])
    if "--plan" in argv:  # the run's batching on an experiment's lengths (benchmarks/gpu_plan.py)
        from gpu_plan import main as plan

        return plan(argv)
    args = parse(argv)
    why = device_available(args.device)
    if why:
        print(f"gpu_check: not run on {args.device}: {why}", file=sys.stderr)
        return 2
    return check_batched(args)


def timed_passes(dev, waves: list[np.ndarray], args: argparse.Namespace) -> tuple[np.ndarray, float, dict[str, float]]:
    """(embeddings, median wall seconds, per-pass counters) of ``args.reps`` batched passes."""
    embed_batched(dev, waves[: args.batch], args.device, args.batch)  # warm-up (kernels, allocator)
    calls, valid, padded = dev.batch_calls, dev.valid_frames, dev.padded_frames
    walls = []
    for _ in range(args.reps):
        t = time.perf_counter()
        got = embed_batched(dev, waves, args.device, args.batch)
        if args.device.startswith("cuda"):
            import torch

            torch.cuda.synchronize()
        walls.append(time.perf_counter() - t)
    pad = dev.padded_frames - padded
    counters = {
        "calls": (dev.batch_calls - calls) / args.reps,
        "padding": pad / max(pad + dev.valid_frames - valid, 1),
    }
    return got, statistics.median(walls), counters


def check_batched(args: argparse.Namespace) -> int:
    from interbias.encoders import load_encoder, restore_threads

    waves = load_waves(args.n, args.sentences)
    audio_s = sum(len(w) for w in waves) / 16000
    cpu = load_encoder(args.encoder, device="cpu")
    restore_threads()
    t = time.perf_counter()
    ref = cpu.embed(waves)
    cpu_wall = time.perf_counter() - t
    dev = load_encoder(args.encoder, device=args.device, options={"batch": "always", "precision": args.precision})
    dev.max_batch_items = args.batch
    got, wall, counters = timed_passes(dev, waves, args)
    per_call = len(waves) / max(counters["calls"], 1)
    dist = cosine_distances(ref, got)
    how = "masked batches" if dev.supports_masks else "padded batches" if dev.supports_padding else "one at a time"
    rows = [
        ["utterances / audio", f"{len(waves)} / {audio_s:.0f} s"],
        [
            f"cpu, one at a time ({cpu.runtime})",
            f"{times_real_time(audio_s, cpu_wall):.0f}× real time ({cpu_wall:.1f} s)",
        ],
    ]
    if args.device != "cpu":
        dev.set_batching("never")
        t = time.perf_counter()
        single = dev.embed(waves)
        single_wall = time.perf_counter() - t
        dev.set_batching("always")
        rows.append(
            [
                f"{args.device}, one at a time",
                f"{times_real_time(audio_s, single_wall):.0f}× real time ({single_wall:.1f} s)",
            ]
        )
        rows.append(["cosine distance device batched vs alone: max", f"{cosine_distances(single, got).max():.2e}"])
    fill = "PASS" if per_call >= FILL * args.batch else "FAIL"
    agree = verdict(dist, args.tolerance)
    rows += [
        [
            f"{args.device}, {how} of ≤ {args.batch}, {args.precision} (median of {args.reps})",
            f"{times_real_time(audio_s, wall):.0f}× real time ({wall:.2f} s)",
        ],
        ["network calls per pass / utterances per call", f"{counters['calls']:.0f} / {per_call:.2f}"],
        ["padding share (padded / all frames)", f"{counters['padding']:.3f}"],
        ["cosine distance cpu one at a time vs batched: max / mean", f"{dist.max():.2e} / {dist.mean():.2e}"],
        [f"batching (≥ {FILL:g} × {args.batch} per call)", fill],
        [f"agreement (max ≤ {args.tolerance:g})", agree],
    ]
    print(f"machine: {machine()}\n")
    print(table(f"GPU check: {args.encoder} on {args.device}", ["measure", "value"], rows))
    return 0 if agree == fill == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
