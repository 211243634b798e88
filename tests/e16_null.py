"""E16-shaped score-level simulations without encoders, for the findings' null tests.

Design (E16 synthetic's shape): 2 gender strata × 7 noise levels × 3 models, ``n`` speakers per
stratum, ``m`` target and ``m`` non-target trials per speaker (clustered_trials). All speakers
come from one population and are assigned to the two strata by a random permutation, so no
gender gap and no gender × noise interaction exists. Noise lowers the target mean (a real main
effect). Scores of one model share speaker effects across noise levels and a per-trial term
(correlation ``rho``), as the noise levels of E16 score the same trials. Each run comes with its
speaker-bootstrap replicates and the non-target-trial replicates of the corrected design.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from synthetic_runs import clustered_trials

from interbias.analysis.contrasts import compute_contrasts
from interbias.analysis.effects import Correction, collect, decide
from interbias.analysis.gaps import compute_gaps
from interbias.analysis.stats.bootstrap import Resampler, TrialDesign
from interbias.analysis.stats.replicates import Replicates
from interbias.analysis.suite import design_constants
from interbias.metrics import verification as metrics
from interbias.metrics.weighted import metric_batch, sort_cell
from interbias.utils.seeding import derive_rng

GENDERS = ("female", "male")
NOISE = {"clean": 2.4, "g25": 2.3, "g15": 2.0, "g5": 1.4, "x25": 2.35, "x15": 2.1, "x5": 1.6}
MODELS = ("camplus", "ge2e", "mfcc")
RESOLVED = {"name": "N16", "factors": [{"name": "gender", "type": "population"}, {"name": "noise"}]}


def simulate(r: int, *, n: int = 24, m: int = 12, n_boot: int = 100, rho: float = 0.7):
    """(results, Replicates) of simulated run ``r``: the real resampler and weighted EER."""
    rng = derive_rng("e16-null", r)
    trials = clustered_trials({f"gender={g}": n for g in GENDERS}, m, m)
    spk = sorted(set(trials["enrol_speaker"]))
    relabel = dict(zip(spk, [spk[i] for i in rng.permutation(len(spk))], strict=True))  # labels permuted
    trials["enrol_speaker"] = trials["enrol_speaker"].map(relabel)
    trials["test_speaker"] = trials["test_speaker"].map(relabel)
    design = TrialDesign.from_frame(trials)
    boot = Resampler(design, n_boot=n_boot, seed=r)
    nt = Resampler(design, n_boot=n_boot, seed=r, unit="nontarget")
    lab = trials["label"].to_numpy(bool)
    e_idx, t_idx = design.enrol, design.test
    rows, values, nt_values = [], {}, {}
    for model in MODELS:
        u, v = rng.normal(0, 0.6, len(spk)), rng.normal(0, 0.2, len(spk))
        shared = rng.normal(0, 1, len(trials))
        for noise, mu in NOISE.items():
            eps = rho * shared + np.sqrt(1 - rho**2) * rng.normal(0, 1, len(trials))
            scores = np.where(lab, mu + u[e_idx], v[e_idx] + v[t_idx]) + eps
            for g in GENDERS:
                sel = np.flatnonzero(design.stratum == f"gender={g}")
                cell = f"gender={g},noise={noise}"
                s, y = scores[sel], lab[sel]
                srt = sort_cell(s, y)
                values[("N16", model, cell)] = metric_batch("eer", srt, boot.weights(sel))
                nt_values[("N16", model, cell)] = metric_batch("eer", srt, nt.weights(sel))
                rows.append(
                    {
                        "experiment": "N16",
                        "dataset": "sim",
                        "model": model,
                        "family": "sv",
                        "cell": cell,
                        **{"factor_a": "gender", "level_a": g, "ref_a": "female"},
                        **{"factor_b": "noise", "level_b": noise, "ref_b": "clean"},
                        "eer": metrics.eer(s, y),
                    }
                )
    reps = Replicates("eer", "speaker", n_boot, r, 0.95, boot.rule, values)
    correction = Correction(
        Replicates("eer", "nontarget", n_boot, r, 0.95, nt.rule, nt_values),
        *design_constants(design, [np.flatnonzero(design.stratum == f"gender={g}") for g in GENDERS]),
    )
    return pd.DataFrame(rows), reps, correction


def effects(results: pd.DataFrame, reps: Replicates, correction: Correction | None = None) -> pd.DataFrame:
    """Every effect of one simulated run (before the adjustment), by the analysis' own functions;
    the corrected design with ``correction``, the plain speaker bootstrap without."""
    contrasts = compute_contrasts(results, "eer", reps)
    gaps = compute_gaps(results, "eer", resolved=RESOLVED, replicates=reps)
    return collect(results, "eer", contrasts, gaps, reps, correction=correction)[0]


def findings(
    results: pd.DataFrame, reps: Replicates, method: str, correction: Correction | None = None
) -> pd.DataFrame:
    """The findings' decisions of one simulated run at alpha 0.05."""
    return decide(effects(results, reps, correction), 0.05, method)
