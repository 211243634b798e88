"""Track 2 of the ADD 2023 tracks experiments (manipulated-region location), registered as a
:class:`~interbias.cm.track_base.Track` beside Track 3 (:mod:`interbias.cm.track3`).

Settings: ``model`` = ``LCNN-LFCC-frames``, ``train`` = ``{config, set}`` as ``cm train``,
``threshold`` and ``min_region_s`` of :class:`~interbias.cm.lcnn_frames.RegionRule`,
``resolution`` of ``cm-eval location`` (default ``0.01`` s frames). The frame detector is
trained with ``cm train``'s loop into ``<cache>/cm-tracks/<label>-<hash>/`` (the hash covers
the training manifest and settings; a rerun resumes or reuses it), each cell's eval utterances
are located (:mod:`interbias.cm.regions`) and scored against the reference segments
(``cm-eval location``: 0.3 × sentence accuracy + 0.7 × segment F1). Files in the run
directory: ``track2/reference_eval.txt``, ``track2/<cell>.txt`` (the segment files),
``track2/training.json``.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

from interbias.cm.track_base import Track, TrackContext, TrackResult, cell_rows, register_track, safe
from interbias.utils import atomic
from interbias.utils.errors import ConfigError
from interbias.utils.seeding import canonical_json, sha256_file, sha256_text

SAMPLE_RATE_HZ = 16000
TRACK2_KEYS = ("track", "model", "train", "threshold", "min_region_s", "resolution")


def check_track2(spec: dict[str, Any], where: str) -> None:
    """Unknown keys, one line."""
    unknown = sorted(set(spec) - set(TRACK2_KEYS))
    if unknown:
        raise ConfigError(f"{where}: tracks: track 2: unknown key {unknown[0]!r}; valid: {', '.join(TRACK2_KEYS)}")


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


register_track(Track(2, run_track2, check_track2, model="LCNN-LFCC-frames", does="locates the fake regions of"))
