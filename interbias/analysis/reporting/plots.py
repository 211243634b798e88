"""Report figures as PNG bytes, drawn on matplotlib's Agg canvas (no display, no pyplot state).
Figures hold at any grid the validator admits: small multiples instead of one crowded axes, one
colour per series (never repeated within a panel), legends outside the data area.

- Forest plot: per model, every resolved effect and the largest unresolved ones with per-effect
  and simultaneous intervals against zero, one colour per kind.
- DET curves: one row of panels per model, one panel per level of one factor (the reference
  cell repeated in each), on normal-deviate axes.
- IE heatmap per model: non-reference levels of A × non-reference levels of B (panels per level
  of a third factor), diverging colours centred on 0, one colour scale for all models.
- Mean |gap| over models against SNR, one panel per noise kind, one line per group level
  starting at the reference condition (InterBias-SV's Figure 4 shape).
- Metric by condition per model, one colour per group level (points, not joined: conditions are categories), bootstrap intervals when present.
"""

from __future__ import annotations

import io
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display anywhere; figures below also draw on an explicit Agg canvas
import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from scipy.stats import norm

from interbias.analysis.effect_names import contrast_name, effect_name
from interbias.analysis.reporting.numbers import signed
from interbias.metrics.registry import chance_levels

_DET_TICKS = np.array([0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 0.9, 0.95, 0.99])

#: The rates a DET axis spans; a rate outside (0 or 1) is drawn at the nearer edge.
DET_RANGE = (float(_DET_TICKS[0]), float(_DET_TICKS[-1]))


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


def palette(n: int) -> list[tuple[float, float, float, float]]:
    """``n`` distinct colours: tab10 up to 10, tab20 up to 20, else evenly spaced hues of turbo."""
    from matplotlib import colormaps

    if n <= 10:
        return [colormaps["tab10"](i) for i in range(n)]
    if n <= 20:
        return [colormaps["tab20"](i) for i in range(n)]
    return [colormaps["turbo"](x) for x in np.linspace(0.03, 0.97, n)]


def legend_outside(fig: Figure, handles: list, labels: list[str], title: str | None = None, size: float = 7) -> None:
    """One legend for the whole figure, right of every axes (never over the data)."""
    fig.legend(handles, labels, loc="outside right upper", fontsize=size, title=title, title_fontsize=max(8, size))


def place_legends(fig: Figure) -> None:
    """Move every axes legend to the right of its axes (outside the data area)."""
    for ax in fig.axes:
        leg = ax.get_legend()
        if leg is None:
            continue
        handles, labels = leg.legend_handles, [t.get_text() for t in leg.get_texts()]
        size = leg.get_texts()[0].get_fontsize() if labels else 7
        leg.remove()
        ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0, fontsize=size)


def _det_axes(ax: object, title: str) -> None:
    lo, hi = norm.ppf(_DET_TICKS[0]), norm.ppf(_DET_TICKS[-1])
    ax.plot([lo, hi], [lo, hi], color="0.6", lw=0.8, ls=":")  # type: ignore[attr-defined]
    ticks = norm.ppf(_DET_TICKS)
    names = [f"{100 * t:g}" for t in _DET_TICKS]
    ax.set_xticks(ticks[::2], names[::2], fontsize=6)  # type: ignore[attr-defined]
    ax.set_yticks(ticks[::2], names[::2], fontsize=6)  # type: ignore[attr-defined]
    ax.set_xlim(lo, hi)  # type: ignore[attr-defined]
    ax.set_ylim(lo, hi)  # type: ignore[attr-defined]
    ax.set_title(title, fontsize=8)  # type: ignore[attr-defined]
    ax.grid(alpha=0.3)  # type: ignore[attr-defined]


def _dot(ax: object, point: tuple[float, float] | None, colour: object, clip: tuple[float, float]) -> None:
    """The deployed threshold's (FAR, FRR) on a DET curve (nothing for a NaN rate)."""
    if point is None or not all(np.isfinite(point)):
        return
    x, y = norm.ppf(np.clip(point, *clip))
    ax.plot([x], [y], marker="o", ms=4, color=colour, mec="black", mew=0.5, ls="none")  # type: ignore[attr-defined]


