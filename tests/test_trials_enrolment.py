"""Multi-utterance enrolment (``trials: {enrol_utterances: K}``): the sampler's draw and counts,
and scoring a K-utterance model against a hand-computed mean embedding."""

from __future__ import annotations

import re
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import tiny_experiment
from run_helpers import run_in_process
from test_run_cells import CELL, FakeEmbedder, FakeEncoder, _unit

from interbias.experiments.schema import load_experiment
from interbias.run.cells import score_cell
from interbias.run.rundir import RunDir
from interbias.trials.enrolment import DISTINCT_BY, enrol_columns
from interbias.trials.sampler import draw_trials, partners
from interbias.utils.errors import ConfigError, TrialError
from interbias.utils.seeding import derive_rng


def _k3(tmp_path: Path, **trials) -> object:
    return load_experiment(
        tiny_experiment(tmp_path, trials={"targets": 40, "min_speakers": 4, "enrol_utterances": 3, **trials})
    )


def test_k_enrolment_utterances_per_trial_matched_and_distinct(tmp_path: Path, tiny_corpus) -> None:
    tl = draw_trials(_k3(tmp_path), tiny_corpus)
    f = tl.frame
    assert enrol_columns(f) == ["enrol", "enrol_2", "enrol_3"]
    assert list(f.columns[:5]) == ["trial_id", "stratum", "enrol", "enrol_2", "enrol_3"]
    man = tiny_corpus.by_id()
    per_speaker: dict[str, int] = {}
    for u in tiny_corpus:
        per_speaker[u.speaker] = per_speaker.get(u.speaker, 0) + 1
    for row in f.itertuples(index=False):
        model = (row.enrol, row.enrol_2, row.enrol_3)
        assert len(set(model)) == 3 and row.test not in model  # K distinct utterances, none the test
        assert {man[u].speaker for u in model} == {row.enrol_speaker}
    # matched counts: every stratum holds the same number of targets and of non-targets
    by = f.groupby(["stratum", "label"]).size()
    assert by.nunique() == 1 and by.iloc[0] == tl.info["matched"]["n_target_per_stratum"]
    assert tl.info["spec"]["enrol_utterances"] == 3
    # the counts the sampler reports equal a direct count over its pools: (e, t) pairs of a
    # speaker with K + 1 utterances (the stratum is symmetric: unordered pairs)
    for name, st in tl.strata.items():
        g = "female" if "female" in name else "male"
        sizes = {
            s: n for s, n in per_speaker.items() if man[next(u.id for u in tiny_corpus if u.speaker == s)].gender == g
        }
        want = sum(len(list(combinations(range(n), 2))) for n in sizes.values() if n >= 4)
        assert st.targets_available == want
    # every enrolment utterance is in the trial identity: the hash changes with any of them
    other = f.copy()
    other.loc[0, "enrol_3"] = f.loc[1, "enrol_3"] if f.loc[1, "enrol_3"] != f.loc[0, "enrol_3"] else f.loc[0, "enrol_2"]
    from interbias.trials.sampler import TrialList

    assert TrialList(other, tl.strata, tl.source, tl.info).sha256 != tl.sha256
    assert tl.utterance_ids() >= set(f["enrol_3"])
    assert all(f.loc[i, "test_speaker"] in partners(f)[f.loc[i, "enrol_2"]] for i in range(len(f)))


def test_extra_enrolment_prefers_utterances_of_other_texts_and_sessions() -> None:
    from interbias.corpora.manifest import Utterance
    from interbias.trials.enrolment import extra_enrolment

    # speaker x: texts A A A B B C, sessions 1 1 2 2 3 3; the trial enrols x1 (A, 1), tests x6
    texts, sessions = "AAABBC", "112233"
    utts = {
        f"x{i + 1}": Utterance(id=f"x{i + 1}", path=f"x{i + 1}.wav", speaker="x", text=t, session=s)
        for i, (t, s) in enumerate(zip(texts, sessions, strict=True))
    }
    assert DISTINCT_BY == ("session", "text", "sentence")
    for seed in range(20):
        got = extra_enrolment(sorted(utts), ("x1", "x6"), 3, utts, derive_rng("t", seed))
        assert len(got) == 2 and "x1" not in got and "x6" not in got
        chosen = ("x1", *got)
        # two more texts are not available (C is the test's), so: one B, and one A or B of a new session
        assert sum(utts[u].get("text") == "B" for u in chosen) >= 1
        assert len({utts[u].get("session") for u in chosen}) == 3


