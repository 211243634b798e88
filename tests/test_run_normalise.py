"""The score-normalisation cohort's audio is part of the run id: other bytes at one cohort
utterance's path make a new run directory; the same audio resumes the same one."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import soundfile as sf
from conftest import tiny_experiment
from run_helpers import isolated_cache, manifest_file

from interbias.run.conductor import RunOptions, run

NORM_TRIALS = {"targets": 30, "min_speakers": 4, "speakers_per_stratum": 4}
SCORING = {"norm": "as-norm", "top_k": 3, "cohort": {"speakers": 4, "utterances_per_speaker": 2}}


def test_cohort_audio_bytes_change_the_run_id(tmp_path: Path, tiny_corpus, session_cache) -> None:
    manifest = manifest_file(tiny_corpus, tmp_path / "data", copy_audio=True)
    exp = tiny_experiment(tmp_path, name="T31", corpus={"manifest": str(manifest)}, trials=NORM_TRIALS, scoring=SCORING)
    opts = RunOptions(
        experiment=str(exp), encoders=["mfcc-stats"], out=tmp_path / "r", quiet=True, command=["test"],
        cache_dir=isolated_cache(tmp_path, session_cache),
    )  # fmt: skip
    first = run(opts)
    again = run(opts)  # nothing changed: the same run id, every cell reused
    assert again.run_dir == first.run_dir and again.n_embedded == 0
    cohort = json.loads((first.run_dir / "run.json").read_text())["scoring"]["cohort"]["utterances"]
    trials = pd.read_parquet(first.run_dir / "trials.parquet")
    uid = cohort[0]
    assert uid not in set(trials.enrol) | set(trials.test)  # a cohort utterance only
    path = tmp_path / "data" / pd.read_csv(manifest).set_index("id").path[uid]
    x, rate = sf.read(path, dtype="float32")
    sf.write(path, x[::-1].copy(), rate, format="FLAC")  # same path, new content
    changed = run(opts)
    assert changed.run_dir != first.run_dir
    assert changed.run_dir.name.split("-")[0] == first.run_dir.name.split("-")[0] == "T31"
    assert sorted(p.name for p in (tmp_path / "r").iterdir() if p.is_dir()) == sorted(
        [first.run_dir.name, changed.run_dir.name]
    )