def det_figure(
    curves: Mapping[str, Sequence[tuple[str, np.ndarray, np.ndarray, float]]],
    panels: Mapping[str, tuple[str, str]],
    reference: str | None,
    marks: Mapping[str, Mapping[str, tuple[float, float]]] | None = None,
) -> Figure:
    """Small multiples of DET curves: one row of panels per model, one panel per panel label;
    ``curves``: model -> [(cell, FPR, FNR, value)]; ``panels``: cell -> (panel label, series
    label); the ``reference`` cell is drawn (black, dashed) in every panel. One colour per
    series label over the whole figure, one legend outside the panels. ``marks``: model ->
    cell -> (FAR, FRR) at the deployed threshold, drawn as a dot on that cell's curve."""
    labels = list(dict.fromkeys(p for p, _ in panels.values()))
    series = list(dict.fromkeys(s for c, (_, s) in panels.items() if c != reference))
    colour = dict(zip(series, palette(len(series)), strict=True))
    cols = min(len(labels), 6)
    per_model = (len(labels) + cols - 1) // cols
    rows = per_model * len(curves)
    fig = new_figure(2.1 * cols + 2.4, 2.1 * rows + 0.4)
    axes = np.atleast_2d(fig.subplots(rows, cols, squeeze=False))
    clip = (_DET_TICKS[0], _DET_TICKS[-1])
    handles: dict[str, object] = {}
    for m, (model, items) in enumerate(curves.items()):
        by_cell = {cell: (fpr, fnr) for cell, fpr, fnr, _ in items}
        dots = (marks or {}).get(model, {})
        for k, label in enumerate(labels):
            ax = axes[m * per_model + k // cols, k % cols]
            if reference in by_cell:
                fpr, fnr = by_cell[reference]
                h = ax.plot(
                    norm.ppf(np.clip(fpr, *clip)), norm.ppf(np.clip(fnr, *clip)), color="black", ls="--", lw=1.0
                )
                handles.setdefault(f"reference ({reference})", h[0])
                _dot(ax, dots.get(reference), "black", clip)
            for cell, (fpr, fnr) in by_cell.items():
                if cell == reference or panels.get(cell, ("", ""))[0] != label:
                    continue
                name = panels[cell][1]
                x, y = norm.ppf(np.clip(fpr, *clip)), norm.ppf(np.clip(fnr, *clip))
                handles.setdefault(name, ax.plot(x, y, lw=1.1, color=colour[name], label=name)[0])
                _dot(ax, dots.get(cell), colour[name], clip)
            _det_axes(ax, f"{model}: {label}")
            if k % cols == 0:
                ax.set_ylabel("miss rate (%)", fontsize=7)
            if m == len(curves) - 1:
                ax.set_xlabel("false-alarm rate (%)", fontsize=7)
        for k in range(len(labels), per_model * cols):
            axes[m * per_model + k // cols, k % cols].set_visible(False)
    legend_outside(fig, list(handles.values()), list(handles))
    return fig


def ie_heatmap(contrasts: pd.DataFrame, model: str, vmax: float) -> Figure:
    """IE of ``model``'s A × B contrasts (rows: levels of A, columns: levels of B)."""
    sub = contrasts[contrasts["model"] == model]
    held = sorted(set(sub["level_c"])) if sub["factor_c"].ne("").any() else [""]
    rows, cols = _grid(len(held), 3)
    a_levels = list(dict.fromkeys(sub["level_a"]))
    b_levels = list(dict.fromkeys(sub["level_b"]))
    fig = new_figure(max(4.0, 1.3 * len(b_levels) + 2.5) * cols, (0.62 * len(a_levels) + 1.7) * rows)
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
                ci[(i, j)] = f"\n[{signed(r.ie_lo)}, {signed(r.ie_hi)}]"
        image = ax.imshow(grid, cmap="RdBu_r", vmin=-vmax, vmax=vmax, aspect="auto")
        for i in range(len(a_levels)):
            for j in range(len(b_levels)):
                text = "missing" if np.isnan(grid[i, j]) else f"{signed(grid[i, j])}{ci.get((i, j), '')}"
                dark = not np.isnan(grid[i, j]) and abs(grid[i, j]) > 0.6 * vmax
                ax.text(j, i, text, ha="center", va="center", fontsize=7, color="white" if dark else "black")
        ax.set_xticks(range(len(b_levels)), b_levels, rotation=30, ha="right", fontsize=8)
        ax.set_yticks(range(len(a_levels)), a_levels, fontsize=8)
        ax.set_xlabel(str(sub["factor_b"].iloc[0]))
        ax.set_ylabel(str(sub["factor_a"].iloc[0]))
        name = contrast_name([str(sub["factor_a"].iloc[0]), str(sub["factor_b"].iloc[0])])
        title = f"{name}, {model}" + (f" at {c}" if c else "")
        ax.set_title(title, fontsize=10)
    for ax in axes[len(held) :]:
        ax.set_visible(False)
    if image is not None:
        fig.colorbar(image, ax=list(axes[: len(held)]), label="IE (observed − additive prediction)", shrink=0.8)
    return fig


def gap_snr_figure(
    summary: pd.DataFrame, snr: Mapping[str, tuple[str, float]], factor: str, ref_level: str, metric: str
) -> Figure:
    """Mean |gap| over models against SNR, one panel per noise kind, one line per group level
    (its reference condition at the left end, labelled ``ref_level``); ``snr``: level -> (kind, dB)."""
    has_ci = "mean_abs_gap_lo" in summary.columns
    data = summary.assign(level=summary["condition"].str.removeprefix(f"{factor}="))
    kinds = list(dict.fromkeys(k for k, _ in snr.values()))
    groups = list(dict.fromkeys(data["group_level"]))
    colour = dict(zip(groups, palette(len(groups)), strict=True))
    top = max(db for _, db in snr.values())
    step = max(5.0, (top - min(db for _, db in snr.values())) / 3)
    fig = new_figure(3.2 * len(kinds) + 2.0, 3.4)
    axes = np.atleast_1d(fig.subplots(1, len(kinds), squeeze=False, sharey=True)).ravel()
    handles: dict[str, object] = {}
    for ax, kind in zip(axes, kinds, strict=True):
        for group_level, part in data.groupby("group_level", sort=False):
            pts = [(top + step, r) for r in part.itertuples(index=False) if r.level == ref_level]
            pts += [(snr[r.level][1], r) for r in part.itertuples(index=False) if snr.get(r.level, ("",))[0] == kind]
            pts.sort(key=lambda p: p[0])
            if not pts:
                continue
            x = np.array([p[0] for p in pts])
            y = np.array([p[1].mean_abs_gap for p in pts], float)
            name = f"{group_level} vs {part['group_ref'].iloc[0]}"
            handles[name] = ax.plot(x, y, marker="o", ms=3, color=colour[group_level], label=name)[0]
            if has_ci:
                lo = np.array([p[1].mean_abs_gap_lo for p in pts], float)
                hi = np.array([p[1].mean_abs_gap_hi for p in pts], float)
                ax.fill_between(x, lo, hi, color=colour[group_level], alpha=0.12, lw=0)
        ticks = sorted({db for k, db in snr.values() if k == kind} | {top + step})
        ax.set_xticks(ticks, [ref_level if v == top + step else f"{v:g}" for v in ticks], fontsize=7)
        ax.invert_xaxis()
        ax.set_xlabel("SNR (dB), noisier to the right", fontsize=8)
        ax.set_title(str(kind), fontsize=9)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(f"mean |gap| over models ({metric})", fontsize=8)
    legend_outside(fig, list(handles.values()), list(handles), title="group")
    return fig


def condition_figure(table: pd.DataFrame, metric: str, legend: str = "group") -> Figure:
    """``table``: model, condition, series, value (+ lo, hi): one panel per model, one colour per
    series over the figure, one legend outside the panels (titled ``legend``). Conditions are
    categories (a noise kind is no step on a scale), so points are never joined by lines."""
    models = list(dict.fromkeys(table["model"]))
    rows, cols = _grid(len(models), 3)
    conditions = list(dict.fromkeys(table["condition"]))
    series = list(dict.fromkeys(table["series"]))
    colour = dict(zip(series, palette(len(series)), strict=True))
    fig = new_figure(max(3.6, 0.24 * len(conditions) + 1.8) * cols + 1.8, 3.4 * rows)
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False, sharey=True)).ravel()
    has_ci = "lo" in table.columns
    handles: dict[str, object] = {}
    for ax, model in zip(axes, models, strict=False):
        part = table[table["model"] == model]
        for name, s in part.groupby("series", sort=False):
            x = [conditions.index(c) for c in s["condition"]]
            y = s["value"].to_numpy(float)
            if has_ci:
                err = np.vstack([y - s["lo"].to_numpy(float), s["hi"].to_numpy(float) - y])
                h = ax.errorbar(x, y, yerr=err, marker="o", ms=3, capsize=2, ls="none", color=colour[name], label=name)
            else:
                h = ax.plot(x, y, marker="o", ms=3, ls="none", color=colour[name], label=name)[0]
            handles[str(name)] = h
        if (level := chance_levels().get(metric)) is not None:
            ax.axhline(level, color="0.6", ls=":", lw=0.8)
        ax.set_xticks(range(len(conditions)), conditions, rotation=45, ha="right", fontsize=7)
        ax.set_ylabel(metric.upper() if metric.startswith("eer") else metric)
        ax.set_title(model, fontsize=9)
        ax.grid(alpha=0.3)
    for ax in axes[len(models) :]:
        ax.set_visible(False)
    legend_outside(fig, list(handles.values()), list(handles), title=legend)
    return fig


