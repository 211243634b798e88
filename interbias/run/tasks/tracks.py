"""The run of ADD 2023 track experiments (``tracks:`` in an experiment YAML, e.g. E23): train or load each
track's small detector on the corpus's train/dev splits, then score every eval utterance through
each cell's operator chain (test side) and write the track's metric per cell, pooled and by
gender.

The YAML's ``tracks`` entry is a list; each item names ``track`` and that track's settings.
A track runs through :data:`TRACK_RUNNERS` (``track number → runner(ctx, settings)``); a track
with no runner registered is refused in one line. A runner takes the :class:`TrackContext`
and its settings and returns a :class:`TrackResult` (rows for ``results.csv`` and lines for the
report section); Track 2 and Track 3 (:mod:`interbias.cm.track3`, open-set algorithm
recognition) are registered here, another track with :func:`register_track`.

**Track 2** (:func:`run_track2`; settings ``model`` = ``LCNN-LFCC-frames``, ``train`` =
``{config, set}`` as ``cm train``, ``threshold`` and ``min_region_s`` of
:class:`~interbias.cm.lcnn_frames.RegionRule`, ``resolution`` of ``cm-eval location``, default
``0.01`` s frames): the frame detector is trained with ``cm train``'s loop into
``<cache>/cm-tracks/<label>-<hash>/`` (the hash covers the training manifest and settings; a
rerun resumes or reuses it), each cell's eval utterances are located
(:mod:`interbias.cm.regions`) and scored against the reference segments (``cm-eval location``:
0.3 × sentence accuracy + 0.7 × segment F1). The corpus ``synthetic`` means its HAD-style form
(``synthetic-had``, proxies: numbers on it check the pipeline, they are not findings).

Run directory ``<out>/<experiment>-tracks-<hash>/`` (locked while the run works): per track and
cell its rows and completion record (``scores/track<N>/<cell>.parquet``,
``cells/track<N>/<cell>.json``; a rerun reuses a cell finished with the same detector, see
:func:`interbias.cm.track_base.cell_rows`), ``results.csv`` (one row per track × cell ×
group), ``track2/reference_eval.txt`` and ``track2/<cell>.txt`` (the segment files),
``track2/training.json``, ``track3/<cell>/`` (the label files of ``cm-eval recognition``),
``track3/training.json``, ``tracks_report.md``, ``run.json`` (with packages and hardware).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

from interbias.cm.track3 import check_track3, run_track3_cells
from interbias.cm.track_base import TrackContext, TrackResult, cell_rows, safe
from interbias.run.conductor import RunOutcome
from interbias.run.lock import RunLock
from interbias.run.results import content_run_id, hardware, package_versions, revision
from interbias.run.rundir import RESULTS, RunDir
from interbias.utils import atomic
from interbias.utils.errors import ConfigError
from interbias.utils.progress import Reporter
from interbias.utils.seeding import canonical_json, sha256_file, sha256_text

#: The report a tracks run writes itself (``interbias run`` points to it).
REPORT = "tracks_report.md"

SAMPLE_RATE_HZ = 16000
RESULT_COLUMNS = (
    "track", "model", "cell", "group", "n_utterances", "n_fake", "sentence_accuracy", "segment_precision",
    "segment_recall", "segment_f1", "score", "resolution",
)  # fmt: skip
TRACK2_KEYS = ("track", "model", "train", "threshold", "min_region_s", "resolution")


TRACK_RUNNERS: dict[int, Callable[[TrackContext, dict[str, Any]], TrackResult]] = {}


def register_track(number: int, runner: Callable[[TrackContext, dict[str, Any]], TrackResult]) -> None:
    TRACK_RUNNERS[int(number)] = runner


def tracks_spec(exp: Any) -> list[dict[str, Any]]:
    """The validated ``tracks`` list (module docstring)."""
    where = exp.path.name if exp.path else exp.name
    if exp.tracks is None:
        raise ConfigError(f"{where}: tracks: needs a list of {{track: N, ...}} items")
    raw = [item.as_dict() for item in exp.tracks.items]
    for t in raw:
        if int(t["track"]) not in TRACK_RUNNERS:
            raise ConfigError(
                f"{where}: tracks: track {t['track']} has no runner here (registered: "
                f"{', '.join(map(str, sorted(TRACK_RUNNERS)))}); see interbias.run.tasks.tracks.register_track"
            )
        if int(t["track"]) == 2:
            unknown = sorted(set(t) - set(TRACK2_KEYS))
            if unknown:
                raise ConfigError(
                    f"{where}: tracks: track 2: unknown key {unknown[0]!r}; valid: {', '.join(TRACK2_KEYS)}"
                )
        if int(t["track"]) == 3:
            check_track3(t, where)
    if len(exp.factors) != 2 or len(exp.acoustic_factors) != 2:
        raise ConfigError(f"{where}: a tracks experiment has two acoustic factors applied to the test side")
    return [dict(t) for t in raw]


def track_manifest(exp: Any, options: Any, cache: Path, reporter: Any) -> Any:
    """``synthetic`` → its HAD-style form; any other corpus through its adapter."""
    from interbias.corpora import load_corpus

    if exp.corpus.name == "synthetic" and not exp.corpus.manifest:
        from interbias.corpora.had import prepare_synthetic_had

        return prepare_synthetic_had(None, cache, dict(exp.corpus.options), reporter)
    return load_corpus(exp.corpus, root=options.corpus_root, cache=cache, reporter=reporter)


def run(options: Any, reporter: Reporter | None = None, *, exp: Any = None) -> RunOutcome:
    """``interbias run`` of a tracks experiment (``RunOptions`` in, ``RunOutcome`` out): run
    directory ``<experiment>-tracks-<hash>`` (:func:`interbias.run.results.content_run_id`; the
    hash covers the resolved experiment and the manifest), locked while the run works."""
    from interbias.corpora.cm_corpus import check_cm_manifest
    from interbias.experiments.schema import find_experiment, load_experiment
    from interbias.utils.paths import cache_dir, conditions_dir

    t0 = time.perf_counter()
    reporter = reporter or Reporter(quiet=options.quiet)
    if exp is None:
        exp = load_experiment(find_experiment(options.experiment, conditions_dir()), corpus=options.corpus)
    specs = tracks_spec(exp)
    cache = Path(options.cache_dir or cache_dir())
    manifest = track_manifest(exp, options, cache, reporter)
    check_cm_manifest(manifest)
    run_id = content_run_id(f"{exp.name}-tracks", [exp.resolved(), manifest.sha256()])
    run_dir = RunDir(Path(options.out) / run_id)
    with RunLock(run_dir.path):
        atomic.remove_stale_temps(run_dir.path)
        ctx = TrackContext(exp, manifest, cache, run_dir.path, reporter, reporter.info, cells=run_dir)
        results = [TRACK_RUNNERS[int(s["track"])](ctx, s) for s in specs]
        rows = [r for res in results for r in res.rows]
        frame = pd.DataFrame(rows, columns=list(dict.fromkeys([*RESULT_COLUMNS, *(k for r in rows for k in r)])))
        atomic.write_csv(run_dir.file(RESULTS), frame)
        report = [f"# {exp.name}: {exp.title}", "", f"Question: {exp.question}", ""]
        for res in results:
            report += res.report + [""]
        atomic.write_text(run_dir.file(REPORT), "\n".join(report).rstrip() + "\n")
        record = {
            "run_id": run_id, "revision": revision(), "experiment": exp.resolved(), "command": options.command,
            "manifest_sha256": manifest.sha256(), "tracks": {str(s["track"]): r.record for s, r in zip(specs, results, strict=True)},
            "n_failures": sum(r.n_failed for r in results), "packages": package_versions(), "hardware": hardware(),
            "seconds": round(time.perf_counter() - t0, 2),
        }  # fmt: skip
        run_dir.write_run_json(record)
    return RunOutcome(run_dir.path, frame, sum(r.n_scored for r in results), 0, 0, [], report=run_dir.file(REPORT))


#: The name this conductor had before the run tasks (kept for callers of the old name).
run_tracks_experiment = run


# ---- Track 2 ---------------------------------------------------------------------------------


def train_track2(ctx: TrackContext, spec: dict[str, Any]) -> tuple[Path, dict[str, Any]]:
    """Train (or resume / reuse) the frame detector on the manifest's train and dev splits."""
    from interbias.cm.lcnn_frames import LABEL, train_frames

    model = str(spec.get("model", LABEL))
    if model != LABEL:
        raise ConfigError(f"tracks: track 2: model {model!r}: the region detector here is {LABEL}")
    train = dict(spec.get("train") or {})
    preset = str(train.get("config", "small"))
    settings = {str(k): str(v) for k, v in (train.get("set") or {}).items()}
    key = sha256_text(canonical_json([ctx.manifest.sha256(), preset, settings]))[:12]
    out = ctx.cache / "cm-tracks" / f"{LABEL}-{key}"
    return train_frames(ctx.manifest, preset=preset, settings=settings, out=out, reporter=ctx.reporter, log=ctx.log)


