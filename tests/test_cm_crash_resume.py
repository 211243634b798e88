"""kill -9 of a countermeasure run (and of a tracks run) between cells, then the same command
again: the rerun takes over the run lock, reuses the finished cells (their completion records)
and scores only the rest, and every output is byte-identical to an uninterrupted run; run.json
records packages and hardware."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from cm_fixtures import TRACK_FACTORS, cm_manifest
from run_helpers import only_run_dir, run_child
from test_cm_tracks import YAML as TRACKS_YAML

from interbias.cm.train import train_model
from interbias.corpora.had import HADSpec, write_had

TINY = {"duration_s": "0.5", "width": "4", "max_epochs": "1", "batch_size": "4", "lr": "0.01"}
YAML = """name: K91
title: tiny CM experiment, killed between cells
use: descriptive
corpus: {{name: manifest, manifest: {manifest}}}
countermeasures: {{models: [ResNet18-logspec], bootstrap: 10}}
"""


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cmcrash")
    m = cm_manifest(tmp / "data", per_class=3)
    mp = pytest.MonkeyPatch()
    mp.setenv("INTERBIAS_MODELS", str(tmp / "models"))
    train_model("ResNet18-logspec", m, settings=dict(TINY), log=lambda s: None)
    exp = tmp / "K91.yaml"
    exp.write_text(YAML.format(manifest=tmp / "data" / "manifest.csv") + TRACK_FACTORS)
    yield tmp, exp
    mp.undo()


def _run(tmp: Path, exp: Path, out: Path, crash: str | None = None, cache: Path | None = None, quiet: bool = True):
    env = {"INTERBIAS_MODELS": str(tmp / "models"), **({"INTERBIAS_CRASH_AT": crash} if crash else {})}
    cache = cache or out.parent / f"{out.name}-cache"
    args = ["run", str(exp), "--out", str(out), "--cache-dir", str(cache)]
    return run_child([*args, "-q"] if quiet else args, env=env)


def _files(run_dir: Path) -> dict[str, bytes]:
    """Every output of the run but run.json (timings) and the lock file."""
    return {
        str(p.relative_to(run_dir)): p.read_bytes()
        for p in sorted(run_dir.rglob("*"))
        if p.is_file() and p.name not in ("run.json", ".lock")
    }


@pytest.mark.slow  # 17 s; test_crash_resume kills runs in make test
def test_killed_cm_run_resumes_by_cell_to_byte_identical_outputs(setup, tmp_path):
    tmp, exp = setup
    ref = _run(tmp, exp, tmp_path / "ref")
    assert ref.returncode == 0, ref.stderr[-2000:]
    ref_dir = only_run_dir(tmp_path / "ref")

    killed = _run(tmp, exp, tmp_path / "out", crash="cell-done@2")  # killed after its second cell
    assert killed.returncode == -signal.SIGKILL, (killed.returncode, killed.stderr[-2000:])
    run_dir = only_run_dir(tmp_path / "out")
    assert run_dir.name == ref_dir.name
    assert len(list((run_dir / "cells").rglob("*.json"))) == 2 and not (run_dir / "results.csv").exists()

    again = _run(tmp, exp, tmp_path / "out", quiet=False)
    assert again.returncode == 0, again.stderr[-2000:]
    record = json.loads((run_dir / "run.json").read_text())
    assert record["cells_reused"] == 2
    n_cells = len(list((run_dir / "cells").rglob("*.json")))
    progress = " ".join(again.stderr.split())  # the progress line counts only the cells left to score
    assert f"K91: 2 of {n_cells} cell(s) finished earlier (reused)" in progress, progress
    assert f"K91: scoring 1 CM(s): {n_cells - 2} to do" in progress, progress
    assert record["packages"]["interbias"] and record["hardware"]["cpu_count"]
    assert "cells reused 2" in again.stdout
    got, want = _files(run_dir), _files(ref_dir)
    assert sorted(got) == sorted(want) and "cm_tables.csv" in got and "results.csv" in got
    assert [k for k in want if got[k] != want[k]] == []


@pytest.mark.slow
def test_killed_tracks_run_resumes_by_cell_to_byte_identical_outputs(tmp_path):
    write_had(cm_manifest(tmp_path / "data"), tmp_path / "had", HADSpec(min_segment_s=0.05, max_segment_s=0.15))
    exp = tmp_path / "E99.yaml"
    manifest = tmp_path / "had" / "manifest.jsonl"
    exp.write_text(TRACKS_YAML.format(manifest=manifest, resolution="0.01", extra="", factors=TRACK_FACTORS))
    cache = tmp_path / "cache"  # one cache: the detector is trained once, by the first run
    ref = _run(tmp_path, exp, tmp_path / "ref", cache=cache)
    assert ref.returncode == 0, ref.stderr[-2000:]
    ref_dir = only_run_dir(tmp_path / "ref")

    killed = _run(tmp_path, exp, tmp_path / "out", crash="cell-done@2", cache=cache)
    assert killed.returncode == -signal.SIGKILL, (killed.returncode, killed.stderr[-2000:])
    run_dir = only_run_dir(tmp_path / "out")
    assert len(list((run_dir / "cells").rglob("*.json"))) == 2 and not (run_dir / "results.csv").exists()

    again = _run(tmp_path, exp, tmp_path / "out", cache=cache)
    assert again.returncode == 0, again.stderr[-2000:]
    record = json.loads((run_dir / "run.json").read_text())
    assert record["packages"]["interbias"] and record["hardware"]["cpu_count"]
    got, want = _files(run_dir), _files(ref_dir)
    assert sorted(got) == sorted(want) and "tracks_report.md" in got and len(got) > 10
    # training.json copies the detector's training record, which holds its training times
    assert [k for k in want if got[k] != want[k] and k != "track2/training.json"] == []
