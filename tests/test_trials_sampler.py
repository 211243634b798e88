from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import tiny_experiment

from interbias.experiments.schema import load_experiment
from interbias.trials.sampler import TrialList, _triangular, draw_trials
from interbias.utils.errors import TrialError


def test_triangular_decode_enumerates_pairs() -> None:
    for n in (2, 3, 7, 40):
        k = np.arange(n * (n - 1) // 2)
        i, j = _triangular(k, np.full(len(k), n))
        expect = [(a, b) for a in range(n) for b in range(a + 1, n)]
        assert list(zip(i.tolist(), j.tolist(), strict=True)) == expect


def test_draw_is_balanced_matched_and_deterministic(tmp_path: Path, tiny_corpus) -> None:
    exp = load_experiment(tiny_experiment(tmp_path))
    a = draw_trials(exp, tiny_corpus)
    b = draw_trials(exp, tiny_corpus)
    assert a.sha256 == b.sha256 and a.frame.equals(b.frame)
    f = a.frame
    by = f.groupby(["stratum", "label"]).size()
    assert by.nunique() == 1  # matched counts per stratum and class
    tg = f[f.label == 1]
    assert (tg.enrol_speaker == tg.test_speaker).all() and (tg.enrol != tg.test).all()
    nt = f[f.label == 0]
    assert (nt.enrol_speaker != nt.test_speaker).all()
    assert not f.duplicated(["enrol", "test"]).any()
    man = tiny_corpus.by_id()
    for stratum, gender in (("gender=female", "female"), ("gender=male", "male")):
        sub = f[f.stratum == stratum]
        assert {man[u].gender for u in set(sub.enrol) | set(sub.test)} == {gender}


def test_roundtrip_and_hash_check(tmp_path: Path, tiny_corpus) -> None:
    from interbias.run.rundir import TRIALS, RunDir

    tl = draw_trials(load_experiment(tiny_experiment(tmp_path)), tiny_corpus)
    (tmp_path / "run").mkdir()
    run = RunDir(tmp_path / "run")
    run.write_trials(tl)
    back = run.read_trials()
    assert back.sha256 == tl.sha256 and back.frame.equals(tl.frame)
    tl.frame.iloc[:-1].to_parquet(run.file(TRIALS))  # one trial lost on disk
    with pytest.raises(TrialError, match="do not match the sha256"):
        run.read_trials()


def test_different_seed_different_draw(tmp_path: Path, tiny_corpus) -> None:
    a = draw_trials(load_experiment(tiny_experiment(tmp_path)), tiny_corpus)
    b = draw_trials(load_experiment(tiny_experiment(tmp_path, seed=1)), tiny_corpus)
    assert a.sha256 != b.sha256


def test_too_few_speakers_names_counts(tmp_path: Path, tiny_corpus) -> None:
    exp = load_experiment(tiny_experiment(tmp_path, trials={"targets": 10, "min_speakers": 20}))
    with pytest.raises(TrialError) as exc:
        draw_trials(exp, tiny_corpus)
    assert str(exc.value) == (
        "T01: stratum gender=female has 6 speaker(s) with usable enrol and test utterances "
        "(enrol side 6, test side 6); at least 20 are needed"
    )


def test_max_trials_caps_per_stratum(tmp_path: Path, tiny_corpus) -> None:
    tl = draw_trials(load_experiment(tiny_experiment(tmp_path)), tiny_corpus, max_trials=10)
    assert tl.frame.groupby("stratum").size().tolist() == [10, 10]


def test_speakers_per_stratum_draws_exactly_that_many(tmp_path: Path, tiny_corpus) -> None:
    exp = load_experiment(tiny_experiment(tmp_path, trials={"targets": 20, "speakers_per_stratum": 4}))
    a = draw_trials(exp, tiny_corpus)
    assert a.sha256 == draw_trials(exp, tiny_corpus).sha256
    for _, sub in a.frame.groupby("stratum"):
        assert len(set(sub.enrol_speaker) | set(sub.test_speaker)) == 4
    assert a.info["spec"]["speakers_per_stratum"] == 4
    assert [s.n_speakers for s in a.strata.values()] == [4, 4]  # what trials.json records
    plain = draw_trials(load_experiment(tiny_experiment(tmp_path, trials={"targets": 20})), tiny_corpus)
    assert "speakers_per_stratum" not in plain.info["spec"]
    too_many = {"targets": 20, "speakers_per_stratum": 9}
    with pytest.raises(
        TrialError,
        match=r"^T01: stratum gender=female has 6 speaker\(s\) with usable enrol and test "
        r"utterances; trials.speakers_per_stratum asks for 9$",
    ):
        draw_trials(load_experiment(tiny_experiment(tmp_path, trials=too_many)), tiny_corpus)


def test_a_trials_file_without_the_trial_columns_is_one_trial_error() -> None:
    """A trials.parquet that lacks enrol/test (hand-made, or another tool's) is refused naming the
    missing columns, before the sha256 of its rows is computed."""
    import pandas as pd

    frame = pd.DataFrame({"trial_id": [0], "stratum": ["all"], "label": [1]})
    with pytest.raises(TrialError, match=r"x/trials.parquet: no column\(s\) enrol, test: not a trial list"):
        TrialList.from_meta(frame, {"sha256": "0" * 64}, "x/trials.parquet")
