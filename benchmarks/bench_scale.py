"""How each stage's cost grows, from a demo to VoxCeleb scale, with the encoder taken out.

An E14-shaped run (the synthetic variant's 6 emotion strata × 7 noise conditions = 42 cells, three
encoders, a 20 % speaker-disjoint dev split so calibration is fitted) over a generated manifest of
``S`` speakers, driven stage by stage through the library's own functions, with a fake encoder
whose vectors (speaker direction + per-utterance noise, seeded from the key) are made on demand at
memory speed, so only the harness is measured. Stages: manifest read and checks
(:meth:`Manifest.read`, no audio files), trial sampling (:func:`draw_trials`, trials written),
run-id hashing (:func:`run_id`; each utterance's file digest stands in as a digest of its id),
embedding-cache inserts and lookups (:class:`EmbeddingCache`, one encoder's vectors), scoring
(:func:`score_cell` and the scores files of every cell × encoder), calibration
(:func:`calibrate_rows`), results writing (results.csv, run.json, the after-run fairness report),
then the commands ``interbias analyze`` (bootstrap B replicates, corrected design, findings),
``interbias report`` and ``interbias runs leaderboard`` on the run directory.

Each stage group runs in a fresh interpreter; its time is wall seconds of the stage alone and its
memory the process's peak resident set (``resource.getrusage(RUSAGE_SELF).ru_maxrss``, which
includes the interpreter and its imports and is a running maximum over the group's stages).
Times are wall and CPU seconds (user + system of the stage's process: robust on a shared
machine). The growth exponent of a stage is the least-squares slope of log(CPU seconds) on
log(eval trials) over the geometric sizes (speakers grow with trials; VoxCeleb1-H's point is
left out of the fit). "trials" counts eval trials; the dev split (a fifth of the speakers, for
calibration) holds as many again.

Usage: ``python benchmarks/bench_scale.py [--quick] [--sizes S:N ...] [--boot B] [--workdir DIR] [--keep]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import ROOT, machine, table  # noqa: E402

#: (speakers, trials asked) of ``make bench`` and of ``--quick``; VoxCeleb1-H (1,190 speakers,
#: 550,894 trials; ``--sizes 1190:550894``, about 25 CPU minutes) is measured on request, not by
#: ``make bench``.
VOXCELEB1_H = (1_190, 550_894)
FULL = [(100, 1_000), (1_000, 10_000), (10_000, 100_000)]
QUICK = [(100, 1_000), (300, 3_000), (1_000, 10_000)]
STRATA = ("neutral", "calm", "happy", "sad", "angry", "fearful")
DIM = 192
ENCODERS = ("fake-a", "fake-b", "fake-c")
GROUPS = {
    "inputs": ["manifest", "sampling", "run_id"],
    "cache": ["cache_insert", "cache_lookup"],
    "run": ["scoring", "calibration", "results"],
    "analyze": ["analyze"],
    "report": ["report"],
    "leaderboard": ["leaderboard"],
}


def utterances_per_level(speakers: int, trials: int) -> int:
    """Utterances per speaker and emotion, enough for every stratum's targets (pairs ≥ 3×) in
    the dev split (a fifth of the speakers, as many trials as eval)."""
    per_speaker = trials / 2 / len(STRATA) / (0.2 * speakers)  # targets per dev speaker and stratum
    return max(2, math.ceil(math.sqrt(3 * per_speaker)) + 1)


def needs(speakers: int, trials: int) -> tuple[float, float]:
    """(disk GB, memory GB) a size needs, from the per-item costs measured on this benchmark:
    ~0.9 kB per cache vector (one encoder), ~20 B per score (126 files) plus the manifest; memory
    the larger of the two largest stages: results (~6.5 kB per eval trial over 0.5 GB) and the
    cache lookup (~2 kB per vector over 0.3 GB)."""
    utts = speakers * len(STRATA) * utterances_per_level(speakers, trials)
    vectors = utts * 7
    disk = vectors * 900 + 21 * trials * 20 + utts * 300
    return disk / 1e9, max(0.5 + trials * 6.5e3 / 1e9, 0.3 + vectors * 2e3 / 1e9)


# ---- the fake encoder and embedder (benchmark only; not a registered encoder) ---------------------


class FakeEncoder:
    """What the run's rows and run.json read of an encoder; vectors come from :class:`FakeVectors`."""

    family = "sv"
    checkpoint_sha256 = "0" * 64
    forward_calls = 0

    def __init__(self, label: str) -> None:
        self.label = label
        self.fingerprint = hashlib.sha256(label.encode()).hexdigest()[:16]
        self.source = f"benchmarks/bench_scale.py:{label}"
        self.card = SimpleNamespace(label=label, trained_on=())

    def provenance(self) -> dict[str, Any]:
        return {"label": self.label, "fingerprint": self.fingerprint, "source": self.source}


