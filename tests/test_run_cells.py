"""cells.py directly: one cell × encoder scored from hand-made vectors (cosine scores, dropped
trials counted, metrics on the kept trials, the failure limit)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pytest

from interbias.experiments.schema import Cell
from interbias.metrics import verification as metrics
from interbias.operators import Chain, parse_chain
from interbias.run.cells import failed_items, score_cell, trial_ids
from interbias.utils.errors import RunError
from interbias.utils.seeding import derive_rng

CELL = Cell(
    (("noise", "n10"),), "all", Chain(), parse_chain([{"op": "noise", "kind": "gaussian", "snr_db": 10}], where="t")
)


@dataclass
class FakeEncoder:
    label: str = "enc"
    fingerprint: str = "encfp"


@dataclass
class FakeEmbedder:
    """What score_cell reads of the embedding stage: vectors, failures, front-end records."""

    vectors: dict = field(default_factory=dict)
    failures: dict = field(default_factory=dict)

    def failed(self, uid: str, fp: str) -> str | None:
        return self.failures.get((uid, fp))

    def frontend_record(self, uid: str, fp: str) -> dict:
        return {"source_rate_hz": 8000 if uid == "t2" else 16000, "channels": 1}


def _unit(rng: np.random.Generator) -> np.ndarray:
    v = rng.standard_normal(4)
    return (v / np.linalg.norm(v)).astype(np.float32)  # encoders give L2-normalised vectors


def _setup(fail: set[str] = frozenset()) -> tuple[pd.DataFrame, FakeEmbedder]:
    rng = derive_rng("test-cells")
    enrol, test = ["e1", "e2", "e1", "e2"], ["t1", "t2", "t2", "t1"]
    trials = pd.DataFrame(
        {
            "trial_id": [0, 1, 2, 3],
            "enrol": enrol,
            "test": test,
            "label": [1, 1, 0, 0],
            "enrol_speaker": ["a", "b", "a", "b"],
            "test_speaker": ["a", "b", "b", "a"],
        }
    )
    emb = FakeEmbedder()
    for u in ("e1", "e2"):
        emb.vectors[(u, CELL.enrol_chain.fingerprint, "encfp")] = _unit(rng)
    for u in ("t1", "t2"):
        if u in fail:
            emb.failures[(u, CELL.test_chain.fingerprint)] = f"{u}: decode failed"
        else:
            emb.vectors[(u, CELL.test_chain.fingerprint, "encfp")] = _unit(rng)
    return trials, emb


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


def test_scores_are_cosines_and_metrics_use_every_kept_trial() -> None:
    trials, emb = _setup()
    got = score_cell(CELL, FakeEncoder(), trials, emb, 0.0, 16000)
    efp, tfp = CELL.enrol_chain.fingerprint, CELL.test_chain.fingerprint
    want = [
        _cos(emb.vectors[(e, efp, "encfp")], emb.vectors[(t, tfp, "encfp")])
        for e, t in zip(trials.enrol, trials.test, strict=True)
    ]
    np.testing.assert_allclose(got.frame["score"].to_numpy(), want, rtol=1e-5)
    assert list(got.frame.columns) == ["trial_id", "label", "score", "dropped"] and not got.frame["dropped"].any()
    ref = metrics.summarize(np.asarray(want), trials["label"].to_numpy()).as_dict()
    assert got.row["eer"] == pytest.approx(ref["eer"]) and got.row["n_dropped_trials"] == 0
    assert got.row["n_speakers"] == 2 and got.row["n_utterances"] == 4 and got.row["n_failed"] == 0
    assert got.row["n_upsampled"] == 1 and got.row["upsampled_from"] == "8000"  # t2 came at 8 kHz
    assert got.failures == []


def test_a_failed_utterance_drops_its_trials_within_the_limit() -> None:
    trials, emb = _setup(fail={"t2"})
    assert failed_items(CELL, FakeEncoder(), trials, emb) == {("t2", "test"): "t2: decode failed"}
    got = score_cell(CELL, FakeEncoder(), trials, emb, 0.5, 16000)
    assert got.frame["dropped"].tolist() == [False, True, True, False]
    assert np.isnan(got.frame["score"].to_numpy()[1:3]).all()
    assert got.row["n_dropped_trials"] == 2 and got.row["n_failed"] == 1
    assert got.failures == [{"utterance": "t2", "side": "test", "error": "t2: decode failed"}]


def test_more_drops_than_the_limit_is_a_run_error() -> None:
    trials, emb = _setup(fail={"t2"})
    with pytest.raises(RunError) as exc:
        score_cell(CELL, FakeEncoder(), trials, emb, 0.25, 16000)
    assert str(exc.value) == (
        "cell noise=n10 / enc: 1 utterance(s) failed, dropping 2 of 4 trials (50.0% > the 25.0% limit); "
        "first: t2: decode failed"
    )


def test_trial_ids_index_like_a_sorted_unique() -> None:
    """trial_ids (hashing) gives the ids and positions np.unique + searchsorted give, for one
    and for K enrolment columns, with object and Arrow-backed string columns."""
    rng = derive_rng("test", "trial-ids")
    names = np.array([f"s{i % 37:02d}/u{i:04d}" for i in rng.permutation(500)], dtype=object)
    frame = pd.DataFrame({c: names[rng.integers(0, 500, size=300)] for c in ("enrol", "enrol_2", "test")})
    for f in (frame, frame.astype("string[pyarrow]")):
        for cols in (["test"], ["enrol", "enrol_2"]):
            ids, codes = trial_ids(f, cols)
            raw = frame[cols].to_numpy()
            want = np.unique(raw.ravel())
            assert ids.tolist() == want.tolist()
            assert np.array_equal(codes, np.searchsorted(want, raw))