def test_k_enrolment_is_deterministic_and_round_trips(tmp_path: Path, tiny_corpus) -> None:
    a = draw_trials(_k3(tmp_path), tiny_corpus)
    assert a.frame.equals(draw_trials(_k3(tmp_path), tiny_corpus).frame)
    one = draw_trials(load_experiment(tiny_experiment(tmp_path)), tiny_corpus)
    assert "enrol_2" not in one.frame.columns and "enrol_utterances" not in one.info["spec"]
    (tmp_path / "run").mkdir()
    run = RunDir(tmp_path / "run")
    run.write_trials(a)
    back = run.read_trials()
    assert back.sha256 == a.sha256 and back.frame.equals(a.frame)


def test_more_enrolment_utterances_than_a_speaker_has_is_one_line(tmp_path: Path, tiny_corpus) -> None:
    most = max(sum(u.speaker == s for u in tiny_corpus) for s in {u.speaker for u in tiny_corpus})
    with pytest.raises(TrialError) as exc:
        draw_trials(_k3(tmp_path, enrol_utterances=most), tiny_corpus)
    assert str(exc.value) == (
        f"T01: trials.enrol_utterances {most} needs {most + 1} utterances of a speaker ({most} to enrol, one to test); "
        f"the most any speaker of the population has is {most}"
    )
    with pytest.raises(
        ConfigError, match=r"trials.enrol_utterances: 3 enrolment utterances and one test utterance need 4"
    ):
        _k3(tmp_path, utterances_per_speaker=3)
    with pytest.raises(ConfigError, match=r"scoring.norm: s-norm is not defined for trials.enrol_utterances 3"):
        load_experiment(
            tiny_experiment(tmp_path, trials={"targets": 4, "enrol_utterances": 3}, scoring={"norm": "s-norm"})
        )
    with pytest.raises(ConfigError, match="enrol_utterances only apply to sampled trials"):
        load_experiment(tiny_experiment(tmp_path, trials={"list": "x.txt", "enrol_utterances": 2}))
    with pytest.raises(ConfigError, match=r"scoring: enrol: 'median' is not one of embedding-mean, score-mean"):
        load_experiment(tiny_experiment(tmp_path, scoring={"enrol": "median"}))


def _k_setup(fail: str | None = None) -> tuple[pd.DataFrame, FakeEmbedder]:
    rng = derive_rng("test-enrol-k")
    trials = pd.DataFrame(
        {
            "trial_id": [0, 1, 2, 3],
            "stratum": "all",
            "enrol": ["a1", "b1", "a1", "b2"],
            "enrol_2": ["a2", "b2", "a3", "b3"],
            "enrol_3": ["a3", "b3", "a2", "b1"],
            "test": ["a4", "b4", "b4", "a4"],
            "label": [1, 1, 0, 0],
            "enrol_speaker": ["a", "b", "a", "b"],
            "test_speaker": ["a", "b", "b", "a"],
        }
    )
    emb = FakeEmbedder()
    for u in ("a1", "a2", "a3", "b1", "b2", "b3"):
        if u == fail:
            emb.failures[(u, CELL.enrol_chain.fingerprint)] = f"{u}: decode failed"
        else:
            emb.vectors[(u, CELL.enrol_chain.fingerprint, "encfp")] = _unit(rng)
    for u in ("a4", "b4"):
        emb.vectors[(u, CELL.test_chain.fingerprint, "encfp")] = _unit(rng)
    return trials, emb


