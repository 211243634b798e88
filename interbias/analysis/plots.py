"""Report figures as PNG bytes, drawn on matplotlib's Agg canvas (no display, no pyplot state).

- DET curves per cell (one panel per model; axes on the normal-deviate scale).
- IE heatmap per model: non-reference levels of A × non-reference levels of B (panels per level
  of a third factor), diverging colours centred on 0, one colour scale for all models.
- Mean |gap| over models against SNR, one line per noise kind, the reference condition dashed
  (InterBias-SV's Figure 4 shape).
- Metric by condition per model, one line per group level, bootstrap intervals when present.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence

import matplotlib

matplotlib.use("Agg")  # no display anywhere; figures below also draw on an explicit Agg canvas
import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from scipy.stats import norm

_DET_TICKS = np.array([0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 0.9, 0.95, 0.99])


def new_figure(width: float, height: float) -> Figure:
    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def _grid(n: int, max_cols: int = 3) -> tuple[int, int]:
    cols = min(n, max_cols)
    return (n + cols - 1) // cols, cols


def det_figure(curves: Mapping[str, Sequence[tuple[str, np.ndarray, np.ndarray, float]]], metric_name: str) -> Figure:
    """``curves``: model -> [(cell label, FPR, FNR, EER)]; one panel per model."""
    rows, cols = _grid(len(curves), 2)
    fig = new_figure(6.0 * cols, 5.0 * rows)
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).ravel()
    lo, hi = norm.ppf(_DET_TICKS[0]), norm.ppf(_DET_TICKS[-1])
    for ax, (model, items) in zip(axes, curves.items(), strict=False):
        for label, fpr, fnr, e in items:
            x = norm.ppf(np.clip(fpr, _DET_TICKS[0], _DET_TICKS[-1]))
            y = norm.ppf(np.clip(fnr, _DET_TICKS[0], _DET_TICKS[-1]))
            ax.plot(x, y, lw=1.2, label=f"{label} ({metric_name} {100 * e:.1f}%)")
        ax.plot([lo, hi], [lo, hi], color="0.6", lw=0.8, ls=":")
        ticks = norm.ppf(_DET_TICKS)
        names = [f"{100 * t:g}" for t in _DET_TICKS]
        ax.set_xticks(ticks, names, fontsize=7)
        ax.set_yticks(ticks, names, fontsize=7)
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        ax.set_xlabel("false-alarm rate (%)")
        ax.set_ylabel("miss rate (%)")
        ax.set_title(f"DET: {model}")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6, loc="upper right")
    for ax in axes[len(curves) :]:
        ax.set_visible(False)
    return fig


def ie_heatmap(contrasts: pd.DataFrame, model: str, vmax: float) -> Figure:
    """IE of ``model``'s A × B contrasts (rows: levels of A, columns: levels of B)."""
    sub = contrasts[contrasts["model"] == model]
    held = sorted(set(sub["level_c"])) if sub["factor_c"].ne("").any() else [""]
    rows, cols = _grid(len(held), 3)
    a_levels = list(dict.fromkeys(sub["level_a"]))
    b_levels = list(dict.fromkeys(sub["level_b"]))
    fig = new_figure(max(4.0, 1.4 * len(b_levels) + 2.5) * cols, (0.9 * len(a_levels) + 2.2) * rows)
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).ravel()
    vmax = vmax if vmax > 0 else 1e-6
    image = None
    for ax, c in zip(axes, held, strict=False):
        part = sub[sub["level_c"] == c] if c else sub
        grid = np.full((len(a_levels), len(b_levels)), np.nan)
        ci: dict[tuple[int, int], str] = {}
        for r in part.itertuples(index=False):
            i, j = a_levels.index(r.level_a), b_levels.index(r.level_b)
            grid[i, j] = r.ie
            if "ie_lo" in part.columns:
                ci[(i, j)] = f"\n[{r.ie_lo:+.3f}, {r.ie_hi:+.3f}]"
        image = ax.imshow(grid, cmap="RdBu_r", vmin=-vmax, vmax=vmax, aspect="auto")
        for i in range(len(a_levels)):
            for j in range(len(b_levels)):
                text = "missing" if np.isnan(grid[i, j]) else f"{grid[i, j]:+.3f}{ci.get((i, j), '')}"
                dark = not np.isnan(grid[i, j]) and abs(grid[i, j]) > 0.6 * vmax
                ax.text(j, i, text, ha="center", va="center", fontsize=8, color="white" if dark else "black")
        ax.set_xticks(range(len(b_levels)), b_levels, rotation=30, ha="right", fontsize=8)
        ax.set_yticks(range(len(a_levels)), a_levels, fontsize=8)
        ax.set_xlabel(str(sub["factor_b"].iloc[0]))
        ax.set_ylabel(str(sub["factor_a"].iloc[0]))
        title = f"IE: {model}" + (f" ({sub['factor_c'].iloc[0]}={c})" if c else "")
        ax.set_title(title, fontsize=10)
    for ax in axes[len(held) :]:
        ax.set_visible(False)
    if image is not None:
        fig.colorbar(image, ax=list(axes[: len(held)]), label="IE (observed − additive prediction)", shrink=0.8)
    return fig


