"""ADD 2023 Track 3 in a ``tracks:`` experiment (E23): open-set algorithm recognition per cell of
the experiment's codec × noise grid, pooled and by gender.

Settings of a ``- track: 3`` item (:data:`TRACK3_KEYS`): ``unknown`` (the algorithm(s) held out
of training, required), ``model`` (a ``ResNet18-<frontend>`` or ``LCNN-<frontend>`` CM, default
``ResNet18-lfcc``), ``train`` (``{config, set}`` as ``cm train``), ``threshold`` (both
recognisers' rejection threshold, default 0.5), ``tail_size`` and ``alpha`` (OpenMax), and
``corpus`` (options laid over the experiment corpus's, e.g. ``{track: 3}`` for ``add2023``).

The manifest: for the corpus ``synthetic``, the offline CM corpus the HAD-style corpus is built
from (:meth:`interbias.corpora.had.HADSpec.cm_spec`: fully fake proxy TTS/VC utterances, the
same talkers); any other corpus through its adapter with the item's ``corpus`` options. A
manifest without algorithm labels (no spoof with an ``attack``) is refused in one line.

The recogniser (:mod:`interbias.cm.recognition`) is trained or reused in
``<cache>/cm-tracks/<model>-recognition-<hash>/`` (the hash covers the manifest, model, unknown
classes and training settings). Each cell's chain is applied to the eval audio as Track 2 does
(:func:`interbias.cm.scoring.degrade`); ``track3/<cell>/`` gets the label files of
:func:`interbias.cm.recognition.write_recognition` (``interbias scores cm-eval recognition``'s format).
Rows of ``results.csv``: per recogniser (``softmax``, ``openmax``), cell and group (``all``,
``gender=<g>``) the macro precision, recall and F1 over the known classes (``score`` = F1).
"""

from __future__ import annotations

import dataclasses
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

from interbias.cm.track_base import Track, TrackContext, TrackResult, cell_rows, register_track, safe
from interbias.utils import atomic
from interbias.utils.errors import ConfigError
from interbias.utils.seeding import canonical_json, sha256_file, sha256_text

TRACK3_KEYS = ("track", "unknown", "model", "train", "threshold", "tail_size", "alpha", "corpus")
RECOGNISERS = ("softmax", "openmax")


def check_track3(spec: dict[str, Any], where: str) -> None:
    """Unknown keys and a missing ``unknown`` list, one line each."""
    bad = sorted(set(spec) - set(TRACK3_KEYS))
    if bad:
        raise ConfigError(f"{where}: tracks: track 3: unknown key {bad[0]!r}; valid: {', '.join(TRACK3_KEYS)}")
    unk = spec.get("unknown")
    if not isinstance(unk, list) or not unk:
        raise ConfigError(f"{where}: tracks: track 3: unknown: needs a list of held-out algorithms, e.g. [A05]")


def track3_manifest(ctx: TrackContext, spec: dict[str, Any]) -> Any:
    """The manifest Track 3 trains and recognises on (module docstring)."""
    from interbias.corpora import load_corpus

    corpus = ctx.exp.corpus
    if corpus.name == "synthetic" and not corpus.manifest:
        from interbias.corpora.cm_corpus import build_cm_corpus
        from interbias.corpora.had import had_spec

        opts = {**corpus.options, **(spec.get("corpus") or {})}
        manifest = build_cm_corpus(ctx.cache, had_spec(opts).cm_spec(), reporter=ctx.reporter)
    elif spec.get("corpus"):
        merged = dataclasses.replace(corpus, options={**corpus.options, **spec["corpus"]})
        manifest = load_corpus(merged, cache=ctx.cache, reporter=ctx.reporter)
    else:
        manifest = ctx.manifest
    check_algorithm_labels(manifest)
    return manifest


def check_algorithm_labels(manifest: Any) -> None:
    """Refuse a manifest without algorithm labels (no spoof with an ``attack``), or with a spoof
    that lacks one (:func:`interbias.cm.recognition.check_algorithms`)."""
    from interbias.cm.recognition import check_algorithms

    if not any(u.get("label") == "spoof" and u.get("attack") for u in manifest):
        raise ConfigError(
            f"tracks: track 3: manifest {manifest.name!r} has no algorithm labels (no spoof with an attack); "
            "Track 3 needs them (for add2023 give the item corpus: {track: 3})"
        )
    check_algorithms(manifest)


def train_track3(ctx: TrackContext, spec: dict[str, Any], manifest: Any) -> tuple[Path, dict[str, Any]]:
    """Train (or resume / reuse) the recogniser on the known algorithms of train and dev."""
    from interbias.cm.recognition import train_recogniser

    model = str(spec.get("model", "ResNet18-lfcc"))
    train = dict(spec.get("train") or {})
    preset = str(train.get("config", "small"))
    settings = {str(k): str(v) for k, v in (train.get("set") or {}).items()}
    unknown = [str(x) for x in spec["unknown"]]
    key = sha256_text(canonical_json([manifest.sha256(), model, unknown, preset, settings]))[:12]
    out = ctx.cache / "cm-tracks" / f"{model}-recognition-{key}"
    info = train_recogniser(
        manifest, unknown, out, label=model, preset=preset, settings=settings, reporter=ctx.reporter, log=ctx.log
    )
    return out, info