class FakeVectors(dict):
    """``(utterance, chain, encoder) -> unit vector``, made on each read and not kept (a real
    run's :class:`Embedder` keeps every vector: ~1 kB each, see the scaling guide): the
    speaker's direction plus one of 4096 fixed noise rows picked by a CRC of the key."""

    def __init__(self) -> None:
        import numpy as np

        super().__init__()
        self.noise = 0.9 * np.random.default_rng(1).standard_normal((4096, DIM))
        self.speakers: dict[tuple[str, str], Any] = {}
        self.seconds = 0.0  #: time spent making vectors (the fake encoder's cost, not the harness's)

    def __missing__(self, key: tuple[str, str, str]) -> Any:
        t = time.perf_counter()
        try:
            return self._make(key)
        finally:
            self.seconds += time.perf_counter() - t

    def _make(self, key: tuple[str, str, str]) -> Any:
        import numpy as np

        uid, _chain, enc = key
        spk = (uid.split("/", 1)[0], enc)
        if spk not in self.speakers:
            self.speakers[spk] = np.random.default_rng(zlib.crc32("/".join(spk).encode())).standard_normal(DIM)
        v = self.speakers[spk] + self.noise[zlib.crc32("|".join(key).encode()) % len(self.noise)]
        return (v / math.sqrt(v.dot(v))).astype(np.float32)  # = v / np.linalg.norm(v), without its overhead

    def __contains__(self, key: object) -> bool:
        return True


class FakeEmbedder:
    def __init__(self) -> None:
        self.vectors = FakeVectors()

    def failed(self, uid: str, fp: str) -> None:
        return None

    def frontend_record(self, uid: str, fp: str) -> dict[str, Any]:
        return {}


# ---- the stages (run in a child interpreter: ``--stage GROUP --dir DIR``) -------------------------


def experiment(trials: int) -> Any:
    from interbias.experiments.schema import load_experiment

    exp = load_experiment(ROOT / "conditions" / "E14.yaml", corpus="synthetic")
    targets = max(10, round(trials / 2 / len(STRATA)))  # per stratum, in each of the eval and dev splits
    return replace(exp, trials=replace(exp.trials, targets=targets, utterances_per_speaker=None, dev_share=0.2))


def write_manifest(folder: Path, speakers: int, trials: int) -> Path:
    per = utterances_per_level(speakers, trials)
    path = folder / "manifest.jsonl"
    with path.open("w") as fh:
        for s in range(speakers):
            spk = f"spk{s:06d}"
            gender = "female" if s % 2 else "male"
            for style in STRATA:
                for k in range(per):
                    uid = f"{spk}/{style}/{k}"
                    row = {"id": uid, "path": f"audio/{uid}.flac", "speaker": spk, "gender": gender, "style": style}
                    fh.write(json.dumps(row) + "\n")
    return path


def _cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _timed(out: dict[str, Any], name: str, fn: Any) -> Any:
    t, c = time.perf_counter(), _cpu()
    value = fn()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out[name] = {"s": time.perf_counter() - t, "cpu": _cpu() - c, "rss_mb": rss}
    return value


def stage_inputs(d: Path, trials: int, out: dict[str, Any]) -> None:
    from interbias.corpora.manifest import Manifest
    from interbias.run.results import run_id
    from interbias.run.rundir import RunDir
    from interbias.trials.sampler import draw_trials

    exp = experiment(trials)
    manifest = _timed(out, "manifest", lambda: Manifest.read(d / "manifest.jsonl", name="bench"))

    def sample() -> Any:
        listed = draw_trials(exp, manifest)
        run = RunDir(d / "run")
        run.path.mkdir(parents=True, exist_ok=True)
        run.write_trials(listed)
        run.write_experiment(exp)
        return listed

    listed = _timed(out, "sampling", sample)
    ids = sorted(listed.utterance_ids())

    def digest() -> str:
        audio = {u: hashlib.sha256(u.encode()).hexdigest() for u in ids}
        encs = [FakeEncoder(n) for n in ENCODERS]
        return run_id(
            exp, manifest, encs, rev="bench", max_trials=None, listed=None, attacks_sha256=None, audio_sha256=audio
        )

    _timed(out, "run_id", digest)
    out["n_trials"] = int((listed.frame["split"] == "eval").sum())
    out["n_listed"] = len(listed.frame)
    out["n_utterances"] = len(manifest)


