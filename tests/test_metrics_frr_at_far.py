"""``frr_at_far1`` against a reference written from the definition: every candidate threshold
tried in exact rational arithmetic (no sweep, no binary search)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from interbias.metrics import FAR_TARGET, frr_at_far1, frr_at_far_from_sweep, summarize, threshold_sweep
from interbias.utils.errors import MetricError
from interbias.utils.seeding import derive_rng


def reference(scores: list[float], labels: list[int], far: Fraction = Fraction(1, 100)) -> float:
    """The FRR at the lowest threshold t (a score, or +inf) whose false-acceptance rate
    #(non-targets with s >= t) / #non-targets is at most ``far``; accept when s >= t."""
    tgt = [s for s, lab in zip(scores, labels, strict=True) if lab]
    non = [s for s, lab in zip(scores, labels, strict=True) if not lab]
    for t in [*sorted(set(scores)), float("inf")]:
        if Fraction(sum(s >= t for s in non), len(non)) <= far:
            return float(Fraction(sum(s < t for s in tgt), len(tgt)))
    raise AssertionError("unreachable: at +inf nothing is accepted")


@pytest.mark.parametrize("n_non", [1, 7, 99, 100, 101, 200, 299, 1000, 4321])
@pytest.mark.parametrize("decimals", [1, 3])
def test_equals_the_reference_on_tied_seeded_scores(n_non: int, decimals: int) -> None:
    rng = derive_rng("test", "frr_at_far", str(n_non), str(decimals))
    n_t = int(rng.integers(1, 60))
    labels = np.r_[np.ones(n_t, int), np.zeros(n_non, int)]
    scores = np.round(rng.normal(1.5 * labels, 1.0), decimals)  # ties within and across classes
    got = frr_at_far1(scores, labels)
    assert got == reference(scores.tolist(), labels.tolist())
    assert summarize(scores, labels)["frr_at_far1"] == got


def test_a_far_of_exactly_one_percent_is_allowed() -> None:
    # 100 non-targets, one of them above every target: FAR 1/100 <= 1 % at the lowest target's score
    labels = [1] * 4 + [0] * 100
    scores = [5.0, 6.0, 7.0, 8.0] + [9.0] + [0.0] * 99
    assert frr_at_far1(scores, labels) == 0.0 == reference(scores, labels)
    # a second such non-target makes the FAR 2 %: the threshold moves above 9.0 and rejects every target
    scores[5] = 9.0
    assert frr_at_far1(scores, labels) == 1.0 == reference(scores, labels)


def test_tied_scores_are_accepted_or_rejected_together() -> None:
    # a target tied with the only non-target: t = 1.0 accepts both (FAR 1), so t = 2.0
    assert frr_at_far1([1.0, 1.0, 2.0], [1, 0, 1]) == 0.5 == reference([1.0, 1.0, 2.0], [1, 0, 1])


@pytest.mark.parametrize(
    ("scores", "labels", "want"),
    [
        ([1.0, 0.0], [1, 0], 0.0),  # one of each, separated
        ([0.0, 1.0], [1, 0], 1.0),  # the non-target above the target
        ([0.5, 0.5, 0.5, 0.5], [1, 1, 0, 0], 1.0),  # every score tied: only +inf has FAR <= 1 %
        ([3.0, 2.0, 1.0, 0.0], [1, 1, 0, 0], 0.0),
    ],
)
def test_degenerate_and_tiny_cells(scores: list[float], labels: list[int], want: float) -> None:
    assert frr_at_far1(scores, labels) == want == reference(scores, labels)


def test_other_far_levels_and_invalid_inputs() -> None:
    rng = derive_rng("test", "frr_at_far", "levels")
    labels = np.r_[np.ones(40, int), np.zeros(500, int)]
    scores = np.round(rng.normal(labels, 1.0), 2)
    sweep = threshold_sweep(scores, labels)
    for far in (Fraction(1, 1000), Fraction(1, 20), Fraction(1, 2)):
        assert frr_at_far_from_sweep(sweep, float(far)) == reference(scores.tolist(), labels.tolist(), far)
    assert frr_at_far_from_sweep(sweep, FAR_TARGET) == frr_at_far1(scores, labels)
    for far in (0.0, 1.0, -0.1):
        with pytest.raises(MetricError, match="far must be in"):
            frr_at_far_from_sweep(sweep, far)
    with pytest.raises(MetricError, match="no target trials"):
        frr_at_far1([0.1, 0.2], [0, 0])
    with pytest.raises(MetricError, match="NaN or infinite"):
        frr_at_far1([0.1, float("nan")], [1, 0])