#: Forest plot: unresolved effects shown per model and kind (the largest |estimate|), and the most
#: resolved effects shown per model (the largest |estimate|; the rest counted in the caption).
FOREST_UNRESOLVED = 3
FOREST_RESOLVED = 12


def forest_rows(findings: pd.DataFrame, kinds: Sequence[str], resolved: pd.Series) -> tuple[pd.DataFrame, int]:
    """The rows a forest plot shows, ordered per model by ``kinds`` then resolved first then
    |estimate| descending, and how many resolved rows were left out."""
    picked, left = [], 0
    f = findings.assign(_res=resolved.to_numpy(bool), _abs=findings["estimate"].astype(float).abs())
    f = f[np.isfinite(f["estimate"].astype(float))]
    for _, grp in f.groupby("model", sort=False):
        res = grp[grp["_res"]].nlargest(FOREST_RESOLVED, "_abs")
        left += int(grp["_res"].sum()) - len(res)
        parts = [g.nlargest(FOREST_UNRESOLVED, "_abs") for _, g in grp[~grp["_res"]].groupby("kind")]
        both = pd.concat([res, *parts]) if parts else res  # every effect resolved: no unresolved part
        rank = {k: i for i, k in enumerate(kinds)}
        both = both.assign(_k=both["kind"].map(rank)).sort_values(
            ["_k", "_res", "_abs"], ascending=[True, False, False]
        )
        picked.append(both)
    out = pd.concat(picked) if picked else f.head(0)
    return out.drop(columns=["_k"], errors="ignore").reset_index(drop=True), left


