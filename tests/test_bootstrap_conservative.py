"""How conservative the speaker bootstrap is, on E16-sized simulated runs with a known gap.

Design: two strata (genders) of 24 speakers, 12 target and 12 non-target trials per speaker
(synthetic_runs.clustered_trials), scores from ScoreModel (speaker effects on both classes),
target means 2.0 / 1.5: a population EER gap of ≈ 0.066. Over SIMS fresh runs: coverage of the
95 % percentile interval of the gap (the known population value), and the ratio of the mean
bootstrap SE to the SD of the estimates across runs, for the gap and for a stratum's mean
non-target score. docs/outputs.md quotes the figures this test prints (300 × 200: coverage
0.963; SE/SD 1.17 for the gap, 1.29 for the non-target mean).
"""

from __future__ import annotations

import numpy as np
import pytest
from synthetic_runs import ScoreModel, clustered_scores, clustered_trials

from interbias import metrics
from interbias.analysis.bootstrap import Resampler, TrialDesign, percentile_ci
from interbias.analysis.multiplicity import bootstrap_se
from interbias.analysis.weighted import metric_batch, sort_cell
from interbias.seeding import derive_rng

MODEL = ScoreModel()
MU = {"gender=female": 2.0, "gender=male": 1.5}
SIMS, BOOT = 300, 200


@pytest.mark.slow
def test_gap_interval_covers_and_the_bootstrap_se_is_conservative() -> None:
    truth = MODEL.population_eer(MU["gender=male"]) - MODEL.population_eer(MU["gender=female"])
    trials = clustered_trials(dict.fromkeys(MU, 24), 12, 12)
    design = TrialDesign.from_frame(trials)
    rows = {st: np.flatnonzero(design.stratum == st) for st in MU}
    non = rows["gender=female"][~design.label[rows["gender=female"]]]
    hits, gaps, gap_se, means, mean_se = 0, [], [], [], []
    for k in range(SIMS):
        rng = derive_rng("test-bootstrap-conservative", k)
        boot = Resampler(design, n_boot=BOOT, seed=k)
        est, reps, scores_f = 0.0, np.zeros(BOOT), None
        for sign, st in ((-1, "gender=female"), (1, "gender=male")):
            part = trials.iloc[rows[st]]
            s = clustered_scores(part, MODEL, MU[st], rng)
            y = design.label[rows[st]]
            est += sign * metrics.eer(s, y)
            reps += sign * metric_batch("eer", sort_cell(s, y), boot.weights(rows[st]))
            if st == "gender=female":
                scores_f = s[~y]
        lo, hi, _ = percentile_ci(reps)
        hits += bool(lo <= truth <= hi)
        gaps.append(est)
        gap_se.append(float(bootstrap_se(reps)))
        w = boot.weights(non)
        means.append(float(scores_f.mean()))
        mean_se.append(float(bootstrap_se((w * scores_f).sum(axis=1) / w.sum(axis=1))))
    ratio_gap = float(np.mean(gap_se) / np.std(gaps, ddof=1))
    ratio_mean = float(np.mean(mean_se) / np.std(means, ddof=1))
    print(
        f"gap coverage {hits / SIMS:.3f}; mean bootstrap SE / SD of estimates: gap {ratio_gap:.2f}, "
        f"non-target mean {ratio_mean:.2f}"
    )
    assert hits / SIMS >= 0.95
    assert ratio_gap >= 1.0 and ratio_mean >= 1.0
