"""The geometry section of a report: the summary table as Markdown and the figure."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from interbias.analysis.geometry.schema import read_geometry, summary


@dataclass(frozen=True)
class GeometrySection:
    """What a report shows for a folder's geometry.csv: the :func:`summary` table, the same as
    Markdown, and the figure when present."""

    table: pd.DataFrame
    markdown: str
    figure: Path | None


def _pm(value: Any, hw: Any, digits: int = 3) -> str:
    v, h = float(value), float(hw) if hw not in ("", None) else math.nan
    if math.isnan(v):
        return "—"
    return f"{v:.{digits}f}" + ("" if math.isnan(h) else f" ± {h:.{digits}f}")


def report_section(folder: Path) -> GeometrySection | None:
    """The geometry section of a report for ``folder`` (``None`` when it holds no geometry.csv)."""
    folder = Path(folder)
    if not (folder / "geometry.csv").is_file():
        return None
    table = summary(read_geometry(folder))
    lines = [
        "| encoder | layer | subset | F_sem | F_voice | F_expr | Λ sem–voice (m; chance) | ℓ sem–voice "
        "| Γ_acc (p) | Γ_gen (p) | decomposition residual |",
        "|" + "---|" * 11,
    ]
    for r in table.itertuples(index=False):
        lam = f"{_pm(r.Lambda, r.Lambda_hw)} ({r.Lambda_m:g}; {float(r.Lambda_chance):.3f})"
        acc = f"{_pm(r.Gamma_acc, r.Gamma_acc_hw)} (p {float(r.Gamma_acc_p):.3g})"
        gen = f"{_pm(r.Gamma_gen, r.Gamma_gen_hw)} (p {float(r.Gamma_gen_p):.3g})"
        res = (
            "refused (unbalanced grid)"
            if math.isnan(float(r.decomposition_residual))
            else f"{r.decomposition_residual:.1e}"
        )
        cells = [r.encoder, r.layer, r.subset, _pm(r.F_sem, r.F_sem_hw), _pm(r.F_voice, r.F_voice_hw)]
        cells += [_pm(r.F_expr, r.F_expr_hw), lam, _pm(r.ell, r.ell_hw), acc, gen, res]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    lines += [
        "",
        "F: axis fidelity (mean λ/(1+λ) of the regularised discriminant problem); Λ, ℓ: aggregate and "
        "peak principal-angle leakage between the sem and voice probe subspaces (chance Λ = m/d); "
        "Γ_acc: accent spread of F_sem|g, Γ_gen: gender spread of F_expr|g, p from speaker-level "
        "permutations. ± : 95 % half-widths from a two-way text/voice jackknife. On the synthetic "
        "corpus styles and age bands are prosodic proxies.",
    ]
    frame = read_geometry(folder)
    lines += disparity_lines(frame) + noise_lines(frame)
    figure = folder / "geometry.png"
    if figure.is_file():
        lines += ["", "![geometry](geometry.png)"]
    return GeometrySection(table, "\n".join(lines) + "\n", figure if figure.is_file() else None)


def _value(frame: pd.DataFrame, metric: str, **match: str) -> tuple[float, float]:
    sel = frame[frame["metric"] == metric]
    for col, val in match.items():
        sel = sel[sel[col].astype(str) == val]
    if not len(sel):
        return math.nan, math.nan
    hw = sel["ci_half_width"].iloc[0]
    return float(sel["value"].iloc[0]), float(hw) if str(hw) not in ("", "nan") else math.nan


def disparity_lines(frame: pd.DataFrame) -> list[str]:
    """The probe-disparity table: D̄, its Proposition-2 value, δ, the floor and the active region."""
    rows = frame[frame["metric"] == "Dbar"]
    if not len(rows):
        return []
    lines = [
        "",
        "| encoder | layer | subset | groups | probe | D̄ | δ·√(Λ/m) | δ | floor (ρ = 0.9) | ρ²+ℓ²−1 | D̄ noise |",
        "|" + "---|" * 11,
    ]
    for r in rows.itertuples(index=False):
        key = {"encoder": r.encoder, "layer": r.layer, "subset": r.subset, "source": r.source}
        at = {**key, "attribute": r.attribute, "axis": r.axis}
        model, delta = _value(frame, "Dbar_model", **at)[0], _value(frame, "delta", **key, attribute=r.attribute)[0]
        floor, margin = _value(frame, "floor", **at), _value(frame, "active_margin", **at)[0]
        noise = _value(frame, "Dbar_noise", **at)[0]
        region = "—" if math.isnan(margin) else f"{margin:+.3f} ({'active' if margin > 0 else 'inactive'})"
        cells = [r.encoder, r.layer, r.subset, r.attribute, r.axis, _pm(r.value, r.ci_half_width), f"{model:.3f}"]
        cells += [f"{delta:.3f}", _pm(*floor), region, "—" if math.isnan(noise) else f"{noise:.3f}"]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    lines += [
        "",
        "D̄: mean-square disparity between the groups' means seen by a unit probe drawn uniformly from the "
        "probe axis's subspace (Proposition 2, measured); δ·√(Λ/m): its value when the group displacement δ "
        "is isotropic in the voice subspace; floor: the smallest disparity any probe with accuracy ρ = 0.9 on "
        "its axis must show, δ·max(0, ρℓ − √(1−ℓ²)√(1−ρ²)), positive only in the active region ρ² + ℓ² > 1 "
        "(Corollary 1). All in whitened units (docs/repair.md).",
    ]
    return lines


def noise_lines(frame: pd.DataFrame) -> list[str]:
    """One line per audit with a noise floor: F and Λ beside the replicates' values."""
    lines = []
    for key, sub in frame[frame["metric"] == "F_noise"].groupby(["encoder", "layer", "source", "subset"]):
        where = dict(zip(("encoder", "layer", "source", "subset"), key, strict=True))
        parts = []
        for a in ("sem", "voice", "expr"):
            parts.append(
                f"F_{a} {_value(frame, 'F', **where, axis=a)[0]:.3f} (noise {_value(frame, 'F_noise', **where, axis=a)[0]:.3f})"
            )
        lam = _value(frame, "Lambda", **where, axis="sem", axis_b="voice")[0]
        lam_noise = _value(frame, "Lambda_noise", **where, axis="sem", axis_b="voice")[0]
        parts.append(f"Λ sem–voice {lam:.3f} (noise {lam_noise:.3f})")
        lines += [
            "",
            f"Noise floor, {key[0]} {key[3]} ({sub['n_rows'].iloc[0]} replicate cells): " + ", ".join(parts) + ".",
        ]
    return lines
