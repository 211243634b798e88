"""Spoofing metrics of verification systems (ADD 2023, Section 3.1).

A spoof trial pairs a genuine enrolment of a speaker with attack audio imitating them; it
should be rejected. For one system and one condition:

- ``spoof_threshold``: the bona fide EER threshold (interpolated crossing of the target and
  non-target curves, :func:`interbias.metrics.verification.eer_from_sweep`);
- ``spoof_far``: the share of spoof trials accepted there, P(s ≥ t_EER | spoof) — the deception
  success rate of ADD 2023 for a single system (N = 1);
- ``eer_spoof``: the EER of target trials against spoof trials (spoofs as the negatives).

Over N systems, DSR = W / (A × N) (ADD 2023 Eq. 1): W counts the attack samples accepted by
each system at its own EER threshold, summed over systems; A is the number of attack samples.
The weighted DSR of two rounds is WDSR = γ·DSR_R1 + δ·(α·DSR_R2,baseline + β·DSR_R2)
(Eqs. 2–3, γ = 0.4, δ = 0.6, α = 0.4, β = 0.6).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

# the per-cell metrics are computed by the run layer (interbias.metrics.spoof); re-exported here
from interbias.metrics.spoof import SPOOF_COLUMNS as SPOOF_COLUMNS
from interbias.metrics.spoof import SpoofSummary as SpoofSummary
from interbias.metrics.spoof import accepted as accepted
from interbias.metrics.spoof import spoof_summary as spoof_summary
from interbias.utils.errors import AnalysisError, MetricError
from interbias.utils.numbers import require


def deception_success_rate(wrong: Sequence[int], n_samples: int) -> float:
    """DSR = W / (A × N): ``wrong`` holds each of the N systems' count of accepted attack
    samples (at its own EER threshold), W their sum; A = ``n_samples``."""
    w = np.asarray(wrong, dtype=np.int64)
    if w.ndim != 1 or len(w) == 0:
        raise MetricError("DSR needs the wrong-detection count of at least one system")
    if n_samples <= 0:
        raise MetricError("DSR needs at least one attack sample (A > 0)")
    if (w < 0).any() or (w > n_samples).any():
        raise MetricError(f"wrong-detection counts must lie in [0, A = {n_samples}]")
    return float(w.sum() / (n_samples * len(w)))


def weighted_dsr(
    dsr_r1: float,
    dsr_r2: float,
    dsr_r2_baseline: float,
    *,
    gamma: float = 0.4,
    delta: float = 0.6,
    alpha: float = 0.4,
    beta: float = 0.6,
) -> float:
    """WDSR = γ·DSR_R1 + δ·WDSR_R2, WDSR_R2 = α·DSR_R2,baseline + β·DSR_R2 (ADD 2023 Eqs. 2–3);
    every weight a finite number >= 0 and every DSR finite and >= 0 (a rate, or a percentage as in
    ADD 2023's tables; else a :class:`MetricError`)."""
    for name, w in (("--gamma", gamma), ("--delta", delta), ("--alpha", alpha), ("--beta", beta)):
        require(name, w, low=0.0, error=MetricError)
    for name, d in (("--r1", dsr_r1), ("--r2", dsr_r2), ("--r2-baseline", dsr_r2_baseline)):
        require(name, d, low=0.0, error=MetricError)
    return float(gamma * dsr_r1 + delta * (alpha * dsr_r2_baseline + beta * dsr_r2))


def dsr_by_cell(results: pd.DataFrame) -> pd.DataFrame:
    """DSR over the encoders of each (experiment, cell) of a spoofing results table.

    Every encoder of a cell must have scored the same number A of spoof trials (the ADD
    setting: one attack set, N detectors); otherwise the cell is an error.
    """
    missing = [c for c in ("experiment", "cell", "model", "n_spoof", "n_spoof_accepted") if c not in results]
    if missing:
        raise AnalysisError(f"results lack spoofing column(s) {', '.join(missing)}")
    rows = []
    for (exp, cell), sub in results.groupby(["experiment", "cell"], sort=False):
        n = pd.to_numeric(sub["n_spoof"]).astype(int)
        if n.nunique() != 1:
            raise AnalysisError(
                f"{exp} / {cell}: encoders scored different numbers of spoof trials ({sorted(set(n.tolist()))}); "
                "DSR = W / (A × N) needs one attack set"
            )
        wrong = pd.to_numeric(sub["n_spoof_accepted"]).astype(int).tolist()
        rows.append(
            {
                "experiment": exp,
                "cell": cell,
                "n_models": len(sub),
                "models": ";".join(sub["model"].astype(str)),
                "n_spoof": int(n.iloc[0]),
                "n_spoof_accepted": int(sum(wrong)),
                "dsr": deception_success_rate(wrong, int(n.iloc[0])),
            }
        )
    return pd.DataFrame(
        rows, columns=["experiment", "cell", "n_models", "models", "n_spoof", "n_spoof_accepted", "dsr"]
    )


def spoofing_for_run(run_dir: Path) -> pd.DataFrame | None:
    """The DSR table of a run directory (``None`` when its results have no spoof columns)."""
    from interbias.analysis import read_results

    results = read_results(Path(run_dir))
    if "n_spoof" not in results.columns:
        return None
    done = results[results["n_spoof"].astype(str).str.strip() != ""]
    return dsr_by_cell(done)
