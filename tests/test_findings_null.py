"""Null test of the findings: E16-shaped runs with gender labels permuted across speakers (no
gap, no interaction exists) must rarely report a resolved gap or interaction under the default
design (corrected speaker bootstrap) and adjustment. The share under ``--adjust none`` is
printed beside it (it is what the adjustment buys). Score-level simulation (tests/e16_null.py):
the real resamplers, weighted EER, contrasts, gaps, effects and multiplicity code, no encoder."""

from __future__ import annotations

import pytest
from e16_null import effects, simulate

from interbias.analysis.effects import decide
from interbias.analysis.stats.multiplicity import DEFAULT_ADJUSTMENT


def _shares(runs: int, n_boot: int, tag: int = 0) -> tuple[dict[str, float], float]:
    hits = {DEFAULT_ADJUSTMENT: 0, "none": 0}
    main_resolved = 0
    for r in range(runs):
        results, reps, correction = simulate(tag * 100_000 + r, n_boot=n_boot)
        frame = effects(results, reps, correction)
        for method in hits:
            f = decide(frame, 0.05, method)
            hits[method] += bool(f[f.kind.isin(["gap", "interaction"])].resolved.any())
        main_resolved += bool(f[f.kind == "main"].resolved.any())
    return {k: v / runs for k, v in hits.items()}, main_resolved / runs


def test_null_design_rarely_resolves_a_gap_or_interaction() -> None:
    share, main = _shares(30, 200)
    print(f"share of 30 null runs with >= 1 resolved gap or interaction: {share}; with a resolved main effect {main}")
    assert share[DEFAULT_ADJUSTMENT] <= 0.07
    assert share["none"] > share[DEFAULT_ADJUSTMENT]  # the adjustment is what holds it down
    assert main > 0.9  # the real main effects (5 dB noise) are still found


@pytest.mark.slow
def test_null_designs_at_scale() -> None:
    """docs/analysis.md quotes the figures this test prints (300 designs, B = 200)."""
    share, main = _shares(300, 200, tag=1)
    print(f"share of 300 null designs with >= 1 resolved gap or interaction: {share}; resolved main effect {main}")
    assert share[DEFAULT_ADJUSTMENT] <= 0.05
    assert main > 0.95
