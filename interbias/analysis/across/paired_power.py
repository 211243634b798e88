"""The paired gate's spread and its smallest detectable regression, from the test it runs.

:func:`row_spread` is one row's SE and Satterthwaite df of the paired difference (the corrected
speaker bootstrap of :mod:`interbias.analysis.across.compare_paired`). :func:`detectable` states,
per metric, the smallest regression the gate flags with :data:`POWER` when it is the family's only
one, from what the gate actually does:

- the level: Holm's first step, α/m (m = the family's size after rows are left out);
- the test: one-sided Student t at the row's Satterthwaite df, its power from the noncentral t
  (the normal only where df is infinite);
- the SE **under the alternative**: a regression raises the paired SE (the new run's scores
  decorrelate from the base's), so the SE is measured again with a regression of the stated size
  planted in the row: the new run's scores get per-trial Gaussian noise (a draw derived from the
  row's key), scaled until new − base equals the size, and the same bootstrap replicates give the
  SE and df there. Size and SE are iterated to their fixed point (size = margin + ncp·SE(size)).

The row measured is the family's median-SE row of the metric (a typical row: rows with a larger
SE need a larger regression). The SE and df measured once stand for their true values, and the
power averaged over their variation between data sets is lower than at their measured values, so
the computation aims at :data:`PLUG_IN_POWER` for the stated :data:`POWER`
(``tests/test_paired_power.py`` measures the realised power). A size the planted noise cannot reach, or where the df falls below
:data:`MIN_DF`, is stated as not resolvable.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq
from scipy.stats import nct, norm
from scipy.stats import t as student_t

from interbias.analysis.effects import Correction
from interbias.metrics.weighted import metric_batch, sort_cell
from interbias.utils.seeding import derive_rng

#: Power at which the smallest detectable regression is stated.
POWER = 0.8
#: The power the plug-in computation aims at so that the stated :data:`POWER` holds across data
#: sets: the SE and df measured once vary between data sets, and the power averaged over that
#: variation is lower than the plug-in's (a plug-in at 80 % flagged 74 % of 200 simulated data
#: sets, ``tests/test_paired_power.py``); aiming at 90 % keeps the realised power above 80 %.
PLUG_IN_POWER = 0.9
#: Rows whose Satterthwaite df is below this are left out of the gate's family (and counted): a
#: t with fewer df has no finite variance, and its quantile at a Holm level is beyond reach (at
#: α/36 = 0.0014 it is 18.9 at df 2 and 53,000 at df 0.5), so such a row only dilutes the family.
MIN_DF = 2.0
#: Fixed-point iterations of size ↔ SE under the alternative.
ITERATIONS = 8


@dataclass(frozen=True)
class Spread:
    """A row's paired SE (corrected where possible), its df (inf: the normal), the speaker
    variance V_S and a note when the corrected variance was not positive."""

    se: float
    df: float
    v_s: float
    note: str = ""


def row_spread(
    metric: str,
    cells: tuple,
    w_s: np.ndarray,
    w_n: np.ndarray | None,
    corr: Correction | None,
    n_boot: int,
    speaker_note: str,
) -> Spread:
    """The SE and df of metric(new) − metric(base) from the speaker replicates ``w_s`` and, for
    the corrected design, the non-target replicates ``w_n``: SE² = a·V_S − c·V_N."""
    reps = metric_batch(metric, cells[1], w_s) - metric_batch(metric, cells[0], w_s)
    ok = np.isfinite(reps)
    v_s = float(np.var(reps[ok], ddof=1)) if ok.sum() > 1 else math.nan
    se, df, note = (math.sqrt(v_s) if np.isfinite(v_s) else math.nan), math.inf, ""
    if corr is not None and w_n is not None and v_s > 0:
        nt = metric_batch(metric, cells[1], w_n) - metric_batch(metric, cells[0], w_n)
        v_n = float(np.nanvar(nt, ddof=1))
        a, c = corr.factors
        var = a * v_s - c * v_n
        if var > 0:
            se, df = math.sqrt(var), float(corr.df(np.array([v_s]), np.array([v_n]), n_boot)[0])
        else:
            se, note = math.sqrt(a * v_s) if np.isfinite(a) else se, speaker_note
        if not df > 0:
            df = math.inf
    return Spread(se, df, v_s, note)


def noncentrality(level: float, df: float, power: float = POWER) -> float:
    """The noncentrality δ/SE at which a one-sided t test at ``level`` with ``df`` rejects with
    probability ``power`` (noncentral t; the normal's z_{1−level} + z_power when df is inf)."""
    if not np.isfinite(df):
        return float(norm.isf(level) + norm.isf(1 - power))
    crit = float(student_t.isf(level, df))
    hi = crit + 4 * float(norm.isf(1 - power)) + 10
    while nct.sf(crit, df, hi) < power:
        hi *= 2
    return float(brentq(lambda nc: nct.sf(crit, df, nc) - power, 0.0, hi, xtol=1e-10))


@dataclass(frozen=True)
class Detectable:
    """The smallest regression of ``metric`` the gate flags with :data:`POWER` (NaN: not
    resolvable), the SE and df under it, the null SE of the row measured and the family size."""

    metric: str
    size: float
    se: float
    df: float
    se_null: float
    family: int
    why: str = ""

    def text(self) -> str:
        if not np.isfinite(self.size):
            return f"{self.metric} not resolvable ({self.why})"
        df = "normal" if not np.isfinite(self.df) else f"t, df {self.df:.0f}"
        return f"{self.metric} {self.size:.4f} ({df}, SE {self.se:.4f} under it, {self.se_null:.4f} without)"


@dataclass(frozen=True)
class PlantContext:
    """What a planted regression needs: the row's labels and scores, both replicate weights, the
    correction and the gate's settings."""

    key: tuple[str, ...]
    labels: np.ndarray
    base: np.ndarray
    new: np.ndarray
    w_s: np.ndarray
    w_n: np.ndarray | None
    corr: Correction | None
    n_boot: int


def detectable(
    ctx: PlantContext, metric: str, spread: Spread, *, family: int, alpha: float, margin: float
) -> Detectable:
    """:class:`Detectable` of ``metric`` at the row of ``ctx`` (its measured ``spread``) in a
    family of ``family`` tests (module docstring)."""
    level = alpha / family
    if not (spread.se > 0 and spread.df >= MIN_DF):
        return Detectable(metric, math.nan, spread.se, spread.df, spread.se, family, "no spread at the median row")
    size = margin + noncentrality(level, spread.df, PLUG_IN_POWER) * spread.se
    here = spread
    for _ in range(ITERATIONS):
        planted = _plant(ctx, metric, size)
        if planted is None:
            why = f"planted noise cannot raise {metric} by {size:.4f}"
            return Detectable(metric, math.nan, here.se, here.df, spread.se, family, why)
        here = row_spread(metric, planted, ctx.w_s, ctx.w_n, ctx.corr, ctx.n_boot, "")
        if not (here.se > 0 and here.df >= MIN_DF):
            why = f"df {here.df:.1f} < {MIN_DF:g} under a regression of {size:.4f}"
            return Detectable(metric, math.nan, here.se, here.df, spread.se, family, why)
        nxt = margin + noncentrality(level, here.df, PLUG_IN_POWER) * here.se
        done = abs(nxt - size) < 1e-4
        size = nxt
        if done:
            break
    return Detectable(metric, size, here.se, here.df, spread.se, family)


def _plant(ctx: PlantContext, metric: str, size: float) -> tuple | None:
    """Both sorted cells with the new run's scores made worse by per-trial Gaussian noise until
    metric(new) − metric(base) reaches ``size`` (bisection on the noise scale); None when even
    very large noise cannot reach it."""
    one = np.ones((1, len(ctx.labels)))
    base = sort_cell(ctx.base, ctx.labels)
    b = float(metric_batch(metric, base, one)[0])
    eps = derive_rng("paired-power", *ctx.key, metric).standard_normal(len(ctx.new))
    scale = float(np.std(ctx.new)) or 1.0

    def excess(sigma: float) -> float:
        return float(metric_batch(metric, sort_cell(ctx.new + sigma * scale * eps, ctx.labels), one)[0]) - b - size

    if excess(0.0) >= 0:
        return base, sort_cell(ctx.new, ctx.labels)
    hi = 0.25
    while excess(hi) < 0:
        hi *= 2
        if hi > 1e3:
            return None
    lo = 0.0
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if excess(mid) < 0 else (lo, mid)
    return base, sort_cell(ctx.new + hi * scale * eps, ctx.labels)
