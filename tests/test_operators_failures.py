"""A real operator failing on some utterances: counted in n_failed, its trials dropped from
that cell only and flagged in the per-trial scores, and the cell errors above the share."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import soundfile as sf
import yaml
from conftest import tiny_experiment

from interbias.run.conductor import RunOptions, run
from interbias.utils.paths import slug
from interbias.utils.seeding import derive_rng


def noisy_experiment(tmp_path: Path) -> Path:
    """Gender × noise, where the noise folder holds one good and one corrupt recording:
    every test utterance that draws the corrupt file fails (about half of them)."""
    noise = tmp_path / "noise"
    noise.mkdir()
    sf.write(noise / "good.wav", (0.1 * derive_rng("good").standard_normal(48000)).astype(np.float32), 16000)
    (noise / "broken.wav").write_bytes(b"RIFF\x10\x00\x00\x00WAVEjunk that is not audio")
    base = yaml.safe_load(tiny_experiment(tmp_path, name="T03").read_text())
    noise_factor = next(f for f in base["factors"] if f["name"] == "noise")
    noise_factor["levels"] = {
        "clean": [],
        "env": [{"op": "noise", "kind": "environmental", "snr_db": 5, "noise_dir": str(noise)}],
    }
    return tiny_experiment(tmp_path, name="T03", factors=base["factors"])


@pytest.fixture(scope="module")
def lenient(tmp_path_factory, tiny_corpus, session_cache):
    tmp = tmp_path_factory.mktemp("fail")
    exp = noisy_experiment(tmp)
    opts = RunOptions(
        experiment=str(exp), encoders=["mfcc-stats"], out=tmp / "results", quiet=True, command=["t"],
        max_failure_share=0.99,
    )  # fmt: skip
    return exp, tmp, run(opts)


def test_failures_are_counted_and_their_trials_flagged(lenient) -> None:
    _, _, outcome = lenient
    res = pd.read_csv(outcome.run_dir / "results.csv")
    assert len(res) == 4 and not outcome.errored_cells
    trials = pd.read_parquet(outcome.run_dir / "trials.parquet")
    for row in res.itertuples():
        scores = pd.read_parquet(outcome.run_dir / "scores" / slug(row.model) / f"{slug(row.cell)}.parquet")
        record = json.loads((outcome.run_dir / "cells" / slug(row.model) / f"{slug(row.cell)}.json").read_text())
        if row.level_b == "clean":  # the other cells of the run are untouched
            assert row.n_failed == 0 and row.n_dropped_trials == 0 and not scores.dropped.any()
            continue
        failed = {f["utterance"] for f in record["failures"]}
        assert row.n_failed == len(failed) > 0
        assert all(f["side"] == "test" and "cannot use noise file" in f["error"] for f in record["failures"])
        assert all("broken.wav" in f["error"] for f in record["failures"])
        sub = trials[trials.stratum == row.stratum].reset_index(drop=True)
        expected_drop = sub["test"].isin(failed).to_numpy()
        assert scores.trial_id.tolist() == sub.trial_id.tolist()
        assert np.array_equal(scores.dropped.to_numpy(), expected_drop)
        assert row.n_dropped_trials == expected_drop.sum() > 0
        assert scores.score[scores.dropped].isna().all() and scores.score[~scores.dropped].notna().all()
        assert row.n_target + row.n_nontarget == len(sub) - expected_drop.sum()
    info = json.loads((outcome.run_dir / "run.json").read_text())
    assert info["n_failures"] == int(res.n_failed.sum())


def test_above_the_share_the_cell_errors(lenient) -> None:
    exp, tmp, _ = lenient
    opts = RunOptions(experiment=str(exp), encoders=["mfcc-stats"], out=tmp / "strict", quiet=True, command=["t"])
    outcome = run(opts)
    res = pd.read_csv(outcome.run_dir / "results.csv")
    assert sorted(res.level_b) == ["clean", "clean"]  # the noisy cells produced no row
    assert len(outcome.errored_cells) == 2
    for msg in outcome.errored_cells:
        assert "utterance(s) failed, dropping" in msg and "> the 1.0% limit" in msg
        assert "cannot use noise file" in msg
