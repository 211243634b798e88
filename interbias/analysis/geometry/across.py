"""Across encoders: does the aggregate leakage Λ predict the probe disparity D̄? (TRIAD/ORCA Fig. 2)

For each encoder the audit gives ``Λ`` (sem–voice) and ``D̄`` (the sem probe's mean-square
disparity between the groups of one attribute, default ``accent``;
:mod:`interbias.analysis.geometry.disparity`). ``r`` is Pearson's correlation of the two over the
encoders. Its 95 % interval is a percentile bootstrap over **voices**: every draw resamples the
grid's voices with replacement (a voice drawn twice enters as two voices, so the grid stays
balanced), the same draw for every encoder (paired), recomputes each encoder's ``Λ`` and ``D̄``
at the audit's ``m``, and correlates them. The interval thus carries the measurement
uncertainty of ``Λ`` and ``D̄`` for these encoders, not the sampling of encoders. Draws come from
``derive_rng("geometry-across", seed)``, ``seed`` derived from the encoder labels and attribute.
A draw where ``r`` is undefined (a constant column) is dropped and counted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from interbias.analysis.geometry.disparity import disparity_statistics
from interbias.analysis.geometry.linalg import AXES, TAU_REL, EmbeddingGrid, axis_subspaces, leakage
from interbias.utils.errors import AnalysisError
from interbias.utils.seeding import derive_rng, derive_seed

#: Bootstrap draws of the interval of r.
N_BOOT = 200
#: Columns of across.csv.
COLUMNS = ("encoder", "layer", "Lambda", "Lambda_hw", "ell", "Dbar", "Dbar_hw", "Dbar_model", "floor", "active_margin")


def pearson(x: Sequence[float], y: Sequence[float]) -> float:
    """Pearson's r; ``nan`` when either column is constant (or fewer than 2 points)."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(a) < 2:
        return math.nan
    a, b = a - a.mean(), b - b.mean()
    den = math.sqrt(float(a @ a) * float(b @ b))
    return float(a @ b) / den if den > 1e-300 else math.nan


def leakage_and_disparity(grid: EmbeddingGrid, m: int, attribute: str, tau_rel: float = TAU_REL) -> tuple[float, float]:
    """``(Λ_sem,voice, D̄_sem)`` of one grid at rank ``m`` (the audit's formulas)."""
    bases = axis_subspaces(grid.x, {a: grid.labels(a) for a in AXES}, m, tau_rel=tau_rel)
    sv, ve = leakage(bases["sem"], bases["voice"]), leakage(bases["voice"], bases["expr"])
    leak = {("sem", "voice"): (sv.aggregate, sv.peak), ("expr", "voice"): (ve.aggregate, ve.peak)}
    dis = disparity_statistics(grid, bases, leak, [attribute], tau_rel=tau_rel)
    return sv.aggregate, dis[("Dbar", attribute, "sem")]


def resample_voices(grid: EmbeddingGrid, voices: Sequence[str]) -> EmbeddingGrid:
    """The grid on the drawn ``voices`` (with repeats), each draw a distinct voice label."""
    parts = [np.flatnonzero(grid.voice == v) for v in voices]
    rows = np.concatenate(parts)
    out = grid.subset(rows)
    labels = np.concatenate(
        [np.full(len(p), f"{v}#{j}", dtype=object) for j, (v, p) in enumerate(zip(voices, parts, strict=True))]
    )
    return EmbeddingGrid(out.x, out.text, labels, out.style, out.groups)


@dataclass(frozen=True)
class Across:
    """The across-encoder table, ``r`` with its interval and the bootstrap's bookkeeping."""

    table: pd.DataFrame
    attribute: str
    r: float
    ci_low: float
    ci_high: float
    n_boot: int
    n_defined: int
    seed: int


