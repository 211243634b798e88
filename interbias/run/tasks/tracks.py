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
(with packages and hardware).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pandas as pd

import interbias.cm.track2  # registers Track 2
import interbias.cm.track3  # noqa: F401 - registers Track 3
from interbias.cm.track_base import TRACKS, TrackContext
from interbias.run.conductor import RunOutcome
from interbias.run.lock import RunLock
from interbias.run.results import content_run_id, hardware, package_versions, revision
from interbias.run.rundir import RESULTS, RunDir
from interbias.utils import atomic
from interbias.utils.errors import ConfigError
from interbias.utils.progress import Reporter

#: The report a tracks run writes itself (``interbias run`` points to it).
REPORT = "tracks_report.md"

RESULT_COLUMNS = (
    "track", "model", "cell", "group", "n_utterances", "n_fake", "sentence_accuracy", "segment_precision",
    "segment_recall", "segment_f1", "score", "resolution",
)  # fmt: skip


def tracks_spec(exp: Any) -> list[dict[str, Any]]:
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
        results = [TRACKS[int(s["track"])].run(ctx, s) for s in specs]
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