def _cache_keys(d: Path, trials: int) -> list[tuple[str, str, str]]:
    from interbias.run.rundir import RunDir

    exp, listed = experiment(trials), RunDir(d / "run").read_trials()
    enc = FakeEncoder(ENCODERS[0])
    keys = set()
    for cell in exp.cells():
        sub = listed.for_stratum(cell.stratum)
        keys.update((u, cell.enrol_chain.fingerprint, enc.fingerprint) for u in sub["enrol"].unique())
        keys.update((u, cell.test_chain.fingerprint, enc.fingerprint) for u in sub["test"].unique())
    return sorted(keys)


def stage_cache(d: Path, trials: int, out: dict[str, Any]) -> None:
    import numpy as np

    from interbias.embedding.cache import EmbeddingCache

    keys = _cache_keys(d, trials)
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((min(len(keys), 4096), DIM))
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    record = [{"op": "bench"}]
    db = EmbeddingCache(d / "cache" / "embeddings.sqlite")

    def insert() -> None:
        for lo in range(0, len(keys), 20_000):  # the embedding stage writes in batches
            db.put_many((k, vectors[i % len(vectors)], record) for i, k in enumerate(keys[lo : lo + 20_000], lo))

    _timed(out, "cache_insert", insert)
    got = _timed(out, "cache_lookup", lambda: db.get_many(keys, dims={ENCODERS[0]: DIM}))
    db.close()
    assert len(got) == len(keys), "cache lost vectors"
    size = sum(p.stat().st_size for p in (d / "cache").iterdir())
    out["cache"] = {"vectors": len(keys), "bytes": size}


def stage_run(d: Path, trials: int, out: dict[str, Any]) -> None:
    import pandas as pd

    from interbias.corpora.manifest import Manifest
    from interbias.run.calibrate import calibrate_rows, calibration_columns
    from interbias.run.cells import score_cell
    from interbias.run.results import COLUMNS, RowContext, results_row
    from interbias.run.rundir import RunDir

    exp, run = experiment(trials), RunDir(d / "run")
    listed = run.read_trials()
    encoders, emb = [FakeEncoder(n) for n in ENCODERS], FakeEmbedder()
    seeds = {name: s.seed for name, s in listed.strata.items()}
    ctx = RowContext(exp, "bench", "bench-run", "bench", listed.sha256, seeds)
    rows: dict[tuple[str, str], dict[str, Any]] = {}

    def score() -> None:
        for enc in encoders:
            for cell in exp.cells():
                scored = score_cell(cell, enc, listed.for_stratum(cell.stratum), emb, 0.0, 16_000)
                row = results_row(ctx, cell, enc, scored.row)
                run.write_cell(enc.label, cell.id, scored.frame, {"row": row, "failures": []})
                rows[(enc.label, cell.id)] = row

    _timed(out, "scoring", score)
    out["scoring"]["fake_s"] = emb.vectors.seconds
    cal = _timed(
        out,
        "calibration",
        lambda: calibrate_rows(run, exp, list(ENCODERS), exp.cells(), rows, has_dev=True),
    )

    def write() -> None:
        from interbias.analysis.after_run import run_analyses
        from interbias.run.frame import RunEnd

        columns = COLUMNS + calibration_columns(exp.operating_points)
        results = pd.DataFrame([rows[(m, c.id)] for m in ENCODERS for c in exp.cells()], columns=columns)
        run.write_results(results)
        manifest = Manifest.read(d / "manifest.jsonl", name="bench")
        header = {"run_id": "bench-run", "revision": "bench", "command": ["bench_scale"], "device": "cpu"}
        run.write_run_json(_run_record(exp, manifest, encoders, listed, header, cal))
        run_analyses(RunEnd("verification", run, [], results=results, trials=listed, scored=manifest))

    _timed(out, "results", write)


def _run_record(exp: Any, manifest: Any, encoders: list, listed: Any, header: dict, cal: Any) -> dict[str, Any]:
    from interbias.run.results import run_record

    extra = {"errored_cells": [], "calibration": cal.to_json(), "scoring": {"method": "cosine"}}
    counts = {"cells": 126, "cells_complete": 126, "embedded": 0, "from_cache": 0}
    return run_record(
        header=header,
        exp=exp,
        manifest=manifest,
        encoders=encoders,
        trials=listed,
        counts=counts,
        failures=[],
        extra=extra,
    )