def reference_lines(utts: list[Any]) -> dict[str, str]:
    """Reference segment lines from the manifest's ``fake_regions`` and ``duration_s``."""
    from interbias.corpora.splice import parse_region_attr, segment_line

    out = {}
    for u in utts:
        if u.duration_s is None:
            raise ConfigError(f"tracks: track 2: utterance {u.id} has no duration_s (the reference needs its length)")
        n = int(round(u.duration_s * SAMPLE_RATE_HZ))
        out[u.id] = segment_line(u.id, parse_region_attr(u.get("fake_regions"), u.id), n, SAMPLE_RATE_HZ)
    return out


def score_groups(ref: dict[str, Any], pred: dict[str, Any], utts: list[Any], resolution: float | None) -> list[dict]:
    """Location scores pooled (``all``) and per gender, over the utterances both files hold."""
    from interbias.metrics.cm import location_scores

    groups: dict[str, list[str]] = {"all": [u.id for u in utts if u.id in pred]}
    for u in utts:
        if u.id in pred and u.gender:
            groups.setdefault(f"gender={u.gender}", []).append(u.id)
    rows = []
    for name, ids in groups.items():
        res = location_scores({i: ref[i] for i in ids}, {i: pred[i] for i in ids}, resolution_s=resolution)
        rows.append({"group": name, "n_utterances": res.n_utterances, "n_fake": res.sentence_tp + res.sentence_fn,
                     "sentence_accuracy": res.sentence_accuracy, "segment_precision": res.segment_precision,
                     "segment_recall": res.segment_recall, "segment_f1": res.segment_f1, "score": res.score,
                     "resolution": res.resolution})  # fmt: skip
    return rows


