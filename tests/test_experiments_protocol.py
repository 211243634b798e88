"""Protocol factors (``type: protocol``): parsing and its one-line refusals, the cells' K and VAD,
the trial list drawn once with the largest K (paired cells), per-cell front ends in the
embedding cache, and a run whose K = 1 and K = 3 cells score the same trials."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import NOISE, VAD, gender_factor, tiny_experiment
from run_helpers import isolated_cache, run_in_process

from interbias.embedding.cache import cache_chain_key
from interbias.experiments.schema import load_experiment, parse_experiment, with_data
from interbias.operators import Chain
from interbias.trials.enrolment import first_enrolment
from interbias.utils.errors import ConfigError, TrialError

ENROL = {
    "name": "enrolment",
    "type": "protocol",
    "reference": "k1",
    "levels": {"k1": {"enrol_utterances": 1}, "k3": {"enrol_utterances": 3}},
}


def _exp(factors: list, **extra):
    data = {"name": "P", "corpus": "synthetic", "factors": factors, **extra}
    return parse_experiment(data, where="p.yaml")


def test_protocol_levels_set_each_cells_k_and_vad_and_the_trials_take_the_largest_k() -> None:
    exp = _exp([ENROL, VAD, NOISE], trials={"targets": 10})
    assert exp.trials.enrol_utterances == 3  # drawn once with the largest K
    cells = {c.id: c for c in exp.cells()}
    assert len(cells) == 8
    c = cells["enrolment=k1,vad=on,noise=n5"]
    assert (c.enrol_utterances, c.vad, c.stratum) == (1, "energy", "all")
    assert c.test_chain.fingerprint == cells["enrolment=k3,vad=none,noise=n5"].test_chain.fingerprint
    assert exp.frontend_for(c).vad == "energy"
    assert exp.frontend_for(cells["enrolment=k3,vad=none,noise=clean"]) == exp.frontend
    assert [f.name for f in exp.protocol_factors] == ["enrolment", "vad"]
    # a plain experiment's cells carry no overrides
    plain = _exp([NOISE])
    assert all(c.enrol_utterances is None and c.vad is None for c in plain.cells())


@pytest.mark.parametrize(
    ("factors", "extra", "message"),
    [
        (
            [{**ENROL, "levels": {"k1": {"window_s": 2}, "k3": {"enrol_utterances": 3}}}],
            {},
            "p.yaml: factors[0] (enrolment).levels.k1: window_s cannot be set by a protocol level; "
            "allowed: enrol_utterances, vad",
        ),
        (
            [{**ENROL, "levels": {"k1": {"enrol_utterances": 1}, "k3": {"vad": "energy"}}}],
            {},
            "p.yaml: factors[0] (enrolment).levels: every level of a protocol factor sets the same keys, "
            "got k1: enrol_utterances; k3: vad",
        ),
        (
            [{**ENROL, "levels": {"k1": {"enrol_utterances": 0}, "k3": {"enrol_utterances": 3}}}],
            {},
            "p.yaml: factors[0] (enrolment).levels.k1.enrol_utterances: must be an integer >= 1, got 0",
        ),
        (
            [{**VAD, "levels": {"none": {"vad": "none"}, "on": {"vad": "loud"}}}],
            {},
            "p.yaml: factors[0] (vad).levels.on.vad: 'loud' is not one of none, energy, webrtc, silero",
        ),
        (
            [{**ENROL, "apply_to": "test"}],
            {},
            "p.yaml: factors[0] (enrolment): apply_to do not apply to a protocol factor",
        ),
        (
            [ENROL, {**ENROL, "name": "again"}],
            {},
            "p.yaml: factors: enrolment and again both set enrol_utterances; one factor per setting",
        ),
        (
            [ENROL],
            {"trials": {"enrol_utterances": 3}},
            "p.yaml: trials.enrol_utterances: set by the protocol factor enrolment; remove it from trials",
        ),
        (
            [ENROL],
            {"trials": {"utterances_per_speaker": 3}},
            "p.yaml: trials.enrol_utterances: 3 enrolment utterances and one test utterance need 4 utterances per "
            "speaker, but trials.utterances_per_speaker is 3",
        ),
        (
            [VAD],
            {"scoring": {"norm": "s-norm"}},
            "p.yaml: scoring.norm: s-norm is not defined when a protocol factor sets the VAD per cell "
            "(the cohort is embedded under one front end)",
        ),
        (
            [{**VAD, "levels": {"none": {"vad": "none"}, "on": {"vad": "webrtc"}}}],
            {"frontend": {"sample_rate_hz": 22050}},
            "p.yaml: factors (vad).levels.on: frontend.vad: webrtc does not support 22050 Hz",
        ),
        ([{**ENROL, "type": "protocl"}], {}, "type: 'protocl' is not one of population, acoustic, protocol"),
    ],
)
def test_bad_protocol_factors_are_one_line(factors: list, extra: dict, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        _exp(factors, **extra)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_an_external_trial_list_is_refused_with_a_protocol_k(tmp_path: Path) -> None:
    lst = tmp_path / "t.txt"
    lst.write_text("1 a b\n")
    with pytest.raises(ConfigError, match=r"^P: a protocol factor sets enrol_utterances, which applies to sampled"):
        with_data(_exp([ENROL]), trials=lst)
    with_data(_exp([VAD]), trials=lst)  # a VAD factor applies to any trial list


def test_the_first_k_enrolment_columns_keep_every_trial_identity() -> None:
    frame = pd.DataFrame(
        {
            "trial_id": [0, 1],
            "enrol": ["a", "b"],
            "enrol_2": ["c", "d"],
            "enrol_3": ["e", "f"],
            "test": ["x", "y"],
            "label": [1, 0],
        }
    )
    one = first_enrolment(frame, 1)
    assert list(one.columns) == ["trial_id", "enrol", "test", "label"]
    assert list(first_enrolment(frame, 2).columns) == ["trial_id", "enrol", "enrol_2", "test", "label"]
    assert first_enrolment(frame, 3) is frame and first_enrolment(frame, None) is frame
    pd.testing.assert_frame_equal(one, frame[["trial_id", "enrol", "test", "label"]])
    with pytest.raises(
        TrialError, match="a cell scores 4 enrolment utterances per trial model, but the trial list holds 3"
    ):
        first_enrolment(frame, 4)


def test_a_cells_vad_is_in_its_embedding_cache_key() -> None:
    exp = _exp([VAD])
    none, on = exp.cells()
    keys = {cache_chain_key(Chain(), frozenset(), exp.frontend_for(c)) for c in (none, on)}
    assert len(keys) == 2
    # the none level's key is the experiment front end's key (a run without the factor shares its cache)
    assert cache_chain_key(Chain(), frozenset(), exp.frontend_for(none)) == cache_chain_key(
        Chain(), frozenset(), exp.frontend
    )


def test_the_catalogue_e22_has_a_question_and_a_synthetic_variant() -> None:
    root = Path(__file__).resolve().parents[1] / "conditions" / "E22.yaml"
    exp = load_experiment(root, corpus="synthetic")
    assert exp.question.startswith("Do multi-utterance enrolment and voice activity detection")
    assert exp.variant == "synthetic" and exp.trials.enrol_utterances == 3
    assert [f.type for f in exp.factors] == ["protocol", "protocol", "acoustic"]
    assert {(c.enrol_utterances, c.vad) for c in exp.cells()} == {
        (1, "none"),
        (1, "webrtc"),
        (3, "none"),
        (3, "webrtc"),
    }


def _unit(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, np.float64)
    return v / np.linalg.norm(v)


def test_k1_and_k3_cells_score_the_same_trials_under_their_own_front_ends(
    tmp_path: Path, session_cache: Path, tiny_corpus
) -> None:
    """Every cell's scores file holds the same trial ids and labels (paired); the K = 1 cell's
    score is the cosine of the first enrolment utterance's and the test utterance's vectors, the
    K = 3 cell's the cosine with the normalised mean of the three, each from the embedder of the
    cell's own front end (the VAD cells' vectors differ and record the kept speech share)."""
    from interbias.audio import frontend as audio
    from interbias.encoders import load_encoder
    from interbias.run.conductor import RunOptions, run
    from interbias.run.rundir import RunDir

    cache = isolated_cache(tmp_path, session_cache)
    exp = tiny_experiment(
        tmp_path,
        factors=[gender_factor(), ENROL, VAD],
        trials={"targets": 6, "nontargets": 6, "min_speakers": 4},
    )
    opts = RunOptions(
        experiment=str(exp), encoders=["mfcc-stats"], out=tmp_path / "r", cache_dir=cache, quiet=True, command=["t"]
    )
    out = run(opts)
    rd = RunDir(out.run_dir)
    tl = rd.read_trials()
    assert {"enrol_2", "enrol_3"} <= set(tl.frame.columns)
    res = out.results
    assert len(res) == 8 and (res["n_dropped_trials"] == 0).all()
    enc = load_encoder("mfcc-stats")
    man = tiny_corpus
    by_id = {u.id: u for u in man}
    vec: dict[tuple[str, str], np.ndarray] = {}

    def embed(uid: str, vad: str) -> np.ndarray:
        if (uid, vad) not in vec:
            fe = audio.FrontEnd(vad=vad)
            x = audio.load(man.resolve(by_id[uid]), fe, vad=True).samples
            vec[(uid, vad)] = _unit(enc.embed([x])[0])
        return vec[(uid, vad)]

    ops = rd.read_operations()
    assert set(ops["vad"]) == {"none", "energy"}
    shares = [r for r in ops.loc[ops["vad"] == "energy", "realised"]]
    assert shares and all('"speech_share"' in r for r in shares)
    assert not any('"speech_share"' in r for r in ops.loc[ops["vad"] == "none", "realised"])
    ids_by_stratum: dict[str, np.ndarray] = {}
    for row in res.itertuples(index=False):
        scores = rd.read_scores("mfcc-stats", row.cell)
        sub = tl.for_stratum(row.stratum).set_index("trial_id").loc[scores["trial_id"].to_numpy()]
        ref = ids_by_stratum.setdefault(row.stratum, scores["trial_id"].to_numpy())
        np.testing.assert_array_equal(scores["trial_id"].to_numpy(), ref)  # paired: the same trials
        np.testing.assert_array_equal(scores["label"].to_numpy(), sub["label"].to_numpy())
        k = 3 if "enrolment=k3" in row.cell else 1
        vad = "energy" if "vad=on" in row.cell else "none"
        cols = ["enrol", "enrol_2", "enrol_3"][:k]
        want = [
            float(_unit(np.mean([embed(u, vad) for u in r[cols]], axis=0)) @ embed(r["test"], vad))
            for _, r in sub.iterrows()
        ]
        np.testing.assert_allclose(scores["score"].to_numpy(), want, rtol=0, atol=2e-5)
        assert row.n_utterances == len(set(sub[cols].to_numpy().ravel()) | set(sub["test"]))
    # a resumed run that scores only the VAD cells again keeps every row of the operations record
    for cell in res["cell"]:
        if "vad=on" in cell:
            rd.cell_record_path("mfcc-stats", cell).unlink()
    again = run(opts)
    assert again.cells_done_before == 4 and again.n_embedded == 0
    pd.testing.assert_frame_equal(rd.read_operations(), ops)


def _findings(run_dir: Path, out: Path, boot: int) -> pd.DataFrame:
    from typer.testing import CliRunner

    from interbias.cli import app

    res = CliRunner().invoke(app, ["analyze", str(run_dir), "--bootstrap", str(boot), "--out", str(out), "--quiet"])
    assert res.exit_code == 0, res.output
    return pd.read_csv(out / "findings.csv")


def test_a_protocol_factor_gets_main_effects_and_interactions_like_any_factor(
    tmp_path: Path, session_cache: Path, tiny_corpus
) -> None:
    exp = tiny_experiment(tmp_path, factors=[ENROL, NOISE], trials={"targets": 8, "min_speakers": 4})
    out = run_in_process(exp, tmp_path, session_cache)
    f = _findings(out.run_dir, tmp_path / "a", 200)
    effects = set(f["effect"])
    assert "main enrolment=k3 − enrolment=k1 (averaged over noise)" in effects
    ie = f[f["effect"] == "IE enrolment×noise at k3, n5"]
    assert len(ie) == 1 and ie["kind"].iloc[0] == "interaction"
    res = out.results.set_index("cell")["eer"]
    want = (
        res["enrolment=k3,noise=n5"]
        - res["enrolment=k3,noise=clean"]
        - res["enrolment=k1,noise=n5"]
        + res["enrolment=k1,noise=clean"]
    )
    assert ie["estimate"].iloc[0] == pytest.approx(want, abs=1e-12)
    assert ie["lo"].iloc[0] <= ie["estimate"].iloc[0] <= ie["hi"].iloc[0]


@pytest.mark.slow
def test_e22_synthetic_runs_end_to_end_with_its_two_interactions(tmp_path: Path, session_cache: Path) -> None:
    """The catalogue's E22 on the synthetic corpus with CAM++ (2.5 min on a built corpus, 8 from empty): eight
    paired cells, and the findings' enrolment × noise and vad × noise interactions with intervals."""
    from interbias.run.conductor import RunOptions, run
    from interbias.run.rundir import RunDir

    root = Path(__file__).resolve().parents[1] / "conditions" / "E22.yaml"
    opts = RunOptions(
        experiment=str(root),
        corpus="synthetic",
        encoders=["CAM++"],
        out=tmp_path / "r",
        cache_dir=session_cache,
        quiet=True,
        command=["t"],
    )
    out = run(opts)
    assert len(out.results) == 8 and (out.results["n_dropped_trials"] == 0).all()
    rd = RunDir(out.run_dir)
    ids = {c: tuple(rd.read_scores("CAM++", c)["trial_id"]) for c in out.results["cell"]}
    assert len(set(ids.values())) == 1  # every cell scores the same trials
    f = _findings(out.run_dir, tmp_path / "a", 200)
    for effect in ("IE enrolment×noise at k3, none, gaussian_5", "IE vad×noise at k1, on, gaussian_5"):
        row = f[(f["effect"] == effect) & (f["model"] == "CAM++")]
        assert len(row) == 1 and np.isfinite(row[["lo", "hi"]].to_numpy()).all(), effect