def gap_snr_figure(
    summary: pd.DataFrame, snr: Mapping[str, tuple[str, float]], factor: str, ref_level: str, metric: str
) -> Figure:
    """Mean |gap| over models vs SNR, one line per noise kind; ``snr``: level -> (kind, dB)."""
    fig = new_figure(6.5, 4.5)
    ax = fig.subplots()
    has_ci = "mean_abs_gap_lo" in summary.columns
    levels = summary["condition"].str.removeprefix(f"{factor}=")
    data = summary.assign(level=levels)
    for group_level, part in data.groupby("group_level", sort=False):
        suffix = f" ({group_level} vs {part['group_ref'].iloc[0]})" if data["group_level"].nunique() > 1 else ""
        kinds: dict[str, list[tuple[float, float, float, float]]] = {}
        for r in part.itertuples(index=False):
            if r.level in snr:
                kind, db = snr[r.level]
                lo = r.mean_abs_gap_lo if has_ci else np.nan
                hi = r.mean_abs_gap_hi if has_ci else np.nan
                kinds.setdefault(kind, []).append((db, r.mean_abs_gap, lo, hi))
        for kind, pts in kinds.items():
            pts.sort()
            x, y, lo, hi = (np.array(v) for v in zip(*pts, strict=True))
            line = ax.plot(x, y, marker="o", label=f"{kind}{suffix}")[0]
            if has_ci:
                ax.fill_between(x, lo, hi, color=line.get_color(), alpha=0.15)
        ref = part[part["level"] == ref_level]
        if len(ref):
            ax.axhline(ref["mean_abs_gap"].iloc[0], color="0.3", ls="--", label=f"{ref_level}{suffix}")
    ax.invert_xaxis()
    ax.set_xlabel("SNR (dB), noisier to the right")
    ax.set_ylabel(f"mean |gap| over models ({metric})")
    ax.set_title("Subgroup gap against SNR")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def condition_figure(table: pd.DataFrame, metric: str) -> Figure:
    """``table``: model, condition, series, value (+ lo, hi): one panel per model."""
    models = list(dict.fromkeys(table["model"]))
    rows, cols = _grid(len(models), 2)
    conditions = list(dict.fromkeys(table["condition"]))
    fig = new_figure(max(5.0, 0.9 * len(conditions) + 2.5) * cols, 4.2 * rows)
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False, sharey=True)).ravel()
    has_ci = "lo" in table.columns
    for ax, model in zip(axes, models, strict=False):
        part = table[table["model"] == model]
        for series, s in part.groupby("series", sort=False):
            x = [conditions.index(c) for c in s["condition"]]
            y = s["value"].to_numpy(float)
            if has_ci:
                err = np.vstack([y - s["lo"].to_numpy(float), s["hi"].to_numpy(float) - y])
                ax.errorbar(x, y, yerr=err, marker="o", capsize=3, label=series)
            else:
                ax.plot(x, y, marker="o", label=series)
        if metric.startswith("eer"):
            ax.axhline(0.5, color="0.6", ls=":", lw=0.8, label="chance (0.5)")
        ax.set_xticks(range(len(conditions)), conditions, rotation=30, ha="right", fontsize=8)
        ax.set_ylabel(metric)
        ax.set_title(model)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    for ax in axes[len(models) :]:
        ax.set_visible(False)
    return fig


#: Vector formats every report figure is also saved in (beside its PNG).
VECTOR_FORMATS = ("pdf", "svg")


def vectors(fig: Figure) -> dict[str, bytes]:
    """``fig`` as PDF and SVG bytes, byte-stable: no creation date, a fixed SVG id salt."""
    import matplotlib

    out = {}
    metadata = {"pdf": {"CreationDate": None, "Producer": None}, "svg": {"Date": None}}
    with matplotlib.rc_context({"svg.hashsalt": "interbias", "pdf.compression": 6}):
        for fmt in VECTOR_FORMATS:
            buf = io.BytesIO()
            fig.savefig(buf, format=fmt, metadata=metadata[fmt])
            out[fmt] = buf.getvalue()
    return out