def run_track2(ctx: TrackContext, spec: dict[str, Any]) -> TrackResult:
    """Track 2 (module docstring)."""
    from interbias.cm.frontends import cm_frontend
    from interbias.cm.lcnn_frames import LABEL, RegionRule, load_frame_detector
    from interbias.cm.regions import region_lines
    from interbias.cm.scoring import degrade
    from interbias.metrics.cm import parse_resolution, parse_segment_line

    rule = RegionRule(float(spec.get("threshold", 0.5)), float(spec.get("min_region_s", 0.05))).check()
    resolution = parse_resolution(spec.get("resolution", "0.01"))
    folder, info = train_track2(ctx, spec)
    det = load_frame_detector(folder)
    out = ctx.folder / "track2"
    out.mkdir(exist_ok=True)
    atomic.write_text(out / "training.json", (folder / "training.json").read_text(encoding="utf-8"))
    ev = sorted((u for u in ctx.manifest if u.get("split") == "eval"), key=lambda u: u.id)
    ref_lines = reference_lines(ev)
    atomic.write_text(out / "reference_eval.txt", "".join(ref_lines[u.id] + "\n" for u in ev))
    ref = {i: parse_segment_line(x, where=f"reference {i}", reference=True) for i, x in ref_lines.items()}
    fe = cm_frontend(ctx.exp)
    rows, failed = [], {}
    cells = ctx.exp.cells()
    key = {"checkpoint_sha256": sha256_file(det.checkpoint), "rule": vars(rule), "resolution_s": resolution}

    def score(cell: Any) -> tuple[list[dict], list[str]]:
        cw = degrade(ctx.manifest, ev, cell.test_chain, ctx.cache, fe)
        lines = region_lines(det, list(zip(cw.ids, cw.waves, strict=True)), rule)
        atomic.write_text(out / f"{safe(cell.id)}.txt", "".join(x + "\n" for x in lines))
        pred = {x.split()[0]: parse_segment_line(x, where=cell.id, reference=False) for x in lines}
        return [
            {"track": 2, "model": LABEL, "cell": cell.id, **r} for r in score_groups(ref, pred, ev, resolution)
        ], cw.failed

    with ctx.reporter.task(f"{ctx.exp.name}: track 2, {len(cells)} cell(s)", len(cells)) as advance:
        for cell in cells:
            cell_result, failed[cell.id] = cell_rows(ctx, "track2", cell.id, key, partial(score, cell))
            rows.extend(cell_result)
            advance(1)
    report = track2_section(rows, rule, resolution, info)
    record = {"model": LABEL, "checkpoint": str(det.checkpoint), **det.info, "rule": vars(rule),
              "resolution_s": resolution, "n_failed": {k: len(v) for k, v in failed.items()},
              "failed_first": {k: v[:5] for k, v in failed.items() if v}}  # fmt: skip
    n_failed = sum(len(v) for v in failed.values())
    return TrackResult(rows, report, record, len(ev) * len(cells) - n_failed, n_failed)


def track2_section(rows: list[dict[str, Any]], rule: Any, resolution: float | None, info: dict[str, Any]) -> list[str]:
    """The report section: score per cell, pooled and by gender."""
    frame = pd.DataFrame(rows)
    wide = frame.pivot(index="cell", columns="group", values="score").reset_index()
    res = "continuous seconds" if resolution is None else f"{resolution:g} s frames (centre rule)"
    lines = [
        "## Track 2: manipulated-region location (score = 0.3 × sentence accuracy + 0.7 × segment F1)",
        "",
        f"Detector LCNN-LFCC-frames, best epoch {info.get('best_epoch')} of {info.get('epochs_done')}; frames with "
        f"P(fake) > {rule.threshold:g} in runs of at least {rule.min_frames} frame(s); segment counts at {res}. "
        "On the offline proxy corpus these numbers check the pipeline; they are not findings.",
        "",
        "| cell | " + " | ".join(c for c in wide.columns if c != "cell") + " |",
        "|---" * len(wide.columns) + "|",
    ]
    for _, r in wide.iterrows():
        lines.append(f"| {r['cell']} | " + " | ".join(f"{r[c]:.3f}" for c in wide.columns if c != "cell") + " |")
    return lines


register_track(2, run_track2)
register_track(3, run_track3_cells)