#: Point size of a forest plot's effect labels, ticks and axis label (at least 8).
FOREST_FONT = 8


def effect_label(r: Any) -> str:
    """The forest plot's label of a findings row: its one name (:func:`effect_name`) on at most
    two lines of 44 characters."""
    text = effect_name(r)
    return "\n".join(textwrap.wrap(text, 44)[:2]) if len(text) <= 88 else text[:86] + "…"


def forest_figure(rows: pd.DataFrame, kinds: Sequence[str], xlabel: str) -> Figure:
    """Per model a panel: each effect's estimate (filled: resolved, open: unresolved) with its
    per-effect interval (thick) and simultaneous interval (thin) against a zero line; one colour
    per kind; every panel on the same x scale. ``rows``: :func:`forest_rows`."""
    models = list(dict.fromkeys(rows["model"]))
    n = max((int((rows["model"] == m).sum()) for m in models), default=1)
    fig = new_figure(4.6 * len(models) + 1.6, 0.3 * n + 1.3)  # room for two-line labels at 8 pt
    axes = np.atleast_1d(fig.subplots(1, max(len(models), 1), squeeze=False, sharex=True)).ravel()  # one x scale
    colour = dict(zip(kinds, palette(len(kinds)), strict=True))
    handles: dict[str, object] = {}
    for ax, model in zip(axes, models, strict=False):
        part = rows[rows["model"] == model].reset_index(drop=True)
        y = np.arange(len(part))[::-1].astype(float)
        for kind in kinds:
            sel = (part["kind"] == kind).to_numpy()
            if not sel.any():
                continue
            c, sub, ys = colour[kind], part[sel], y[sel]
            ax.hlines(ys, sub["lo_simultaneous"].astype(float), sub["hi_simultaneous"].astype(float), color=c, lw=0.8)
            ax.hlines(ys, sub["lo"].astype(float), sub["hi"].astype(float), color=c, lw=2.6)
            face = [c if r else "white" for r in sub["_res"]]
            ax.scatter(sub["estimate"].astype(float), ys, s=22, zorder=3, facecolors=face, edgecolors=[c], label=kind)
            handles[kind] = Line2D([], [], color=c, marker="o", lw=2.6)
        ax.axvline(0.0, color="0.2", lw=0.8)
        ax.set_yticks(y, [effect_label(r) for r in part.itertuples(index=False)], fontsize=FOREST_FONT)
        ax.tick_params(axis="x", labelsize=FOREST_FONT)
        ax.set_ylim(-0.7, len(part) - 0.3)
        ax.set_xlabel(xlabel, fontsize=FOREST_FONT)
        ax.set_title(model, fontsize=9)
        ax.grid(alpha=0.3, axis="x")
    legend_outside(fig, list(handles.values()), list(handles), title="kind (filled: resolved)", size=FOREST_FONT)
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
