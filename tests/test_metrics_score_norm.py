"""Score normalisation against a plain NumPy restatement of WeSpeaker's score_norm.py
(get_mean_std + the per-trial formula), the cohort draw, and a normalised run: a second model
row per encoder whose scores are the restatement applied to the run's own embeddings."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import tiny_experiment
from run_helpers import isolated_cache

from interbias.experiments.schema import load_experiment
from interbias.metrics import verification as metrics
from interbias.metrics.score_norm import cohort_stats, normalise
from interbias.run.conductor import RunOptions, run
from interbias.trials.cohort import draw_cohort
from interbias.utils.errors import ConfigError, MetricError, TrialError
from interbias.utils.paths import slug
from interbias.utils.seeding import derive_rng


def wespeaker_mean_std(emb: np.ndarray, cohort: np.ndarray, top_n: int) -> tuple[np.ndarray, np.ndarray]:
    """wespeaker/bin/score_norm.py get_mean_std, restated."""
    emb = emb / np.sqrt(np.sum(emb**2, axis=1, keepdims=True))
    cohort = cohort / np.sqrt(np.sum(cohort**2, axis=1, keepdims=True))
    s = np.sort(np.matmul(emb, cohort.T), axis=1)[:, ::-1][:, :top_n]
    return np.mean(s, axis=1), np.std(s, axis=1)


def wespeaker_scores(enrol, test, cohort, trials, top_n):
    e_mu, e_sd = wespeaker_mean_std(enrol, cohort, top_n)
    t_mu, t_sd = wespeaker_mean_std(test, cohort, top_n)
    out = []
    for i, j, score in trials:
        out.append(0.5 * ((score - e_mu[i]) / e_sd[i] + (score - t_mu[j]) / t_sd[j]))
    return np.array(out)


@pytest.mark.parametrize("top_k", [2, 3, 10, None])
def test_as_norm_and_s_norm_match_wespeaker(top_k) -> None:
    rng = derive_rng("score-norm", str(top_k))
    enrol, test, cohort = rng.normal(size=(7, 16)), rng.normal(size=(9, 16)), rng.normal(size=(25, 16))
    pairs = [(int(rng.integers(7)), int(rng.integers(9))) for _ in range(40)]
    unit = lambda x: x / np.linalg.norm(x, axis=1, keepdims=True)  # noqa: E731
    raw = np.array([unit(enrol)[i] @ unit(test)[j] for i, j in pairs])
    k = 25 if top_k is None else top_k  # s-norm: the whole cohort (WeSpeaker sets top_n to its size)
    ref = wespeaker_scores(enrol, test, cohort, [(i, j, s) for (i, j), s in zip(pairs, raw, strict=True)], k)
    mu_e, sd_e = cohort_stats(enrol, cohort, top_k)
    mu_t, sd_t = cohort_stats(test, cohort, top_k)
    ii, jj = np.array(pairs).T
    got = normalise(raw, mu_e[ii], sd_e[ii], mu_t[jj], sd_t[jj])
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)


def test_cohort_stats_degenerate() -> None:
    e = np.eye(3)
    with pytest.raises(MetricError, match="at least 2 cohort embeddings"):
        cohort_stats(e, e[:1], None)
    with pytest.raises(MetricError, match="top_k 5 exceeds the 3 cohort embeddings"):
        cohort_stats(e, e, 5)
    with pytest.raises(MetricError, match="score identically"):
        cohort_stats(e, np.array([[0.0, 0.0, 1.0], [0.0, 0.0, 2.0]]), None)  # the first two rows: σ 0


def _cached_vectors(cache: Path, exp, corpus):
    """uid -> the clean embedding of mfcc-stats read back from the run's embedding cache."""
    from interbias.embedding.cache import EmbeddingCache, cache_chain_key
    from interbias.embedding.stage import utterance_sha256
    from interbias.encoders import load_encoders
    from interbias.operators import Chain

    enc = load_encoders(["mfcc-stats"], "cpu")[0]
    db = EmbeddingCache(cache / "embeddings.sqlite")
    by_id = corpus.by_id()
    chain_key = cache_chain_key(Chain(), frozenset(), exp.frontend)

    def vec(uid: str) -> np.ndarray:
        key = (utterance_sha256(by_id[uid], corpus), chain_key, enc.fingerprint)
        return db.get_many([key])[key].vector.astype(np.float64)

    return vec