def test_k_utterance_model_scores_equal_hand_computed_means() -> None:
    trials, emb = _k_setup()
    efp, tfp = CELL.enrol_chain.fingerprint, CELL.test_chain.fingerprint
    want_emb, want_score = [], []
    for row in trials.itertuples(index=False):
        vs = [emb.vectors[(u, efp, "encfp")].astype(np.float64) for u in (row.enrol, row.enrol_2, row.enrol_3)]
        vs = [v / np.linalg.norm(v) for v in vs]
        t = emb.vectors[(row.test, tfp, "encfp")].astype(np.float64)
        t = t / np.linalg.norm(t)
        m = np.sum(vs, axis=0) / 3
        want_emb.append(float(m @ t / np.linalg.norm(m)))
        want_score.append(float(np.mean([v @ t for v in vs])))
    got = score_cell(CELL, FakeEncoder(), trials, emb, 0.0, 16000)
    np.testing.assert_allclose(got.frame["score"].to_numpy(), want_emb, rtol=0, atol=1e-6)
    got_s = score_cell(CELL, FakeEncoder(), trials, emb, 0.0, 16000, enrol="score-mean")
    np.testing.assert_allclose(got_s.frame["score"].to_numpy(), want_score, rtol=0, atol=1e-6)
    assert not np.allclose(want_emb, want_score)  # the two modes differ
    assert got.row["n_utterances"] == 8


def test_a_failed_enrolment_utterance_drops_its_trials() -> None:
    trials, emb = _k_setup(fail="a3")  # in trials 0 and 2 (as enrol_3 and enrol_2)
    got = score_cell(CELL, FakeEncoder(), trials, emb, 0.5, 16000)
    assert got.frame["dropped"].tolist() == [True, False, True, False]
    assert got.row["n_dropped_trials"] == 2 and got.row["n_failed"] == 1
    assert got.failures == [{"utterance": "a3", "side": "enrol", "error": "a3: decode failed"}]


def test_a_run_embeds_and_scores_every_enrolment_utterance(tmp_path: Path, session_cache: Path, tiny_corpus) -> None:

    exp = tiny_experiment(tmp_path, trials={"targets": 12, "min_speakers": 4, "enrol_utterances": 3})
    out = run_in_process(exp, tmp_path, session_cache)
    rd = RunDir(out.run_dir)
    tl = rd.read_trials()
    rows = pd.read_csv(out.run_dir / "results.csv")
    assert len(rows) == 4 and (rows["n_dropped_trials"] == 0).all()
    for row in rows.itertuples(index=False):
        sub = tl.for_stratum(row.stratum)
        ids = set(sub[["enrol", "enrol_2", "enrol_3", "test"]].to_numpy().ravel())
        assert row.n_utterances == len(ids)  # every one of the K enrolment utterances was embedded
    # export names each trial model by its K ids joined with "+"
    from interbias.run.export import export_scores

    export_scores(out.run_dir, "wespeaker", tmp_path / "export")
    files = sorted((tmp_path / "export").rglob("*.score"))
    assert files
    first = files[0].read_text().splitlines()[0].split()
    assert len(first[0].split("+")) == 3 and set(first[0].split("+")) <= set(tl.utterance_ids())


def _model_list(tmp_path: Path, corpus) -> tuple[Path, Path, dict[str, list[str]]]:
    """A Kaldi trial list over enrolment models of 3 utterances (two speakers per gender)."""
    by_spk: dict[str, list[str]] = {}
    for u in corpus:
        by_spk.setdefault(u.speaker, []).append(u.id)
    gender = {u.speaker: u.gender for u in corpus}
    models, lines = {}, []
    for g in ("female", "male"):
        a, b = sorted(s for s in by_spk if gender[s] == g)[:2]
        for spk, other in ((a, b), (b, a)):
            ids = sorted(by_spk[spk])
            models[f"m-{spk}"] = ids[:3]
            lines += [f"m-{spk} {ids[3]} target", f"m-{spk} {sorted(by_spk[other])[4]} nontarget"]
    mfile = tmp_path / "models.txt"
    mfile.write_text("".join(f"{m} {' '.join(ids)}\n" for m, ids in models.items()))
    tfile = tmp_path / "trials.txt"
    tfile.write_text("\n".join(lines) + "\n")
    return tfile, mfile, models


