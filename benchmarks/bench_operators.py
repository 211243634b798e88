"""Benchmark every operator on a 4 s, 16 kHz clip: seconds per clip and × real time per core.

Times are CPU seconds of this process and its child processes (one thread: BLAS/OpenMP
pools are pinned to 1 before numpy loads), the median over ``--repeats`` calls after one warm-up call (which measures a
codec's delay or simulates a room bank once per process; those one-off costs are printed
separately). For each codec, when an ``ffmpeg`` command is on PATH, the same round trip
through two ffmpeg processes (encode to a pipe, decode from it) is timed side by side: its
wall time and its child-process CPU time. Target: ≥ 50× real time per core for every
operator except reverb simulation (the room bank is built once and cached).

    python benchmarks/bench_operators.py [--repeats 5] [--json] [--strict]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import resource  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import table  # noqa: E402

from interbias.corpora.manifest import Manifest, Utterance  # noqa: E402
from interbias.operators import Chain, OpContext, make_operator  # noqa: E402
from interbias.operators import codec as codec_mod  # noqa: E402
from interbias.operators import reverb as reverb_mod  # noqa: E402
from interbias.utils.seeding import derive_rng  # noqa: E402

RATE = 16000
CLIP_S = 4.0
TARGET_X_RT = 50.0

#: ffmpeg CLI equivalents: (encoder args, muxer[:demuxer], extra demuxer args for decoding).
FFMPEG_CLI: dict[str, tuple[list[str], str, list[str]]] = {
    "pcm_mulaw": (["-c:a", "pcm_mulaw", "-ar", "8000"], "wav", []),
    "pcm_alaw": (["-c:a", "pcm_alaw", "-ar", "8000"], "wav", []),
    "g722": (["-c:a", "g722", "-ar", "16000"], "g722", []),
    "g726": (["-c:a", "g726", "-b:a", "32k", "-ar", "8000"], "wav", []),
    "gsm": (["-c:a", "libgsm", "-ar", "8000"], "gsm", []),
    "amr_nb": (["-c:a", "libopencore_amrnb", "-b:a", "12.2k", "-ar", "8000"], "amr", []),
    "opus": (["-c:a", "libopus", "-b:a", "16k", "-ar", "16000"], "ogg", []),
    "mp3": (["-c:a", "libmp3lame", "-b:a", "32k", "-ar", "16000"], "mp3", []),
    "aac": (["-c:a", "aac", "-b:a", "32k", "-ar", "16000"], "adts:aac", []),
    "sbc": (["-c:a", "sbc", "-b:a", "64k", "-ar", "16000"], "sbc", []),
    "msbc": (["-c:a", "sbc", "-msbc", "1", "-ar", "16000"], "sbc", []),
    "aptx": (["-c:a", "aptx", "-ac", "2", "-ar", "16000"], "aptx", ["-sample_rate", "16000"]),
    "aptx_hd": (["-c:a", "aptx_hd", "-ac", "2", "-ar", "16000"], "aptx_hd", ["-sample_rate", "16000"]),
    "speex": (["-c:a", "libspeex", "-b:a", "16.8k", "-ar", "16000"], "ogg", []),
    "codec2": (["-c:a", "libcodec2", "-mode", "3200", "-ar", "8000"], "codec2", []),
}


def clip(seed: str, seconds: float = CLIP_S) -> np.ndarray:
    """A speech-like clip: a harmonic complex with a gliding F0 in bursts, plus a noise floor."""
    rng = derive_rng("bench", seed)
    n = int(seconds * RATE)
    t = np.arange(n) / RATE
    f0 = rng.uniform(100, 220) * (1 + 0.15 * np.sin(2 * np.pi * 0.6 * t))
    phase = 2 * np.pi * np.cumsum(f0) / RATE
    voiced = sum(np.sin(k * phase) / k for k in range(1, 25))
    env = (np.sin(2 * np.pi * 2.7 * t + rng.uniform(0, 6)) > -0.2).astype(float)
    y = 0.2 * voiced * env + 0.003 * rng.standard_normal(n)
    return (0.5 * y / np.abs(y).max()).astype(np.float32)


def talker_corpus(folder: Path) -> Manifest:
    """Eight speakers × two clips written as WAV: the corpus babble and crosstalk draw from."""
    import soundfile as sf

    utts = []
    for s in range(8):
        for k in range(2):
            path = folder / f"spk{s}_{k}.wav"
            sf.write(path, clip(f"talker{s}-{k}", 3.0), RATE)
            utts.append(Utterance(id=f"spk{s}/{k}", path=path.name, speaker=f"spk{s}"))
    return Manifest("bench-talkers", folder, tuple(utts))


def cases(noise_dir: Path) -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    for name, problem in codec_mod.availability().items():
        if problem is None:
            out.append((f"codec {name}", {"op": "codec", "codec": name}))
    for kind in ("gaussian", "pink", "brown", "babble", "crosstalk"):
        out.append((f"noise {kind}", {"op": "noise", "kind": kind, "snr_db": 5}))
    out.append(
        ("noise environmental", {"op": "noise", "kind": "environmental", "snr_db": 5, "noise_dir": str(noise_dir)})
    )
    out.append(("packet_loss iid 10%", {"op": "packet_loss", "rate": 0.1}))
    out.append(("packet_loss GE 10%", {"op": "packet_loss", "rate": 0.1, "model": "gilbert_elliott"}))
    out.append(("time_scale 0.7", {"op": "time_scale", "factor": 0.7}))
    out.append(("time_scale 1.3", {"op": "time_scale", "factor": 1.3}))
    out.append(("reverb rt60 0.6 (apply)", {"op": "reverb", "rt60_s": 0.6, "bank_size": 2}))
    out.append(("noise music", {"op": "noise", "kind": "music", "snr_db": 5, "noise_dir": str(noise_dir)}))
    out += channel_cases()
    return out


def channel_cases() -> list[tuple[str, dict[str, Any]]]:
    """The channel operators at a middle severity of the E21 ladder."""
    return [
        ("crop 2 s speech", {"op": "crop", "duration_s": 2.0, "where": "speech"}),
        ("gain +20 dB", {"op": "gain", "gain_db": 20}),
        ("clip 0.25 hard", {"op": "clip", "threshold": 0.25}),
        ("clip -20 dBFS tanh", {"op": "clip", "level_dbfs": -20, "mode": "tanh"}),
        ("filter lowpass 1666", {"op": "filter", "kind": "lowpass", "cutoff_hz": 1666}),
        ("filter narrowband", {"op": "filter", "kind": "narrowband"}),
        ("filter shelf bass+treble", {"op": "filter", "kind": "shelf", "bass_db": 12, "treble_db": 12}),
        ("resample 8 kHz", {"op": "resample", "rate_hz": 8000}),
        ("resample 12 kHz no AA", {"op": "resample", "rate_hz": 12000, "anti_aliasing": False}),
        ("echo 250 ms x3", {"op": "echo", "delay_ms": 250, "decay": 0.5, "reflections": 3}),
        ("agc ratio 4", {"op": "agc", "ratio": 4, "target_dbfs": -26}),
        ("pitch +6 st", {"op": "pitch", "semitones": 6}),
    ]


def time_operator(item: dict[str, Any], x: np.ndarray, corpus: Manifest, cache: Path, repeats: int) -> dict[str, Any]:
    params = {k: v for k, v in item.items() if k != "op"}
    chain = Chain((make_operator(item["op"], params, where="bench"),))

    def children_cpu() -> float:
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        return r.ru_utime + r.ru_stime

    def once(i: int) -> tuple[float, float]:
        # CPU of this process plus any child processes (the ffmpeg backend of speex/codec2)
        c0, k0, w0 = time.process_time(), children_cpu(), time.perf_counter()
        chain.apply(
            x,
            utterance_sha256=f"bench{i}",
            make_ctx=lambda rng: OpContext(
                RATE, "u", "spk0", rng, corpus=corpus, exclude_speakers=frozenset({"spk0"}), cache_dir=cache
            ),
        )
        return time.process_time() - c0 + children_cpu() - k0, time.perf_counter() - w0

    first_cpu, _ = once(0)
    runs = [once(i + 1) for i in range(repeats)]
    cpu = statistics.median(r[0] for r in runs)
    wall = statistics.median(r[1] for r in runs)
    return {"cpu_s": cpu, "wall_s": wall, "first_call_cpu_s": first_cpu, "x_rt_per_core": CLIP_S / cpu}


def ffmpeg_roundtrip(exe: str, codec: str, x: np.ndarray, repeats: int) -> dict[str, Any]:
    enc_args, fmts, demux = FFMPEG_CLI[codec]
    fmt, _, in_fmt = fmts.partition(":")
    in_fmt = in_fmt or fmt
    base = [exe, "-hide_banner", "-nostdin", "-loglevel", "error"]
    raw = x.astype(np.float32).tobytes()

    def once() -> tuple[float, float, int]:
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        w0 = time.perf_counter()
        enc = subprocess.run(
            [*base, "-f", "f32le", "-ar", str(RATE), "-ac", "1", "-i", "pipe:", *enc_args, "-f", fmt, "pipe:"],
            input=raw, capture_output=True, check=True,
        )  # fmt: skip
        dec = subprocess.run(
            [*base, *demux, "-f", in_fmt, "-i", "pipe:", "-f", "f32le", "-ac", "1", "-ar", str(RATE), "pipe:"],
            input=enc.stdout, capture_output=True, check=True,
        )  # fmt: skip
        wall = time.perf_counter() - w0
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
        return wall, cpu, len(dec.stdout) // 4

    try:
        once()
        runs = [once() for _ in range(repeats)]
    except subprocess.CalledProcessError as exc:
        err = (exc.stderr or b"").decode(errors="replace").strip().splitlines()
        return {"error": err[-1] if err else f"exit {exc.returncode}"}
    return {
        "wall_s": statistics.median(r[0] for r in runs),
        "cpu_s": statistics.median(r[1] for r in runs),
        "decoded_samples": runs[0][2],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5, help="timed calls per operator (after one warm-up)")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--strict", action="store_true", help="exit 1 when an operator misses the target")
    args = ap.parse_args(argv)

    exe = shutil.which("ffmpeg")
    x = clip("main")
    results = []
    with tempfile.TemporaryDirectory(prefix="ib-bench-") as tmp:
        tmpdir = Path(tmp)
        (tmpdir / "talkers").mkdir()
        (tmpdir / "noise").mkdir()
        corpus = talker_corpus(tmpdir / "talkers")
        import soundfile as sf

        sf.write(tmpdir / "noise" / "hum.wav", 0.1 * derive_rng("bench-noise").standard_normal(10 * RATE), RATE)
        for label, item in cases(tmpdir / "noise"):
            row: dict[str, Any] = {"operator": label, **time_operator(item, x, corpus, tmpdir, args.repeats)}
            if item["op"] == "codec" and exe:
                row["ffmpeg_cli"] = ffmpeg_roundtrip(exe, item["codec"], x, args.repeats)
            results.append(row)
        # Reverb simulation: one room of the bank (excluded from the target).
        c0 = time.process_time()
        reverb_mod.simulate_room(0.6, RATE, 99)
        sim = time.process_time() - c0

    missed = [r["operator"] for r in results if r["x_rt_per_core"] < TARGET_X_RT]
    if args.json:
        print(json.dumps({"clip_s": CLIP_S, "rate_hz": RATE, "ffmpeg": exe, "results": results,
                          "reverb_simulation_s_per_room_rt60_0.6": sim, "missed_target": missed}, indent=2))  # fmt: skip
    else:
        title = (
            f"Operators on a {CLIP_S:g} s clip at {RATE} Hz: CPU seconds per clip (median of {args.repeats}), "
            f"one thread; ffmpeg CLI: {exe or 'not on PATH (no side-by-side column)'}"
        )
        rows = []
        for r in results:
            cli = r.get("ffmpeg_cli")
            side = ["", "", ""]
            if cli is not None and "error" in cli:
                side = [f"failed: {cli['error'][:40]}", "", ""]
            elif cli is not None:
                side = [f"{cli['wall_s']:.3f}", f"{cli['cpu_s']:.3f}", f"{CLIP_S / cli['wall_s']:.1f}"]
            bar = "yes" if r["x_rt_per_core"] >= TARGET_X_RT else "NO"
            rows.append([r["operator"], f"{r['cpu_s']:.4f}", f"{r['x_rt_per_core']:.1f}", bar,
                         f"{r['first_call_cpu_s']:.3f}", *side])  # fmt: skip
        headers = ["operator", "s/clip", "× real time per core", f"≥ {TARGET_X_RT:g}×", "first call s",
                   "ffmpeg CLI wall s", "CLI CPU s", "CLI × real time"]  # fmt: skip
        if not exe:  # no side-by-side columns without the ffmpeg command
            headers, rows = headers[:5], [r[:5] for r in rows]
        print(table(title, headers, rows))
        print(f"Reverb room simulation (once per room, cached): {sim:.2f} s CPU per room at RT60 0.6 s.")
        print(
            f"Every operator ≥ {TARGET_X_RT:g}× real time per core: "
            + ("yes" if not missed else f"no, below: {', '.join(missed)}")
        )
    return 1 if (args.strict and missed) else 0


if __name__ == "__main__":
    sys.exit(main())