NORM_TRIALS = {"targets": 30, "min_speakers": 4, "speakers_per_stratum": 4}
SCORING = {"norm": "as-norm", "top_k": 5, "cohort": {"speakers": 4, "utterances_per_speaker": 2, "pool": "utterance"}}
SPEAKER_POOL = {"norm": "as-norm", "top_k": 3, "cohort": {"speakers": 4, "utterances_per_speaker": 2}}


def test_cohort_is_disjoint_deterministic_and_refused_when_too_small(tmp_path: Path, tiny_corpus) -> None:
    from interbias.trials.sampler import draw_trials

    exp = load_experiment(tiny_experiment(tmp_path, trials=NORM_TRIALS, scoring=SCORING))
    frame = draw_trials(exp, tiny_corpus).frame
    cohort = draw_cohort(exp, tiny_corpus, frame)
    assert cohort == draw_cohort(exp, tiny_corpus, frame)
    assert len(cohort.ids) == 8 and len(cohort.speakers) == 4
    assert not set(cohort.speakers) & (set(frame.enrol_speaker) | set(frame.test_speaker))
    big = load_experiment(tiny_experiment(tmp_path, trials=NORM_TRIALS, scoring={**SCORING, "cohort": {"speakers": 9}}))
    with pytest.raises(TrialError, match=r"scoring\.cohort needs 9 speakers with 2 utterance"):
        draw_cohort(big, tiny_corpus, frame)


def test_normalised_run_adds_a_model_row_per_encoder(tmp_path: Path, tiny_corpus, session_cache) -> None:
    exp = tiny_experiment(tmp_path, name="T30", trials=NORM_TRIALS, scoring=SCORING)
    opts = RunOptions(
        experiment=str(exp), encoders=["mfcc-stats"], out=tmp_path / "r", quiet=True, command=["test"],
        cache_dir=isolated_cache(tmp_path, session_cache),
    )  # fmt: skip
    out = run(opts)
    res = pd.read_csv(out.run_dir / "results.csv")
    assert res.model.tolist() == ["mfcc-stats"] * 4 + ["mfcc-stats +as-norm"] * 4
    info = json.loads((out.run_dir / "run.json").read_text())["scoring"]
    assert info["norm"] == "as-norm" and info["top_k"] == 5 and info["cohort"]["n_utterances"] == 8
    for cell in res.cell.unique():
        raw = pd.read_parquet(out.run_dir / "scores" / slug("mfcc-stats") / f"{slug(cell)}.parquet")
        nrm = pd.read_parquet(out.run_dir / "scores" / slug("mfcc-stats +as-norm") / f"{slug(cell)}.parquet")
        assert (raw.trial_id == nrm.trial_id).all() and (raw.dropped == nrm.dropped).all()
        assert not np.allclose(raw.score, nrm.score)
        row = res[(res.model == "mfcc-stats +as-norm") & (res.cell == cell)].iloc[0]
        assert row.eer == pytest.approx(metrics.eer(nrm.score[~nrm.dropped], nrm.label[~nrm.dropped]))
        raw_row = res[(res.model == "mfcc-stats") & (res.cell == cell)].iloc[0]
        assert row.n_target == raw_row.n_target and row.n_failed == raw_row.n_failed
    # the clean cell's normalised scores: WeSpeaker's formula on the run's own cached embeddings
    cell = "gender=female,noise=clean"
    vec = _cached_vectors(tmp_path / "cache", load_experiment(exp), tiny_corpus)
    trials = pd.read_parquet(out.run_dir / "trials.parquet").set_index("trial_id")
    nrm = pd.read_parquet(out.run_dir / "scores" / slug("mfcc-stats +as-norm") / f"{slug(cell)}.parquet")
    raw = pd.read_parquet(out.run_dir / "scores" / slug("mfcc-stats") / f"{slug(cell)}.parquet")
    sub = trials.loc[nrm.trial_id]
    enrol_ids, test_ids = sorted(set(sub.enrol)), sorted(set(sub.test))
    cohort = np.stack([vec(u) for u in info["cohort"]["utterances"]])
    ref = wespeaker_scores(
        np.stack([vec(u) for u in enrol_ids]), np.stack([vec(u) for u in test_ids]), cohort,
        [(enrol_ids.index(e), test_ids.index(t), s) for e, t, s in zip(sub.enrol, sub.test, raw.score, strict=True)], 5,
    )  # fmt: skip
    np.testing.assert_allclose(nrm.score.to_numpy(), ref, rtol=1e-9, atol=1e-9)
    again = run(opts)  # a rerun reuses both rows
    assert again.cells_done_before == 8 and again.n_embedded == 0
    pd.testing.assert_frame_equal(pd.read_csv(again.run_dir / "results.csv"), res)