def score_groups(table: pd.DataFrame, classes: tuple[str, ...], genders: dict[str, Any]) -> list[dict[str, Any]]:
    """Macro scores per recogniser, pooled (``all``) and per gender, over ``table``'s utterances."""
    from interbias.cm.openset import UNKNOWN
    from interbias.metrics.cm import open_set_f1

    ref = [t if t in classes else UNKNOWN for t in table["truth"]]
    groups: dict[str, list[int]] = {"all": list(range(len(table)))}
    for i, uid in enumerate(table["id"]):
        if genders.get(uid):
            groups.setdefault(f"gender={genders[uid]}", []).append(i)
    rows = []
    for key in RECOGNISERS:
        pred = table[key].tolist()
        for name, idx in groups.items():
            res = open_set_f1([ref[i] for i in idx], [pred[i] for i in idx], list(classes))
            rows.append({"recogniser": key, "group": name, "n_utterances": res.n_samples,
                         "n_unknown": res.n_unknown, "macro_precision": res.precision,
                         "macro_recall": res.recall, "macro_f1": res.f1, "score": res.f1})  # fmt: skip
    return rows


def run_track3_cells(ctx: TrackContext, spec: dict[str, Any]) -> TrackResult:
    """Track 3 (module docstring)."""
    from interbias.cm.frontends import cm_frontend
    from interbias.cm.recognition import algorithm, load_recogniser, recognise, write_recognition
    from interbias.cm.scoring import degrade

    manifest = track3_manifest(ctx, spec)
    folder, info = train_track3(ctx, spec, manifest)
    alpha = None if spec.get("alpha") is None else int(spec["alpha"])
    threshold, tail = float(spec.get("threshold", 0.5)), int(spec.get("tail_size", 20))
    rec = load_recogniser(folder, threshold=threshold, tail_size=tail, alpha=alpha)
    out = ctx.folder / "track3"
    out.mkdir(exist_ok=True)
    atomic.write_text(out / "training.json", (folder / "training.json").read_text(encoding="utf-8"))
    ev = sorted((u for u in manifest if u.get("split") == "eval"), key=lambda u: u.id)
    by_id, genders = manifest.by_id(), {u.id: u.gender for u in ev}
    rows, failed = [], {}
    cells = ctx.exp.cells()
    key = {"checkpoint_sha256": sha256_file(folder / "checkpoint.pt"), "threshold": threshold, "tail_size": tail,
           "alpha": alpha, "manifest_sha256": manifest.sha256()}  # fmt: skip

    def score(cell: Any) -> tuple[list[dict], list[str]]:
        cw = degrade(manifest, ev, cell.test_chain, ctx.cache, cm_frontend(ctx.exp))
        table = recognise(rec, cw.ids, cw.waves, [algorithm(by_id[i]) for i in cw.ids])
        write_recognition(out / safe(cell.id), table, rec.softmax.classes)
        groups = score_groups(table, rec.softmax.classes, genders)
        return [{"track": 3, "model": rec.label, "cell": cell.id, **r} for r in groups], cw.failed

    with ctx.reporter.task(f"{ctx.exp.name}: track 3, {len(cells)} cell(s)", len(cells)) as advance:
        for cell in cells:
            cell_result, failed[cell.id] = cell_rows(ctx, "track3", cell.id, key, partial(score, cell))
            rows.extend(cell_result)
            advance(1)
    record = {"model": rec.label, "checkpoint": str(folder / "checkpoint.pt"), "manifest": manifest.name,
              "manifest_sha256": manifest.sha256(), "known": list(rec.softmax.classes),
              "unknown": [str(x) for x in spec["unknown"]], "threshold": threshold, "tail_size": tail,
              "alpha": rec.openmax.alpha, "epochs_done": info.get("epochs_done"), "best_epoch": info.get("best_epoch"),
              "n_failed": {k: len(v) for k, v in failed.items()}, "failed_first": {k: v[:5] for k, v in failed.items() if v}}  # fmt: skip
    n_failed = sum(len(v) for v in failed.values())
    return TrackResult(rows, track3_section(rows, record), record, len(ev) * len(cells) - n_failed, n_failed)


def track3_section(rows: list[dict[str, Any]], record: dict[str, Any]) -> list[str]:
    """The report section: macro-F1 per recogniser × cell, pooled and by gender."""
    frame = pd.DataFrame(rows)
    wide = frame.pivot(index=["recogniser", "cell"], columns="group", values="macro_f1").reset_index()
    groups = [c for c in wide.columns if c not in ("recogniser", "cell")]
    lines = [
        "## Track 3: open-set algorithm recognition (macro-F1 over the known classes)",
        "",
        f"Recogniser {record['model']} trained on {record['manifest']} without {', '.join(record['unknown'])} "
        f"(known: {', '.join(record['known'])}), best epoch {record['best_epoch']} of {record['epochs_done']}; "
        f"softmax with threshold {record['threshold']:g} and OpenMax (tail {record['tail_size']}, alpha "
        f"{record['alpha']}); the held-out algorithm should be labelled unknown. On the offline proxy corpus "
        "these numbers check the pipeline; they are not findings.",
        "",
        "| recogniser | cell | " + " | ".join(groups) + " |",
        "|---" * (len(groups) + 2) + "|",
    ]
    for _, r in wide.iterrows():
        lines.append(f"| {r['recogniser']} | {r['cell']} | " + " | ".join(f"{r[c]:.3f}" for c in groups) + " |")
    return lines


register_track(Track(3, run_track3_cells, check_track3, model="ResNet18-lfcc", does="recognises the algorithm of"))
