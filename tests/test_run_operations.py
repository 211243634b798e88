"""operations.parquet: one row per (utterance, side, chain) holding what each operator realised,
achieved SNRs within 0.5 dB of the requested ones (measured with the noise operator's own
active-speech level function), crops and clipping as recorded, and byte-identical reruns."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import tiny_experiment

from interbias.audio import frontend as audio
from interbias.operators import OpContext, parse_chain
from interbias.operators.levels import active_mask, active_power
from interbias.run.conductor import RunOptions, run
from interbias.run.operations import COLUMNS, snr_summary
from interbias.utils.seeding import sha256_file

LEVELS = {
    "clean": [],
    "n20": [{"op": "noise", "kind": "gaussian", "snr_db": 20}],
    "n5": [{"op": "noise", "kind": "pink", "snr_db": 5}],
    "crop1": [{"op": "crop", "duration_s": 1.0, "where": "random"}],
    "clip": [{"op": "clip", "threshold": 0.3}, {"op": "filter", "kind": "narrowband"}],
}


@pytest.fixture(scope="module")
def ops_run(tmp_path_factory, tiny_corpus, session_cache):
    tmp = tmp_path_factory.mktemp("ops")
    exp = tiny_experiment(
        tmp,
        name="T25",
        factors=[
            {"name": "channel", "type": "acoustic", "apply_to": "test", "reference": "clean", "levels": LEVELS},
        ],
        trials={"targets": 20, "min_speakers": 4},
    )
    opts = RunOptions(experiment=str(exp), encoders=["mfcc-stats"], out=tmp / "results", quiet=True, command=["t"])
    outcome = run(opts)
    return opts, outcome, tiny_corpus


def test_one_row_per_utterance_side_and_chain(ops_run) -> None:
    _, outcome, _ = ops_run
    ops = pd.read_parquet(outcome.run_dir / "operations.parquet")
    assert list(ops.columns) == COLUMNS
    trials = pd.read_parquet(outcome.run_dir / "trials.parquet")
    n_test, n_enrol = trials["test"].nunique(), trials["enrol"].nunique()
    assert len(ops[ops.side == "test"]) == 5 * n_test  # every level's chain on every test utterance
    assert len(ops[ops.side == "enrol"]) == n_enrol  # enrolment is clean in every cell
    assert not ops.duplicated(["utterance", "side", "chain_fp", "draw"]).any()
    assert (ops.draw == 0).all()
    assert set(ops.operators) == {"clean", "noise", "crop", "clip+filter"}


def test_achieved_snr_within_half_a_db_on_active_speech(ops_run) -> None:
    _, outcome, _ = ops_run
    ops = pd.read_parquet(outcome.run_dir / "operations.parquet")
    noisy = ops.dropna(subset=["snr_db_requested"])
    assert set(noisy.snr_db_requested) == {20.0, 5.0}
    assert ((noisy.snr_db_achieved - noisy.snr_db_requested).abs() <= 0.5).all()
    summary = snr_summary(ops)
    assert summary[["noise_kind", "snr_db_requested"]].values.tolist() == [["gaussian", 20.0], ["pink", 5.0]]
    assert (summary.max_abs_error_db <= 0.5).all()
    assert set(noisy.chain_fp) == {parse_chain(LEVELS[k], where="t").fingerprint for k in ("n20", "n5")}


def test_crop_and_clip_values_recorded(ops_run) -> None:
    _, outcome, corpus = ops_run
    ops = pd.read_parquet(outcome.run_dir / "operations.parquet")
    crop = ops[ops.operators == "crop"]
    by_id = corpus.by_id()
    for _, r in crop.iterrows():
        n = len(audio.load(corpus.resolve(by_id[r.utterance])).samples)
        if r.crop_kept_whole:
            assert r.crop_length_s == pytest.approx(n / 16000)
        else:
            assert r.crop_length_s == pytest.approx(1.0) and 0 <= r.crop_start_s <= n / 16000 - 1.0
    clip = ops[ops.operators == "clip+filter"]
    assert clip.clipped_share.between(0, 1).all() and (clip.clipped_share > 0).all()


def test_noise_record_matches_the_signal_it_describes(ops_run) -> None:
    """Re-applying a recorded chain (the generator derives from the file's sha256) gives the
    recorded SNR, measured independently with the noise operator's active-speech level function."""
    _, outcome, corpus = ops_run
    ops = pd.read_parquet(outcome.run_dir / "operations.parquet")
    row = ops[ops.snr_db_requested == 5.0].iloc[0]
    path = corpus.resolve(corpus.by_id()[row.utterance])
    x = audio.load(path).samples
    chain = parse_chain(LEVELS["n5"], where="t")
    y, rec = chain.apply(
        x,
        utterance_sha256=sha256_file(path),
        make_ctx=lambda rng: OpContext(16000, row.utterance, row.speaker, rng),
    )
    mask = active_mask(x, 16000)
    measured = 10 * np.log10(active_power(x, mask) / active_power(y.astype(np.float64) - x, mask))
    assert measured == pytest.approx(row.snr_db_achieved, abs=0.01)
    assert rec[0]["snr_db_achieved"] == pytest.approx(row.snr_db_achieved, abs=1e-9)


def test_rerun_keeps_operations_byte_identical(ops_run) -> None:
    opts, outcome, _ = ops_run
    before = Path(outcome.run_dir / "operations.parquet").read_bytes()
    again = run(opts)
    assert Path(again.run_dir / "operations.parquet").read_bytes() == before
