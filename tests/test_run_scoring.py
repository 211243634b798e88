"""BLAS-bound cosine scoring against a per-trial float64 loop, every block strategy forced in turn."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from interbias.run import scoring
from interbias.run.scoring import block_strategy, cosine_scores, rows_per_block
from interbias.utils.seeding import derive_rng

#: float32 BLAS products: scores are checked against a float64 loop within a bound that holds on
#: any kernel; byte equality only between two calls of one process (same dispatch).
pytestmark = pytest.mark.numerics


def unit_rows(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    x = rng.normal(size=(n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def loop_scores(enrol: np.ndarray, test: np.ndarray, ei: np.ndarray, ti: np.ndarray) -> np.ndarray:
    """The per-trial reference: one float64 dot product per trial."""
    return np.array(
        [float(np.dot(enrol[a].astype(np.float64), test[b].astype(np.float64))) for a, b in zip(ei, ti, strict=True)]
    )


def float32_bound(dim: int) -> float:
    """|fl32(<a, b>) − <a, b>| ≤ D·u·Σ|a_i b_i| ≤ D·2⁻²⁴ for unit vectors; twice that for slack."""
    return 2 * dim * 2.0**-24


def case(seed: int, n_e: int, n_t: int, n: int, dim: int = 24):
    rng = derive_rng("scoring-test", seed)
    enrol, test = unit_rows(rng, n_e, dim), unit_rows(rng, n_t, dim)
    return enrol, test, rng.integers(0, n_e, n), rng.integers(0, n_t, n)


@pytest.mark.parametrize(
    "seed,n_e,n_t,n",
    [(0, 1, 1, 1), (1, 7, 5, 200), (2, 50, 3000, 40), (3, 300, 40, 5000), (4, 1000, 1000, 300), (5, 33, 17, 0)],
)
def test_matches_per_trial_loop(seed: int, n_e: int, n_t: int, n: int) -> None:
    enrol, test, ei, ti = case(seed, n_e, n_t, n)
    got = cosine_scores(enrol, test, ei, ti)
    assert got.dtype == np.float64 and got.shape == (n,)
    np.testing.assert_allclose(got, loop_scores(enrol, test, ei, ti), rtol=0, atol=float32_bound(enrol.shape[1]))


@pytest.mark.parametrize("strategy", ["dense", "subset", "gather"])
def test_each_strategy_matches_loop_with_many_blocks(monkeypatch: pytest.MonkeyPatch, strategy: str) -> None:
    # a small budget forces many enrolment blocks (rows not a multiple of the block, unsorted
    # and repeated indices), and the forced strategy must give the reference scores
    monkeypatch.setattr(scoring, "_PRODUCT_BUDGET", 64 * 10)
    monkeypatch.setattr(scoring, "block_strategy", lambda *a: strategy)
    monkeypatch.setattr(scoring, "_GATHER_CHUNK", 7)
    enrol, test, ei, ti = case(11, 203, 64, 4000, dim=40)
    strategies: Counter[str] = Counter()
    got = cosine_scores(enrol, test, ei, ti, strategies=strategies)
    assert rows_per_block(64) == 10 and strategies == Counter({strategy: 21})
    np.testing.assert_allclose(got, loop_scores(enrol, test, ei, ti), rtol=0, atol=float32_bound(40))


def test_sorted_and_scanned_test_lookup_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    enrol, test, ei, ti = case(12, 90, 500, 700)
    monkeypatch.setattr(scoring, "block_strategy", lambda *a: "subset")
    scanned = cosine_scores(enrol, test, ei, ti)
    monkeypatch.setattr(scoring, "_SORT_FACTOR", 10**9)  # always sort
    assert np.array_equal(cosine_scores(enrol, test, ei, ti), scanned)


def test_strategy_choice_follows_the_cost_model() -> None:
    g = scoring._GATHER_COST
    # every trial pair of a block used: one product against all tests
    assert block_strategy(100, 200, 200, 20_000) == "dense"
    # a block touching few of many tests: product against those only
    assert block_strategy(100, 100_000, 50, 2_000) == "subset"
    # scattered trials (one per row and column): gathering is cheaper than any product
    assert block_strategy(1000, 100_000, 1000, 1000) == "gather"
    # the exact break-even of dense against gather (ties go to the alphabetically first strategy)
    assert block_strategy(1, (2 * g + 1) * 10, (2 * g + 1) * 10, 10) == "dense"
    assert block_strategy(1, (2 * g + 1) * 10 + 1, (2 * g + 1) * 10, 10) == "gather"
    # a product over the memory budget is never chosen
    big = scoring._PRODUCT_BUDGET + 1
    assert block_strategy(1, big, big, 10**9) == "gather"


def test_rerun_is_byte_identical_and_order_independent_of_block_grouping() -> None:
    enrol, test, ei, ti = case(13, 400, 400, 30_000, dim=64)
    a = cosine_scores(enrol, test, ei, ti)
    assert a.tobytes() == cosine_scores(enrol, test, ei, ti).tobytes()
    # permuting trials permutes scores: each trial's score does not depend on its position
    perm = derive_rng("scoring-perm").permutation(len(ei))
    np.testing.assert_array_equal(cosine_scores(enrol, test, ei[perm], ti[perm]), a[perm])