def test_an_external_list_with_several_enrolment_files_per_model_round_trips(tmp_path: Path, tiny_corpus) -> None:
    from interbias.trials.external import read_trial_list

    tfile, mfile, models = _model_list(tmp_path, tiny_corpus)
    exp = load_experiment(tiny_experiment(tmp_path, trials={"list": str(tfile), "models": str(mfile)}))
    assert exp.trials.models_file == str(mfile)
    tl = read_trial_list(tfile, tiny_corpus, exp, models_file=mfile)
    f = tl.frame
    assert enrol_columns(f) == ["enrol", "enrol_2", "enrol_3"] and len(f) == 8
    for row in f.itertuples(index=False):
        assert [row.enrol, row.enrol_2, row.enrol_3] == models[row.enrol_name]
    assert tl.info["models_sha256"] and set(f.groupby("stratum").size()) == {4}
    (tmp_path / "run").mkdir()
    run = RunDir(tmp_path / "run")
    run.write_trials(tl)
    back = run.read_trials()
    assert back.sha256 == tl.sha256 and back.frame.equals(f)
    # bad inputs: one line each
    good = mfile.read_text()
    mfile.write_text(good.replace(models[f["enrol_name"][0]][2], "no-such-file", 1))
    # an error of the models file names the models file and its line, not the trial list
    first = rf"^models file {re.escape(str(mfile))}: 1 of \d+ utterance name\(s\) match no entry of manifest"
    with pytest.raises(TrialError, match=first + r" .*'no-such-file' \(line 1\)"):
        read_trial_list(tfile, tiny_corpus, exp, models_file=mfile)
    (m1, ids1), (_, ids2) = list(models.items())[:2]
    mfile.write_text(good.replace(" ".join(ids1), " ".join([*ids1[:2], ids2[0]]), 1))
    with pytest.raises(TrialError, match=rf"^models file {re.escape(str(mfile))}: line 1: model '{m1}' mixes speakers"):
        read_trial_list(tfile, tiny_corpus, exp, models_file=mfile)
    mfile.write_text("m-x a b\nm-y c\n")
    with pytest.raises(TrialError, match=r"models have 1, 2 utterances; every model needs the same number"):
        read_trial_list(tfile, tiny_corpus, exp, models_file=mfile)
    mfile.write_text("m-x " + " ".join(models[f["enrol_name"][0]]) + "\n")
    with pytest.raises(TrialError, match=r"name an enrolment model the models file lacks; first: '"):
        read_trial_list(tfile, tiny_corpus, exp, models_file=mfile)
    with pytest.raises(ConfigError, match="models applies to an external list"):
        load_experiment(tiny_experiment(tmp_path, trials={"targets": 4, "models": str(mfile)}))


def test_spoof_trials_get_k_enrolment_utterances_of_the_attacked_speaker(tmp_path: Path, tiny_corpus) -> None:
    from test_analysis_security_spoofing import _hand_attacks

    from interbias.corpora.attacks import read_attacks

    att = read_attacks(_hand_attacks(tmp_path, tiny_corpus, tiny_corpus.speakers(), per=2), tiny_corpus)
    exp = load_experiment(tiny_experiment(tmp_path, trials={"targets": 10, "spoofs": 15, "enrol_utterances": 3}))
    tl = draw_trials(exp, tiny_corpus, attacks=att)
    sp = tl.frame[tl.frame["trial_type"] == "spoof"]
    assert len(sp) == 30
    man = tiny_corpus.by_id()
    for row in sp.itertuples(index=False):
        model = (row.enrol, row.enrol_2, row.enrol_3)
        assert len(set(model)) == 3 and {man[u].speaker for u in model} == {row.enrol_speaker}