def stage_cli(d: Path, args: list[str], name: str, out: dict[str, Any]) -> None:
    from typer.main import get_command

    from interbias.cli import app

    cmd = get_command(app)

    def call() -> None:
        try:
            cmd.main(args=args, standalone_mode=False)
        except SystemExit as exc:
            if exc.code:
                raise

    _timed(out, name, call)


def child(group: str, d: Path, trials: int, boot: int) -> dict[str, Any]:
    out: dict[str, Any] = {"baseline_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    run = str(d / "run")
    if group == "inputs":
        stage_inputs(d, trials, out)
    elif group == "cache":
        stage_cache(d, trials, out)
    elif group == "run":
        stage_run(d, trials, out)
    elif group == "analyze":
        stage_cli(d, ["analyze", run, "--bootstrap", str(boot), "--out", str(d / "analysis")], "analyze", out)
    elif group == "report":
        stage_cli(d, ["report", run, "--bootstrap", str(boot), "--out", str(d / "report")], "report", out)
    elif group == "leaderboard":
        stage_cli(d, ["leaderboard", run, "--bootstrap", str(boot)], "leaderboard", out)
    return out


# ---- the parent: sizes, pre-flight, children, tables ------------------------------------------------


def preflight(work: Path, sizes: list[tuple[int, int]]) -> None:
    """Refuse to start where the benchmark cannot write or the largest size would not fit."""
    probe = work / ".write-probe"
    try:
        work.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"x" * 4096)
        probe.unlink()
    except OSError as exc:
        raise SystemExit(f"bench_scale: cannot write in {work} ({exc}); pass --workdir DIR") from None
    free_gb = shutil.disk_usage(work).free / 1e9
    try:
        line = next(x for x in Path("/proc/meminfo").read_text().splitlines() if x.startswith("MemAvailable"))
        mem_gb = int(line.split()[1]) / 2**20
    except (OSError, StopIteration):
        mem_gb = float("inf")
    print(f"work directory {work}: {free_gb:.1f} GB free disk, {mem_gb:.1f} GiB memory available")
    for s, n in sizes:
        disk, mem = needs(s, n)
        print(f"  {s} speakers, {n} trials: needs ~{disk:.2f} GB disk, ~{mem:.1f} GB memory (estimates)")
    disk, mem = max(needs(s, n)[0] for s, n in sizes), max(needs(s, n)[1] for s, n in sizes)
    if disk > 0.9 * free_gb or mem > mem_gb:
        raise SystemExit(
            f"bench_scale: the largest size needs ~{disk:.1f} GB disk and ~{mem:.1f} GB memory: not started"
        )
    print(flush=True)


def run_size(
    work: Path, speakers: int, trials: int, boot: int, keep: bool, skip: tuple[str, ...] = ()
) -> dict[str, Any]:
    d = work / f"s{speakers}-n{trials}"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    write_manifest(d, speakers, trials)
    result: dict[str, Any] = {"speakers": speakers, "trials_asked": trials, "stages": {}, "failed": []}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(":")}
    env["INTERBIAS_CACHE"] = str(d / "cache")
    for group, names in GROUPS.items():
        if group in skip:
            continue
        cmd = [sys.executable, str(Path(__file__)), "--stage", group, "--dir", str(d), "--trials", str(trials)]
        proc = subprocess.run([*cmd, "--boot", str(boot)], env=env, capture_output=True, text=True, cwd=d)
        if proc.returncode != 0:
            result["failed"].append(f"{group}: {proc.stderr.strip().splitlines()[-1:]}")
            print(proc.stderr[-2000:], file=sys.stderr)
            continue
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        for n in names:
            if n in out:
                result["stages"][n] = out[n]
        result["baseline_mb"] = out["baseline_mb"]
        for k in ("n_trials", "n_listed", "n_utterances", "cache"):
            if k in out:
                result[k] = out[k]
    if not keep:
        shutil.rmtree(d, ignore_errors=True)
    return result


def exponent(points: list[tuple[float, float]]) -> float | None:
    import numpy as np

    pts = [(x, y) for x, y in points if x > 0 and y > 0]
    if len(pts) < 2:
        return None
    lx, ly = np.log([p[0] for p in pts]), np.log([p[1] for p in pts])
    return float(np.polyfit(lx, ly, 1)[0])


#: The embedding-free stages of ``interbias run`` followed by ``interbias report`` (which computes
#: its own bootstrap and findings); ``analyze`` and ``leaderboard`` are further, optional commands.
PIPELINE = ("sampling", "run_id", "scoring", "calibration", "results", "report")


def fake_cell(r: dict[str, Any]) -> str:
    st = r["stages"].get("scoring")
    return f"{st['fake_s']:.1f} s" if st and "fake_s" in st else ""