def test_pool_enters_the_resolved_experiment_only_when_it_changes_the_scores(tmp_path: Path) -> None:
    def scoring(**spec):
        return load_experiment(tiny_experiment(tmp_path, trials=NORM_TRIALS, scoring=spec)).resolved()["scoring"]

    # pool: utterance scores as runs did before pools existed: the same resolved text, the same run id
    assert scoring(**SCORING) == {**SCORING, "cohort": {"speakers": 4, "utterances_per_speaker": 2}}
    assert scoring(norm="as-norm", top_k=3, cohort={"pool": "utterance"}) == {"norm": "as-norm", "top_k": 3}
    # the default pool (speaker) changes the scores: it is written out
    assert scoring(**SPEAKER_POOL)["cohort"] == {"speakers": 4, "utterances_per_speaker": 2, "pool": "speaker"}
    assert scoring(norm="none") == {"norm": "none"}  # no cohort, no pool
    with pytest.raises(ConfigError, match=r"top_k: 5 exceeds the cohort's 4 entries \(pool: speaker"):
        scoring(**{**SCORING, "cohort": {"speakers": 4, "utterances_per_speaker": 2}})


def test_as_norm_over_speaker_means_matches_a_restatement_from_the_exported_cohort(
    tmp_path: Path, tiny_corpus, session_cache
) -> None:
    """Cohort entries are per-speaker mean embeddings (WeSpeaker tools/vector_mean.py): the run's
    normalised scores equal WeSpeaker's formula over the means of the exported cohort vectors."""
    from interbias.run.export import export_embeddings

    exp = tiny_experiment(tmp_path, name="T32", trials=NORM_TRIALS, scoring=SPEAKER_POOL)
    cache = isolated_cache(tmp_path, session_cache)
    out = run(RunOptions(experiment=str(exp), encoders=["mfcc-stats"], out=tmp_path / "r", quiet=True, cache_dir=cache))
    info = json.loads((out.run_dir / "run.json").read_text())["scoring"]
    assert info["pool"] == "speaker" and len(info["cohort"]["utterance_speakers"]) == 8
    listing = export_embeddings(out.run_dir, tmp_path / "x", cache_dir=cache)
    (entry,) = [e for e in listing if e.get("cohort")]
    assert entry["pool"] == "speaker" and entry["n"] == 8 and entry["n_missing"] == 0
    cohort = np.load(tmp_path / "x" / entry["file"])
    assert str(cohort["pool"]) == "speaker"
    means = pd.DataFrame(cohort["vectors"].astype(np.float64)).groupby(cohort["speakers"]).mean()
    assert len(means) == 4
    (clean,) = [e for e in listing if not e.get("cohort") and e["chain_fingerprint"] == entry["chain_fingerprint"]]
    side = np.load(tmp_path / "x" / clean["file"])
    vec = dict(zip(side["ids"].tolist(), side["vectors"].astype(np.float64), strict=True))
    trials = pd.read_parquet(out.run_dir / "trials.parquet").set_index("trial_id")
    cell = "gender=female,noise=clean"
    nrm = pd.read_parquet(out.run_dir / "scores" / slug("mfcc-stats +as-norm") / f"{slug(cell)}.parquet")
    raw = pd.read_parquet(out.run_dir / "scores" / slug("mfcc-stats") / f"{slug(cell)}.parquet")
    sub = trials.loc[nrm.trial_id]
    enrol_ids, test_ids = sorted(set(sub.enrol)), sorted(set(sub.test))
    ref = wespeaker_scores(
        np.stack([vec[u] for u in enrol_ids]), np.stack([vec[u] for u in test_ids]), means.to_numpy(),
        [(enrol_ids.index(e), test_ids.index(t), s) for e, t, s in zip(sub.enrol, sub.test, raw.score, strict=True)], 3,
    )  # fmt: skip
    np.testing.assert_allclose(nrm.score.to_numpy(), ref, rtol=0, atol=1e-5)
    # the utterance-level cohort gives other scores: the pool matters
    per_utt = wespeaker_scores(
        np.stack([vec[u] for u in enrol_ids]), np.stack([vec[u] for u in test_ids]), cohort["vectors"].astype(float),
        [(enrol_ids.index(e), test_ids.index(t), s) for e, t, s in zip(sub.enrol, sub.test, raw.score, strict=True)], 3,
    )  # fmt: skip
    assert np.abs(per_utt - ref).max() > 1e-2
