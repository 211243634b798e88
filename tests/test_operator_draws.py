"""trials: {operator_draws: K}: every chain with a random operator is realised K times from
derived seeds and scored per draw; results hold the draw-mean and between-draw SD, byte-identical
on rerun, each draw's embeddings cached like any other."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import tiny_experiment

from interbias.experiments.schema import load_experiment
from interbias.metrics import verification as metrics
from interbias.operators import parse_chain
from interbias.run.conductor import RunOptions, run
from interbias.run.rundir import RunDir

LEVELS = {
    "clean": [],
    "n10": [{"op": "noise", "kind": "gaussian", "snr_db": 10}],
    "crop": [{"op": "crop", "duration_s": 1.0, "where": "random"}],
    "lowpass_s1": [{"op": "filter", "kind": "lowpass", "cutoff_hz": 4000}],
    "lowpass_s2": [{"op": "filter", "kind": "lowpass", "cutoff_hz": 1000}],
}


def experiment(tmp: Path, draws: int) -> Path:
    return tiny_experiment(
        tmp,
        name=f"T25D{draws}",
        factors=[{"name": "cond", "type": "acoustic", "apply_to": "test", "reference": "clean", "levels": LEVELS}],
        trials={"targets": 20, "min_speakers": 4, "operator_draws": draws},
    )


@pytest.fixture(scope="module")
def drawn(tmp_path_factory, tiny_corpus, session_cache):
    tmp = tmp_path_factory.mktemp("draws")
    opts = RunOptions(experiment=str(experiment(tmp, 3)), encoders=["mfcc-stats"], out=tmp / "a", quiet=True)
    return tmp, opts, run(opts)


def test_chains_with_random_operators_get_their_own_draws(tmp_path) -> None:
    exp = load_experiment(experiment(tmp_path, 3))
    by_level = {dict(c.levels)["cond"]: c for c in exp.cells()}
    assert len(by_level["clean"].draws()) == 1 and len(by_level["lowpass_s1"].draws()) == 1
    noisy = by_level["n10"].draws()
    assert [t.draw for _, t in noisy] == [0, 1, 2]
    assert len({t.fingerprint for _, t in noisy}) == 3
    assert noisy[0][1].fingerprint == parse_chain(LEVELS["n10"], where="t").fingerprint  # draw 0 keeps it


def test_three_draws_scored_and_summarised(drawn) -> None:
    _, _, outcome = drawn
    res = pd.read_csv(outcome.run_dir / "results.csv").set_index("cell")
    assert res.loc["cond=n10", "operator_draws"] == 3 and res.loc["cond=crop", "operator_draws"] == 3
    assert res.loc["cond=clean", "operator_draws"] == 1 and res.loc["cond=clean", "eer_draw_sd"] == 0
    scores = RunDir(outcome.run_dir).read_scores("mfcc-stats", "cond=n10")
    per_draw = [
        metrics.eer(scores[c].to_numpy(), scores["label"].to_numpy()) for c in ("score", "score_d1", "score_d2")
    ]
    assert res.loc["cond=n10", "eer"] == pytest.approx(np.mean(per_draw), abs=1e-12)
    assert res.loc["cond=n10", "eer_draw_sd"] == pytest.approx(np.std(per_draw, ddof=1), abs=1e-12)
    assert not np.array_equal(scores["score"], scores["score_d1"])  # the draws differ


def test_operations_record_every_draw(drawn) -> None:
    _, _, outcome = drawn
    ops = pd.read_parquet(outcome.run_dir / "operations.parquet")
    test = ops[ops.side == "test"]
    n_test = test.utterance.nunique()
    assert sorted(test[test.operators == "noise"].draw.value_counts().to_dict().items()) == [
        (d, n_test) for d in range(3)
    ]
    crops = test[test.operators == "crop"]
    assert set(crops.draw) == {0, 1, 2}
    cut = crops[~crops.crop_kept_whole.astype(bool)]
    assert cut.groupby("utterance").crop_start_s.nunique().max() > 1  # positions re-drawn
    noisy = test.dropna(subset=["snr_db_requested"])
    assert ((noisy.snr_db_achieved - noisy.snr_db_requested).abs() <= 0.5).all()


def test_rerun_byte_identical_from_the_cache(drawn) -> None:
    tmp, opts, outcome = drawn
    again = run(RunOptions(experiment=opts.experiment, encoders=["mfcc-stats"], out=tmp / "b", quiet=True))
    assert again.n_embedded == 0  # every draw came from the embedding cache
    scores = RunDir(outcome.run_dir).scores_path("mfcc-stats", "cond=n10").relative_to(outcome.run_dir)
    for name in ("results.csv", "operations.parquet", str(scores)):
        a = (outcome.run_dir / name).read_bytes()
        b = (again.run_dir / name).read_bytes()
        if name == "results.csv":
            a, b = a.replace(outcome.run_dir.name.encode(), b""), b.replace(again.run_dir.name.encode(), b"")
        assert a == b, name


def test_report_shows_draw_sd_profile_and_achieved_snr(drawn, tmp_path) -> None:
    from typer.testing import CliRunner

    from interbias.cli import app

    _, _, outcome = drawn
    # no bootstrap: a one-factor experiment's --bootstrap report is issue 28 item 3 (fixed elsewhere)
    res = CliRunner().invoke(app, ["report", str(outcome.run_dir), "--out", str(tmp_path), "--bootstrap", "0"])
    assert res.exit_code == 0, res.output
    page = (tmp_path / "report.html").read_text()
    assert '<figure id="robustness_profile">' in page  # the lowpass_s1/s2 ladder
    for needle in ("Repeated operator draws", "eer_draw_sd", "Achieved SNR on active speech", "n_kept_whole"):
        assert needle in page, needle


@pytest.mark.parametrize("bad", [0, 101, "3", True])
def test_bad_operator_draws_is_one_line(tmp_path, bad) -> None:
    from interbias.utils.errors import ConfigError

    with pytest.raises(ConfigError, match=r"trials.operator_draws: ") as info:
        load_experiment(experiment_with(tmp_path, bad))
    assert "\n" not in str(info.value)


def experiment_with(tmp: Path, draws) -> Path:
    return tiny_experiment(tmp, name="T25X", trials={"targets": 20, "min_speakers": 4, "operator_draws": draws})
