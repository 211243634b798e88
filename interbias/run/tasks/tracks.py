"""The run of ADD 2023 track experiments (``tracks:`` in an experiment YAML, e.g. E23): train or load each
track's small detector on the corpus's train/dev splits, then score every eval utterance through
each cell's operator chain (test side) and write the track's metric per cell, pooled and by
gender.

The YAML's ``tracks`` entry is a list; each item names ``track`` and that track's settings.
A track runs through its :class:`~interbias.cm.track_base.Track` in
:data:`~interbias.cm.track_base.TRACKS` (Track 2: :mod:`interbias.cm.track2`, manipulated-region
location; Track 3: :mod:`interbias.cm.track3`, open-set algorithm recognition; another track
with :func:`~interbias.cm.track_base.register_track`); a track with none registered is refused
in one line. A runner takes the :class:`~interbias.cm.track_base.TrackContext` and its settings
and returns a :class:`~interbias.cm.track_base.TrackResult` (rows for ``results.csv`` and lines
for the report section). The corpus ``synthetic`` means its HAD-style form (``synthetic-had``,
proxies: numbers on it check the pipeline, they are not findings).

Run directory ``<out>/<experiment>-tracks-<hash>/`` (locked while the run works): per track and
cell its rows and completion record (``scores/track<N>/<cell>.parquet``,
``cells/track<N>/<cell>.json``; a rerun reuses a cell finished with the same detector, see
:func:`interbias.cm.track_base.cell_rows`), ``results.csv`` (one row per track × cell ×
group), each track's own files (``track2/``, ``track3/``), ``tracks_report.md``, ``run.json``
(with packages and hardware). The run frame (:mod:`interbias.run.frame`) opens and locks the
directory and writes results.csv and run.json.

``interbias validate`` counts what the run scores (:func:`tracks_estimate`): each track trains
its detector on the train and dev splits (once; a rerun reuses it), then scores every eval
utterance in every cell; track scorings = eval × cells, per track. Track 3 reads its own
manifest when the item names ``corpus`` options, or when the corpus is ``synthetic`` (the
offline CM corpus). A manifest is read when it is here (a ``manifest:`` file, or the offline
corpus already built in the cache); otherwise the estimate states the rule. No time is estimated.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

import interbias.cm.track2  # registers Track 2
import interbias.cm.track3  # noqa: F401 - registers Track 3
from interbias.cm.track_base import TRACKS, TrackContext
from interbias.run.estimate import Estimate
from interbias.run.frame import RunEnd, RunOutcome, cache_of, finish, header, loaded, opened, seconds_since
from interbias.run.results import base_record, content_run_id
from interbias.run.tasks.base import (
    NO_TIME,
    Task,
    base_estimate,
    built_manifest,
    check_own_data,
    manifest_here,
    runs_here_text,
    split_counts,
)
from interbias.utils import atomic
from interbias.utils.errors import ConfigError
from interbias.utils.progress import Reporter

if TYPE_CHECKING:
    from interbias.corpora.manifest import Manifest
    from interbias.experiments.schema import Experiment
    from interbias.run.inputs import RunOptions

#: The report a tracks run writes itself (``interbias run`` points to it).
REPORT = "tracks_report.md"

RESULT_COLUMNS = (
    "track", "model", "cell", "group", "n_utterances", "n_fake", "sentence_accuracy", "segment_precision",
    "segment_recall", "segment_f1", "score", "resolution",
)  # fmt: skip


def tracks_spec(exp: Experiment) -> list[dict[str, Any]]:
    """The validated ``tracks`` list (module docstring)."""
    where = exp.path.name if exp.path else exp.name
    if exp.tracks is None:
        raise ConfigError(f"{where}: tracks: needs a list of {{track: N, ...}} items")
    raw = [item.as_dict() for item in exp.tracks.items]
    for t in raw:
        if int(t["track"]) not in TRACKS:
            raise ConfigError(
                f"{where}: tracks: track {t['track']} has no runner here (registered: "
                f"{', '.join(map(str, sorted(TRACKS)))}); see interbias.cm.track_base.register_track"
            )
        TRACKS[int(t["track"])].check(t, where)
    if len(exp.factors) != 2 or len(exp.acoustic_factors) != 2:
        raise ConfigError(f"{where}: a tracks experiment has two acoustic factors applied to the test side")
    return [dict(t) for t in raw]


def track_manifest(exp: Experiment, options: RunOptions, cache: Path, reporter: Reporter) -> Manifest:
    """``synthetic`` → its HAD-style form; any other corpus through its adapter."""
    from interbias.corpora import load_corpus

    if exp.corpus.name == "synthetic" and not exp.corpus.manifest:
        from interbias.corpora.had import prepare_synthetic_had

        return prepare_synthetic_had(None, cache, dict(exp.corpus.options), reporter)
    return load_corpus(exp.corpus, root=options.corpus_root, cache=cache, reporter=reporter)


def run(options: RunOptions, reporter: Reporter | None = None, *, exp: Experiment | None = None) -> RunOutcome:
    """``interbias run`` of a tracks experiment (``RunOptions`` in, ``RunOutcome`` out): run
    directory ``<experiment>-tracks-<hash>`` (:func:`interbias.run.results.content_run_id`; the
    hash covers the resolved experiment and the manifest), locked while the run works."""
    from interbias.corpora.cm_corpus import check_cm_manifest

    t0 = time.perf_counter()
    reporter = reporter or Reporter(quiet=options.quiet)
    exp = loaded(options, exp)
    specs = tracks_spec(exp)
    cache = cache_of(options)
    manifest = track_manifest(exp, options, cache, reporter)
    check_cm_manifest(manifest)
    run_id = content_run_id(f"{exp.name}-tracks", [exp.resolved(), manifest.sha256()])
    with opened(Path(options.out) / run_id, reporter) as run_dir:
        ctx = TrackContext(exp, manifest, cache, run_dir.path, reporter, reporter.info, cells=run_dir)
        results = [TRACKS[int(s["track"])].run(ctx, s) for s in specs]
        rows = [r for res in results for r in res.rows]
        frame = pd.DataFrame(rows, columns=list(dict.fromkeys([*RESULT_COLUMNS, *(k for r in rows for k in r)])))
        report = [f"# {exp.name}: {exp.title}", "", f"Question: {exp.question}", ""]
        for res in results:
            report += res.report + [""]
        atomic.write_text(run_dir.file(REPORT), "\n".join(report).rstrip() + "\n")
        record = lambda _: base_record(  # noqa: E731 - run.json once the rows are written
            header=header(run_id, options.command),
            exp=exp,
            extra={
                "manifest_sha256": manifest.sha256(), "tracks": {str(s["track"]): r.record for s, r in zip(specs, results, strict=True)},
                "n_failures": sum(r.n_failed for r in results), "seconds": seconds_since(t0),
            },
        )  # fmt: skip
        finish(run_dir, RunEnd("tracks", run_dir, [], results=frame), options.after_run, record)
    return RunOutcome(run_dir.path, frame, sum(r.n_scored for r in results), 0, 0, [], report=run_dir.file(REPORT))


#: The name this conductor had before the run tasks (kept for callers of the old name).
run_tracks_experiment = run


# ---- validate: what the run scores ------------------------------------------------------------


def tracks_estimate(exp: Experiment, cache: Path) -> Estimate:
    """What a tracks run of ``exp`` scores (module docstring)."""
    from interbias.corpora.cm_corpus import check_cm_manifest
    from interbias.corpora.had import had_corpus_folder, had_spec
    from interbias.run.preflight import availability

    specs = tracks_spec(exp)
    cells = exp.cells()
    est = base_estimate(exp, "tracks", len(cells))
    est.n_rows = None  # one row per track × cell × group: the groups are known only from the data
    est.runs_here = runs_here_text(availability(exp), [])
    numbers = ", ".join(str(s["track"]) for s in specs)
    est.headline = (
        f"{est.label}: corpus {est.corpus}, tracks experiment: track(s) {numbers} × {len(cells)} cells; {est.runs_here}"
    )
    had = lambda o: ("synthetic-had", had_corpus_folder(cache, had_spec(o)))  # noqa: E731
    manifest, est.utterances_from = manifest_here(exp.corpus, cache, {"synthetic": had, "synthetic-had": had})
    if manifest is not None:
        check_cm_manifest(manifest)
    total: int | None = 0
    for s in specs:
        own, where = track_manifest_here(exp, s, manifest, est.utterances_from, cache)
        line, n = track_line(s, own, where, len(cells))
        est.work.append(line)
        total = None if n is None or total is None else total + n
    est.n_scorings = total
    est.notes.append(NO_TIME)
    return est


def track_manifest_here(
    exp: Experiment, spec: dict[str, Any], manifest: Manifest | None, where: str, cache: Path
) -> tuple[Manifest | None, str]:
    """The manifest a track item trains and scores on (Track 3's own, see
    :func:`interbias.cm.track3.track3_manifest`), as far as it is here; checked as the run checks it."""
    from interbias.cm.track3 import check_algorithm_labels
    from interbias.corpora.cm_corpus import cm_corpus_folder
    from interbias.corpora.had import had_spec

    if int(spec["track"]) != 3:
        return manifest, where
    corpus, extra = exp.corpus, dict(spec.get("corpus") or {})
    if corpus.name == "synthetic" and not corpus.manifest:
        folder = cm_corpus_folder(cache, had_spec({**corpus.options, **extra}).cm_spec())
        manifest, where = built_manifest(folder, "synthetic-cm")
    elif extra:
        merged = dataclasses.replace(corpus, options={**corpus.options, **extra})
        manifest, where = manifest_here(merged, cache, {})
    if manifest is not None:
        check_algorithm_labels(manifest)
    return manifest, where


def track_line(spec: dict[str, Any], manifest: Manifest | None, where: str, n_cells: int) -> tuple[str, int | None]:
    """One line for a track item and its scorings (None when the manifest is not here)."""
    track = TRACKS[int(spec["track"])]
    model = str(spec.get("model", track.model))
    if manifest is None:
        return (
            f"  track {track.number} ({model}): unknown ({where}); trains on the train and dev splits, then "
            f"{track.does} every eval utterance in each of {n_cells} cells"
        ), None
    n = split_counts(manifest)
    scorings = n["eval"] * n_cells
    return (
        f"  track {track.number} ({model}): trains on {n['train']} train + {n['dev']} dev utterances (once; a rerun "
        f"reuses it), then {track.does} {n['eval']} eval utterances in each of {n_cells} cells = {scorings} "
        f"scorings ({where})"
    ), scorings


class TracksTask(Task):
    """Experiments with a ``tracks:`` section: the ADD 2023 tracks per cell."""

    kind = "tracks"

    def check(self, exp: Experiment, options: RunOptions) -> Experiment:
        return check_own_data(exp, options)

    def estimate(self, exp: Experiment, encoders: Sequence[str], cache: Path) -> Estimate:
        return tracks_estimate(exp, cache)

    def run(self, options: RunOptions, reporter: Reporter | None, exp: Experiment) -> RunOutcome:
        return run(options, reporter, exp=exp)


TRACKS_TASK = TracksTask()
