"""GPU check: CAM++ embedding throughput on CUDA (× real time) and CPU/GPU agreement.

Embeds the utterances of a small synthetic corpus (built offline with espeak-ng into
``$INTERBIAS_CACHE`` if missing, a few seconds) once on the CPU, one at a time (the reference),
and on the device in length-sorted batches from pinned memory, as ``interbias run --device
cuda`` does (``interbias.embedding.executors``). Reports throughput as seconds of audio embedded per
wall second (median of repetitions), and the cosine distance 1 − ⟨e_cpu, e_dev⟩ per utterance:
PASS when the largest is ≤ the tolerance (1e-4). Exit 0 on PASS, 1 on FAIL, 2 when the device
is not available (nothing is run then). ``--device cpu`` checks the script itself on a CPU.
``--e2e`` times whole ``interbias run`` invocations instead (``benchmarks/gpu_e2e.py``; its
options: ``gpu_check.py --e2e --help``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np
from _common import machine, table

TOLERANCE = 1e-4
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


def device_available(device: str) -> str:
    """Empty when usable, else why not."""
    if device == "cpu":
        return ""
    import torch

    if not device.startswith("cuda"):
        return f"unknown device {device!r}"
    if not torch.cuda.is_available():
        return "CUDA is not available (torch.cuda.is_available() is False)"
    return ""


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


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--e2e" in argv:  # whole interbias runs on the device (benchmarks/gpu_e2e.py)
        from gpu_e2e import main as e2e

        return e2e([a for a in argv if a != "--e2e"])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--encoder", default="CAM++")
    ap.add_argument("--n", type=int, default=60, help="utterances (at most 12 × --sentences)")
    ap.add_argument("--sentences", type=int, default=5)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--tolerance", type=float, default=TOLERANCE)
    args = ap.parse_args(argv)
    why = device_available(args.device)
    if why:
        print(f"gpu_check: not run on {args.device}: {why}", file=sys.stderr)
        return 2
    from interbias.encoders import load_encoder, restore_threads

    waves = load_waves(args.n, args.sentences)
    audio_s = sum(len(w) for w in waves) / 16000
    cpu = load_encoder(args.encoder, device="cpu")
    restore_threads()
    t = time.perf_counter()
    ref = cpu.embed(waves)
    cpu_wall = time.perf_counter() - t
    dev = load_encoder(args.encoder, device=args.device)
    embed_batched(dev, waves[: args.batch], args.device, args.batch)  # warm-up (kernels, allocator)
    walls = []
    calls_before = dev.batch_calls
    for _ in range(args.reps):
        t = time.perf_counter()
        got = embed_batched(dev, waves, args.device, args.batch)
        if args.device.startswith("cuda"):
            import torch

            torch.cuda.synchronize()
        walls.append(time.perf_counter() - t)
    calls = (dev.batch_calls - calls_before) / args.reps
    single = np.stack([dev.embed([w])[0] for w in waves])
    dist = cosine_distances(ref, got)
    dist_single = cosine_distances(single, got)
    wall = statistics.median(walls)
    # on CUDA an encoder batches with padding masks, or (CAM++) inputs of equal frame count only
    if not dev.batches():
        how = "one at a time (no padding masks)"
    elif dev.supports_padding:
        how = f"padded batches of ≤ {args.batch}"
    else:
        how = f"batches of equal frame count, ≤ {args.batch}"
    rows = [
        ["utterances / audio", f"{len(waves)} / {audio_s:.0f} s"],
        [
            f"CPU, one at a time ({cpu.label})",
            f"{times_real_time(audio_s, cpu_wall):.0f}× real time ({cpu_wall:.1f} s)",
        ],
        [
            f"{args.device}, {how} (median of {args.reps})",
            f"{times_real_time(audio_s, wall):.0f}× real time ({wall:.2f} s)",
        ],
        ["network calls per pass / mean batch size", f"{calls:.0f} / {len(waves) / max(calls, 1):.2f}"],
        ["cosine distance CPU vs device: max / mean", f"{dist.max():.2e} / {dist.mean():.2e}"],
        ["cosine distance device batched vs alone: max", f"{dist_single.max():.2e}"],
        [f"agreement (max ≤ {args.tolerance:g})", verdict(dist, args.tolerance)],
    ]
    print(f"machine: {machine()}\n")
    print(table(f"GPU check: {args.encoder} on {args.device}", ["measure", "value"], rows))
    return 0 if verdict(dist, args.tolerance) == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
