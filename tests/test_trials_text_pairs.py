"""Same-text versus different-text non-target pairs: the trial relation, the sampler's
``trials.text`` modes and the run's text_pairs.csv, each checked against a direct count."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import tiny_experiment
from run_helpers import run_in_process

from interbias.experiments.schema import load_experiment
from interbias.metrics import verification as metrics
from interbias.run.measured import measured
from interbias.run.rundir import TEXT_PAIRS, RunDir
from interbias.trials.sampler import draw_trials
from interbias.trials.text_pairs import text_of, text_relation
from interbias.utils.errors import ConfigError, TrialError


def _relations(frame: pd.DataFrame, corpus) -> list[str]:
    by_id = corpus.by_id()
    out = []
    for row in frame.itertuples(index=False):
        enrol = [getattr(row, c) for c in frame.columns if c == "enrol" or c.startswith("enrol_2")]
        out.append("same" if text_of(by_id[row.test]) in {text_of(by_id[u]) for u in enrol} else "different")
    return out


@pytest.mark.parametrize("mode", ["same", "different", "balanced"])
def test_text_modes_draw_only_that_relation_matched(tmp_path: Path, tiny_corpus, mode: str) -> None:
    exp = load_experiment(tiny_experiment(tmp_path, trials={"targets": 30, "min_speakers": 4, "text": mode}))
    tl = draw_trials(exp, tiny_corpus)
    f = tl.frame
    nt = f[f.label == 0]
    rel = np.array(_relations(nt, tiny_corpus))
    assert (rel == text_relation(nt, tiny_corpus.by_id())).all()
    n = tl.info["matched"]["n_nontarget_per_stratum"]
    assert f.groupby(["stratum", "label"]).size().nunique() == 1  # matched across strata
    assert (nt.enrol_speaker != nt.test_speaker).all() and not nt.duplicated(["enrol", "test"]).any()
    for _, sub in nt.groupby("stratum"):
        r = np.array(_relations(sub, tiny_corpus))
        if mode == "balanced":
            assert (r == "same").sum() == n // 2 and (r == "different").sum() == n - n // 2
        else:
            assert (r == mode).all() and len(r) == n
    assert tl.info["spec"]["text"] == mode and tl.info["text_pairs"] == mode


def test_text_same_counts_every_available_pair(tmp_path: Path, tiny_corpus) -> None:
    """Asked for more than exist, the sampler takes every same-text impostor pair: a direct count."""
    exp = load_experiment(tiny_experiment(tmp_path, trials={"targets": 10, "nontargets": 100000, "text": "same"}))
    tl = draw_trials(exp, tiny_corpus)
    by_id = tiny_corpus.by_id()
    for name, st in tl.strata.items():
        gender = name.split("=")[1]
        ids = [u.id for u in tiny_corpus if u.gender == gender]
        want = sum(
            1
            for i, a in enumerate(ids)
            for b in ids[i + 1 :]
            if by_id[a].speaker != by_id[b].speaker and text_of(by_id[a]) == text_of(by_id[b])
        )
        assert st.nontargets_available == want
    assert tl.info["matched"]["n_nontarget_per_stratum"] == min(s.nontargets_available for s in tl.strata.values())


def test_text_any_keeps_the_draw_and_bad_values_are_one_line(tmp_path: Path, tiny_corpus) -> None:
    plain = draw_trials(load_experiment(tiny_experiment(tmp_path)), tiny_corpus)
    anyt = draw_trials(load_experiment(tiny_experiment(tmp_path, trials={"targets": 40, "text": "any"})), tiny_corpus)
    assert plain.sha256 == anyt.sha256 and "text_pairs" not in plain.info
    with pytest.raises(ConfigError, match=r"only text: any \(the text_pairs.csv table\) is defined"):
        load_experiment(tiny_experiment(tmp_path, trials={"targets": 4, "text": "same", "enrol_utterances": 2}))
    with pytest.raises(ConfigError, match=r"trials.text: 'often' is not one of any, same, different, balanced"):
        load_experiment(tiny_experiment(tmp_path, trials={"targets": 4, "text": "often"}))
    import dataclasses

    from interbias.corpora.manifest import Manifest

    bare = Manifest(
        tiny_corpus.name,
        tiny_corpus.root,
        tuple(
            dataclasses.replace(u, text=None, attrs={k: v for k, v in u.attrs.items() if k != "sentence"})
            for u in tiny_corpus
        ),
    )
    n = len(bare)
    with pytest.raises(TrialError) as exc:
        draw_trials(load_experiment(tiny_experiment(tmp_path, trials={"targets": 4, "text": "same"})), bare)
    assert str(exc.value).startswith(
        f"T01: trials.text: same needs the text of every utterance, but {n} of {n} have no text or sentence attribute"
    )


def test_run_writes_text_pairs_whose_counts_match_the_trial_list(
    tmp_path: Path, session_cache: Path, tiny_corpus
) -> None:
    from interbias.analysis.after_run import run_analyses

    exp = tiny_experiment(tmp_path, trials={"targets": 12, "nontargets": 40, "min_speakers": 4, "text": "balanced"})
    out = run_in_process(exp, tmp_path, session_cache, after_run=run_analyses)
    rd = RunDir(out.run_dir)
    table = pd.read_csv(rd.file(TEXT_PAIRS))
    tl = rd.read_trials()
    assert len(table) == len(out.results) == 4
    for row in table.itertuples(index=False):
        scores = rd.read_scores(row.model, row.cell)
        sub = tl.frame.set_index("trial_id").loc[scores["trial_id"]]
        use = measured(scores)
        labels = scores["label"].to_numpy()[use]
        rel = np.array(_relations(sub.reset_index(), tiny_corpus))[use]
        assert row.n_target == (labels == 1).sum()
        assert row.n_nontarget_same_text == ((labels == 0) & (rel == "same")).sum() == 20
        assert row.n_nontarget_different_text == ((labels == 0) & (rel == "different")).sum() == 20
        s = scores["score"].to_numpy()[use]
        pick = (labels == 1) | (rel == "same")
        assert row.eer_same_text == pytest.approx(metrics.summarize(s[pick], labels[pick])["eer"])
        pick = (labels == 1) | (rel == "different")
        assert row.min_dcf_different_text == pytest.approx(metrics.summarize(s[pick], labels[pick])["min_dcf"])
