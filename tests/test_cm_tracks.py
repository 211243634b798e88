"""The ADD 2023 tracks conductor: Track 2 end to end on a tiny HAD-style manifest (scores per cell ×
group recomputed from the written segment files), an unregistered track refused in one line, dispatch."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from cm_fixtures import TRACK_FACTORS, cm_manifest

from interbias.analysis.security.cm import location_scores, read_segment_labels
from interbias.cm.track_base import TRACKS, safe
from interbias.corpora.had import HADSpec, write_had
from interbias.experiments.schema import load_experiment
from interbias.run.inputs import RunOptions
from interbias.run.tasks.tracks import run_tracks_experiment
from interbias.utils.errors import ConfigError

YAML = """name: E99
title: tiny tracks
question: "Does the tracks conductor run?"
use: descriptive
corpus: {{name: tiny-had, manifest: {manifest}}}
tracks:
  - track: 2
    train: {{config: small, set: {{duration_s: 0.5, width: 4, max_epochs: 2, batch_size: 4, lr: 0.01}}}}
    threshold: 0.5
    min_region_s: 0.02
    resolution: {resolution}
{extra}{factors}"""


def _exp(tmp_path: Path, manifest: Path, resolution: str = "0.01", extra: str = ""):
    path = tmp_path / "E99.yaml"
    path.write_text(YAML.format(manifest=manifest, resolution=resolution, extra=extra, factors=TRACK_FACTORS))
    return load_experiment(path)


def _options(tmp_path: Path):
    return RunOptions(experiment="E99", corpus=None, corpus_root=None, cache_dir=str(tmp_path / "cache"),
                           out=str(tmp_path / "runs"), quiet=True, command=["interbias", "run"])  # fmt: skip


def test_track2_end_to_end_scores_match_the_segment_files(tmp_path):
    had = write_had(cm_manifest(tmp_path / "data"), tmp_path / "had", HADSpec(min_segment_s=0.05, max_segment_s=0.15))
    exp = _exp(tmp_path, tmp_path / "had" / "manifest.jsonl")
    out = run_tracks_experiment(_options(tmp_path), exp=exp)
    res = pd.read_csv(out.run_dir / "results.csv")
    assert len(res) == 4 * 3 and set(res["group"]) == {"all", "gender=female", "gender=male"}
    assert (res["track"] == 2).all() and (res["resolution"].astype(str) == "0.01").all()
    assert res["score"].to_numpy() == pytest.approx(0.3 * res["sentence_accuracy"] + 0.7 * res["segment_f1"])
    ref = read_segment_labels(out.run_dir / "track2" / "reference_eval.txt", reference=True)
    evals = {u.id: u for u in had if u.get("split") == "eval"}
    assert set(ref) == set(evals)
    for cell in res["cell"].unique():
        pred = read_segment_labels(out.run_dir / "track2" / f"{safe(cell)}.txt", reference=False)
        for group, ids in (("all", list(ref)), ("gender=female", [i for i in ref if evals[i].gender == "female"])):
            want = location_scores({i: ref[i] for i in ids}, {i: pred[i] for i in ids}, resolution_s=0.01)
            row = res[(res["cell"] == cell) & (res["group"] == group)].iloc[0]
            assert row["score"] == pytest.approx(want.score) and row["n_utterances"] == len(ids)
    assert "## Track 2" in (out.run_dir / "tracks_report.md").read_text()
    assert out.n_embedded == 4 * len(evals) and json.loads((out.run_dir / "run.json").read_text())["n_failures"] == 0
    from interbias.cli.run import closing

    info = closing(out, 1.0)
    assert info["failed_utterances"] == 0 and info["next"] == f"read {out.run_dir / 'tracks_report.md'}"


@pytest.mark.slow
def test_a_second_run_reuses_the_detector_and_writes_the_same_scores(tmp_path):
    write_had(cm_manifest(tmp_path / "data"), tmp_path / "had", HADSpec(min_segment_s=0.05, max_segment_s=0.15))
    exp = _exp(tmp_path, tmp_path / "had" / "manifest.jsonl")
    first = pd.read_csv(run_tracks_experiment(_options(tmp_path), exp=exp).run_dir / "results.csv")
    (ckpt,) = (tmp_path / "cache" / "cm-tracks").glob("*/checkpoint.pt")
    stamp = ckpt.stat().st_mtime_ns
    again = run_tracks_experiment(_options(tmp_path), exp=exp)
    pd.testing.assert_frame_equal(pd.read_csv(again.run_dir / "results.csv"), first)
    assert ckpt.stat().st_mtime_ns == stamp  # trained once: the second run resumed past the last epoch


def test_unregistered_track_and_bad_settings_are_one_line(tmp_path):
    assert set(TRACKS) == {2, 3}  # each track registers itself (interbias.cm.track2, interbias.cm.track3)
    exp = _exp(tmp_path, tmp_path / "m.jsonl", extra="  - track: 4\n")
    with pytest.raises(
        ConfigError, match=r"track 4 has no runner here \(registered: 2, 3\); see interbias.cm.track_base"
    ):
        run_tracks_experiment(_options(tmp_path), exp=exp)
    exp = _exp(tmp_path, tmp_path / "m.jsonl", extra="    window: 3\n")
    with pytest.raises(ConfigError, match="track 2: unknown key 'window'; valid: track, model"):
        run_tracks_experiment(_options(tmp_path), exp=exp)


def test_run_dispatches_a_tracks_experiment(tmp_path):
    from interbias.run.tasks import TASKS, task_of
    from interbias.run.tasks.tracks import TRACKS_TASK

    exp = _exp(tmp_path, tmp_path / "m.jsonl")
    assert task_of(exp) is TRACKS_TASK is TASKS.get("tracks") and not TRACKS_TASK.embeds
