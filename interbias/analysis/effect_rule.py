"""One interval rule for the effects reported outside findings.csv: the CM's gain (sasv_fusion.csv
``a_dcf_change``, every group row included), the QMF |gap| change (:mod:`interbias.analysis.qmf_gap`),
a fused model's EER change against each component (:mod:`interbias.analysis.fusion.paired`) and
the attack success gaps (attack_gaps.csv, :mod:`interbias.analysis.security.attacks`).

Each effect gets what a finding gets (:mod:`interbias.analysis.effects`, ``corrected`` design):

- SE² = a·V_S − c·V_N: V_S the variance of the effect's speaker-bootstrap replicates, V_N of its
  non-target-pair replicates (the same trials, :class:`~interbias.analysis.stats.bootstrap.Resampler`
  with ``unit="nontarget"``), a and c the design constants of
  :class:`~interbias.analysis.effects.Correction` over the trials the effect reads; the Student-t
  interval with the Satterthwaite df; no interval when the corrected variance is not positive;
- Holm over the table's family (every effect of the table with a p-value);
- the minimum-speakers rule: an effect whose trials (either side, for a gap) hold fewer than
  :data:`~interbias.analysis.groups.fairness_cluster.MIN_SPEAKERS` speakers is "too few speakers",
  never resolved, and is left out of the family;
- the bias stated: ``bias`` = mean of the speaker replicates − the estimate (a |gap| is biased
  away from 0 near 0; the interval is centred on the estimate, not corrected).

``status``: ``resolved`` (Holm-adjusted p < α), ``not resolved``, ``too few speakers`` or
``no interval``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from interbias.analysis.effects import Correction
from interbias.analysis.groups.fairness_cluster import MIN_SPEAKERS
from interbias.analysis.stats.bootstrap import Resampler, TrialDesign
from interbias.analysis.stats.multiplicity import adjust, wald_interval, wald_p
from interbias.analysis.suite import design_constants

RESOLVED, UNRESOLVED, TOO_FEW, NO_INTERVAL = "resolved", "not resolved", "too few speakers", "no interval"
#: Columns :func:`effect_columns` adds (after a prefix).
FIELDS = ("se", "df", "lo", "hi", "p", "p_holm", "bias", "speakers", "status", "resolved")


@dataclass(frozen=True)
class Resamplers:
    """The speaker and non-target-pair resamplers of one trial design (same B and seed)."""

    speaker: Resampler
    pairs: Resampler

    @classmethod
    def of(cls, design: TrialDesign, n_boot: int, seed: int) -> Resamplers:
        return cls(
            Resampler(design, n_boot=n_boot, seed=seed),
            Resampler(design, n_boot=n_boot, seed=seed, unit="nontarget"),
        )

    @property
    def design(self) -> TrialDesign:
        return self.speaker.design

    def speakers(self, rows: np.ndarray) -> int:
        """Distinct speakers (enrolment or test) of the trials at design positions ``rows``."""
        return len(np.union1d(self.design.enrol[rows], self.design.test[rows]))

    def correction(self, cells: list[np.ndarray]) -> Correction:
        return Correction(None, *design_constants(self.design, cells))  # type: ignore[arg-type]


def corrected_interval(
    estimate: float, reps_s: np.ndarray, reps_n: np.ndarray, corr: Correction, speakers: int, level: float = 0.95
) -> dict[str, float | int | str]:
    """SE, df, interval, p, bias, speakers and a provisional status of one effect (module doc);
    ``reps_s``/``reps_n``: its speaker and non-target replicates."""
    out: dict[str, float | int | str] = dict.fromkeys(("se", "df", "lo", "hi", "p", "bias"), math.nan)
    out.update(speakers=speakers, status=NO_INTERVAL)
    ok = np.isfinite(reps_s)
    if not np.isfinite(estimate) or ok.sum() < 2:
        return out
    out["bias"] = float(np.mean(reps_s[ok])) - estimate
    if speakers < MIN_SPEAKERS:
        return {**out, "status": TOO_FEW}
    v_s, v_n = float(np.var(reps_s[ok], ddof=1)), float(np.nanvar(reps_n, ddof=1))
    a, c = corr.factors
    var = a * v_s - c * v_n
    df = float(corr.df(np.array([v_s]), np.array([v_n]), len(reps_s))[0])
    if not (var > 0 and np.isfinite(df) and df > 0):
        return out
    se = math.sqrt(var)
    lo, hi = wald_interval(np.array([estimate]), np.array([se]), level, np.array([df]))
    p = float(wald_p(np.array([estimate]), np.array([se]), np.array([df]))[0])
    return {**out, "se": se, "df": df, "lo": float(lo[0]), "hi": float(hi[0]), "p": p, "status": UNRESOLVED}


def decide(frame: pd.DataFrame, prefix: str, alpha: float = 0.05) -> pd.DataFrame:
    """Holm over the rows of ``frame`` with a p-value (``<prefix>p``): ``<prefix>p_holm``, the final
    ``<prefix>status`` and ``<prefix>resolved`` (True only for ``resolved``)."""
    out = frame.copy()
    p = out[f"{prefix}p"].to_numpy(dtype=np.float64)
    tested = np.isfinite(p) & (out[f"{prefix}status"] == UNRESOLVED).to_numpy()
    adj = np.full(len(out), np.nan)
    if tested.any():
        adj[tested] = adjust(p[tested], "holm")
    out[f"{prefix}p_holm"] = adj
    status = out[f"{prefix}status"].to_numpy(dtype=object)
    status[tested & (adj < alpha)] = RESOLVED
    out[f"{prefix}status"] = status
    out[f"{prefix}resolved"] = status == RESOLVED
    return out