def across_encoders(
    table: pd.DataFrame,
    grids: Mapping[str, EmbeddingGrid],
    m: Mapping[str, int],
    *,
    attribute: str = "accent",
    n_boot: int = N_BOOT,
    tau_rel: float = TAU_REL,
) -> Across:
    """``r(Λ, D̄)`` over the rows of ``table`` (:data:`COLUMNS`, one per encoder, keyed like
    ``grids``) with its voice-bootstrap interval."""
    names = list(table["encoder"])
    if len(names) < 3:
        raise AnalysisError(f"r(Λ, D̄) needs at least 3 encoders (got {len(names)}): over 2 points r is ±1")
    voices = sorted(set(grids[names[0]].voice))
    for name in names[1:]:
        if sorted(set(grids[name].voice)) != voices:
            raise AnalysisError(f"--encoders: {name} was audited on other voices than {names[0]}; r needs one grid")
    seed = derive_seed("geometry-across", *names, attribute)
    rng = derive_rng("geometry-across", seed)
    draws = []
    for _ in range(n_boot):
        pick = [voices[i] for i in rng.integers(0, len(voices), size=len(voices))]
        pts = [leakage_and_disparity(resample_voices(grids[n], pick), m[n], attribute, tau_rel) for n in names]
        draws.append(pearson([p[0] for p in pts], [p[1] for p in pts]))
    finite = np.asarray([d for d in draws if math.isfinite(d)])
    lo, hi = (float(q) for q in np.quantile(finite, [0.025, 0.975])) if len(finite) else (math.nan, math.nan)
    r = pearson(table["Lambda"], table["Dbar"])
    return Across(table, attribute, r, lo, hi, n_boot, len(finite), seed)


def across_frame(result: Across) -> pd.DataFrame:
    """across.csv: the encoder rows, then one ``r`` row (value in ``Lambda``… see docs/outputs.md)."""
    rows = result.table.copy()
    rows["metric"] = "encoder"
    r_row = {
        "metric": "pearson_r",
        "encoder": f"{len(rows)} encoders",
        "r": result.r,
        "ci_low": result.ci_low,
        "ci_high": result.ci_high,
        "n_boot": result.n_boot,
        "n_defined": result.n_defined,
        "seed": str(result.seed),  # a string: a 63-bit seed does not survive a float column
        "attribute": result.attribute,
    }
    return pd.concat([rows, pd.DataFrame([r_row])], ignore_index=True)


def across_figure(result: Across) -> Figure:
    """D̄ against Λ, one point per encoder with ± half-widths, the least-squares line, r in the title."""
    from interbias.analysis.reporting.plots import new_figure

    t = result.table
    fig = new_figure(6, 4.6)
    ax = fig.subplots()
    ax.errorbar(
        t["Lambda"],
        t["Dbar"],
        xerr=np.nan_to_num(t["Lambda_hw"].astype(float)),
        yerr=np.nan_to_num(t["Dbar_hw"].astype(float)),
        fmt="o",
        capsize=3,
    )
    for _, row in t.iterrows():
        name = f"{row['encoder']} L{row['layer']}" if str(row["layer"]) else str(row["encoder"])
        ax.annotate(name, (row["Lambda"], row["Dbar"]), textcoords="offset points", xytext=(4, 4), fontsize=8)
    x = t["Lambda"].to_numpy(dtype=float)
    if np.ptp(x) > 0:
        slope, icpt = np.polyfit(x, t["Dbar"].to_numpy(dtype=float), 1)
        grid = np.linspace(x.min(), x.max(), 50)
        ax.plot(grid, slope * grid + icpt, "--", color="grey")
    ax.set(
        xlabel="aggregate leakage Λ (sem–voice)",
        ylabel=f"probe disparity D̄ (sem probe, {result.attribute} groups)",
        title=f"r(Λ, D̄) = {result.r:.2f}  [95 % voice bootstrap {result.ci_low:.2f}, {result.ci_high:.2f}]",
    )
    return fig
