"""The metric registry: every weighted twin equals its function on the repeated trials, and the
harness's metric lists are the registry's answers."""

from __future__ import annotations

import numpy as np
import pytest

from interbias.metrics import registry
from interbias.metrics.llr import CostPoint
from interbias.metrics.weighted import metric_batch, metric_by_class, sort_cell
from interbias.metrics.weighted_llr import SharedCalibration
from interbias.utils.errors import MetricError
from interbias.utils.seeding import derive_rng

TWINS = registry.replicable()
CAL = SharedCalibration("m", 1.7, -0.4, CostPoint(0.05, 1.0, 2.0))


def _cell(name: str, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Seeded scores rounded to one decimal (many ties, also across classes), labels, and
    integer weights 0–3 for 40 replicates, two of them without target or non-target weight."""
    rng = derive_rng("test", "registry", name)
    labels = rng.permutation(n) < max(2, int(0.35 * n))
    scores = np.round(rng.normal(1.2 * labels, 1.0), 1)
    w = rng.integers(0, 4, size=(40, n))
    w[2:, np.argmax(labels)] += 1  # every other replicate weights both classes
    w[2:, np.argmin(labels)] += 1
    w[0, labels] = 0
    w[1, ~labels] = 0
    return scores, labels, w


def _repeated(spec: registry.MetricSpec, scores: np.ndarray, labels: np.ndarray, w: np.ndarray) -> float:
    """The metric of the trial set in which trial i appears w_i times (NaN without both classes)."""
    s, lab = np.repeat(scores, w), np.repeat(labels, w)
    if lab.all() or not lab.any():
        return np.nan
    return spec.function(CAL, s, lab) if spec.calibrated else spec.function(s, lab)


@pytest.mark.parametrize("name", TWINS)
@pytest.mark.parametrize("n", [9, 300])
def test_every_weighted_twin_equals_its_function_on_repeated_trials(name: str, n: int) -> None:
    spec = registry.spec(name)
    scores, labels, w = _cell(f"{name}{n}", n)
    want = np.array([_repeated(spec, scores, labels, row) for row in w])
    assert np.isnan(want[:2]).all() and np.isfinite(want[2:]).all()
    if spec.calibrated:
        got = spec.weighted(CAL, scores, labels, w)
    else:
        cell = sort_cell(scores, labels)
        got = metric_batch(name, cell, w)
        by_class = metric_by_class(name, cell, w[:, cell.target_order].T, w[:, cell.nontarget_order].T)
        assert np.array_equal(by_class, got, equal_nan=True)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_the_lists_are_queries_of_the_registry() -> None:
    from interbias.analysis import METRIC_CHOICES
    from interbias.analysis.suite import ANALYSIS_METRICS
    from interbias.run.results import METRICS, SCHEMA

    cols = registry.results_columns()
    assert METRICS == cols
    start = SCHEMA.index(cols[0])
    assert tuple(SCHEMA[start : start + len(cols)]) == cols
    assert set(METRIC_CHOICES) == set(registry.METRICS.names())
    # analyze needs a weighted twin (intervals, permutations) and lower-is-better values: auc has neither
    assert "auc" in METRIC_CHOICES and "auc" not in ANALYSIS_METRICS
    assert all(registry.spec(m).weighted is not None for m in ANALYSIS_METRICS)


def test_an_unknown_metric_names_every_registered_one() -> None:
    with pytest.raises(MetricError, match=r"unknown metric 'eerr'; valid: .*eer_legacy"):
        registry.spec("eerr")


def test_the_summary_is_every_sweep_metric_of_the_registry_at_its_function_value() -> None:
    """:func:`summarize` reads each registered sweep metric from one sort, in registration order,
    and each value is what the metric's own function gives (the functions are checked against
    independent references in test_metrics_verification.py); the summary lists no other metric."""
    from interbias.metrics.verification import summarize

    scores, labels, _ = _cell("summary", 120)
    summ = summarize(scores, labels)
    sweep = registry.names(lambda s: s.sweep is not None)
    assert tuple(summ.values) == sweep
    assert set(sweep) >= {"eer", "eer_legacy", "min_dcf", "auc", "frr_at_far1"}
    for name in sweep:
        assert summ[name] == registry.spec(name).function(scores, labels), name
    assert list(summ.as_dict())[len(sweep) :] == ["n_target", "n_nontarget"]


def test_a_prior_metric_in_the_summary_is_read_at_the_summary_prior() -> None:
    from interbias.metrics.verification import summarize

    scores, labels, _ = _cell("summary prior", 400)
    with_prior = registry.names(lambda s: s.sweep is not None and s.p_target is not None)
    assert with_prior  # min_dcf
    for name in with_prior:
        got = summarize(scores, labels, p_target=0.2)[name]
        assert got == registry.spec(name).function(scores, labels, p_target=0.2)
        assert got != summarize(scores, labels)[name]
