"""Speaker-cluster bootstrap of one cell's EER: vectorised replicates against a naive loop.

The naive loop expands each replicate into a repeated trial list (np.repeat) and calls
interbias.metrics.verification.eer; the vectorised path sorts once and evaluates all replicates from the
weight matrix. Both give identical numbers (checked here); the ratio of their times is printed.
Usage: python benchmarks/bootstrap_speed.py [n_speakers] [trials_per_class] [B]
"""

from __future__ import annotations

import sys
import time

import numpy as np
import pandas as pd

from interbias.analysis.stats.bootstrap import Resampler, TrialDesign
from interbias.metrics import verification as metrics
from interbias.metrics.weighted import metric_batch, sort_cell
from interbias.utils.seeding import derive_rng


def main() -> None:
    n_spk, n, n_boot = (int(a) for a in (sys.argv[1:] + ["50", "2000", "1000"][len(sys.argv[1:]) :]))
    rng = derive_rng("benchmark", "bootstrap")
    spk = rng.integers(0, n_spk, size=n)
    pairs = rng.integers(0, n_spk, size=(n, 2))
    pairs[:, 1] = (pairs[:, 0] + 1 + pairs[:, 1] % (n_spk - 1)) % n_spk
    trials = pd.DataFrame(
        {
            "trial_id": np.arange(2 * n),
            "stratum": "all",
            "label": np.r_[np.ones(n, int), np.zeros(n, int)],
            "enrol_speaker": [f"s{i}" for i in np.r_[spk, pairs[:, 0]]],
            "test_speaker": [f"s{i}" for i in np.r_[spk, pairs[:, 1]]],
        }
    )
    scores = np.r_[rng.normal(2, 1, n), rng.normal(0, 1, n)]
    design = TrialDesign.from_frame(trials)
    rows = np.arange(2 * n)
    weights = Resampler(design, n_boot=n_boot, seed=0).weights(rows)

    t0 = time.perf_counter()
    fast = metric_batch("eer", sort_cell(scores, design.label), weights)
    t_fast = time.perf_counter() - t0
    t0 = time.perf_counter()
    k = min(n_boot, 100)  # the naive loop is timed on k replicates and scaled
    slow = [metrics.eer(np.repeat(scores, w.astype(int)), np.repeat(design.label, w.astype(int))) for w in weights[:k]]
    t_slow = (time.perf_counter() - t0) * n_boot / k
    assert np.array_equal(fast[:k], np.array(slow)), "vectorised and naive replicates differ"
    print(f"{n_spk} speakers, {2 * n} trials, B={n_boot}")
    print(f"vectorised: {t_fast:.3f} s; naive loop (scaled from {k}): {t_slow:.3f} s; speed-up {t_slow / t_fast:.1f}x")


if __name__ == "__main__":
    main()