def pipeline_cell(r: dict[str, Any]) -> str:
    """Wall / CPU seconds of :data:`PIPELINE`, less the fake encoder's time (the harness alone)."""
    if any(n not in r["stages"] for n in PIPELINE):
        return ""
    fake = r["stages"]["scoring"].get("fake_s", 0.0)
    wall = sum(r["stages"][n]["s"] for n in PIPELINE) - fake
    cpu = sum(r["stages"][n]["cpu"] for n in PIPELINE) - fake
    return f"{wall:.0f} / {cpu:.0f} s"


def tables(results: list[dict[str, Any]], boot: int, fit_sizes: int) -> str:
    stages = [n for names in GROUPS.values() for n in names]
    sizes = [f"{r['speakers']} spk, {r.get('n_trials', r['trials_asked'])} trials" for r in results]
    rows = []
    for name in stages:
        cells = []
        for r in results:
            st = r["stages"].get(name)
            cells.append(f"{st['s']:.1f} / {st['cpu']:.1f} s, {st['rss_mb']:.0f} MB" if st else "failed")
        fit = [(r.get("n_trials", 0), r["stages"][name]["cpu"]) for r in results[:fit_sizes] if name in r["stages"]]
        exp = exponent(fit)
        rows.append([name, *cells, "" if exp is None else f"{exp:.2f}"])
    total = [
        f"{sum(st['s'] for st in r['stages'].values()):.0f} / {sum(st['cpu'] for st in r['stages'].values()):.0f} s"
        for r in results
    ]
    rows.append(["all stages", *total, ""])
    rows.append(["(scoring: fake vectors)", *[fake_cell(r) for r in results], ""])
    rows.append(["run + report", *[pipeline_cell(r) for r in results], ""])
    head = ["stage", *sizes, f"exponent (CPU s, first {fit_sizes} sizes)"]
    title = (
        f"Stage cost by size: wall / CPU seconds and peak RSS of the stage's process (B = {boot}; E14 shape: "
        f"6 strata × 7 conditions × 3 fake encoders; trials: eval trials, as many dev trials again)"
    )
    out = table(title, head, rows)
    base = ", ".join(f"{r.get('baseline_mb', 0):.0f}" for r in results)
    out += f"\ninterpreter before any import (MB, per size): {base}\n"
    for r in results:
        c = r.get("cache")
        if c and c["vectors"] and "cache_insert" in r["stages"]:
            ins, look = r["stages"]["cache_insert"]["s"], r["stages"]["cache_lookup"]["s"]
            out += (
                f"cache at {r.get('n_trials')} trials: {c['vectors']} vectors ({DIM} float32), insert "
                f"{c['vectors'] / ins:,.0f}/s, lookup {c['vectors'] / look:,.0f}/s, file {c['bytes'] / c['vectors']:.0f} B/vector\n"
            )
        if r["failed"]:
            out += f"failed at {r['speakers']} speakers: {'; '.join(r['failed'])}\n"
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help=f"sizes {QUICK} (default {FULL})")
    ap.add_argument("--sizes", nargs="+", help="SPEAKERS:TRIALS pairs instead")
    ap.add_argument("--boot", type=int, default=1000, help="bootstrap replicates of analyze, report, leaderboard")
    ap.add_argument("--workdir", type=Path, help="where the runs are written (default: a temporary folder)")
    ap.add_argument("--keep", action="store_true", help="keep each size's run directory")
    ap.add_argument("--json", type=Path, help="also write the measurements here")
    ap.add_argument("--skip", nargs="+", default=[], choices=list(GROUPS), help="stage groups left out")
    ap.add_argument("--stage", help=argparse.SUPPRESS)
    ap.add_argument("--dir", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--trials", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.stage:
        print(json.dumps(child(args.stage, args.dir, args.trials, args.boot)))
        return 0
    sizes = [tuple(int(x) for x in s.split(":")) for s in args.sizes] if args.sizes else (QUICK if args.quick else FULL)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench-scale-"))
    preflight(work, sizes)
    print(f"machine: {machine()}", flush=True)
    results = []
    for s, n in sizes:
        t = time.perf_counter()
        results.append(run_size(work, s, n, args.boot, args.keep, tuple(args.skip)))
        print(f"  {s} speakers, {n} trials: {time.perf_counter() - t:.0f} s", file=sys.stderr, flush=True)
        if args.json:
            args.json.write_text(json.dumps(results, indent=1))
    print(tables(results, args.boot, max(2, sum(1 for size in sizes if size != VOXCELEB1_H))))
    if not args.workdir and not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if any(r["failed"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
