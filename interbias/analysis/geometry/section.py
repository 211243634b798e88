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
    figure = folder / "geometry.png"
    if figure.is_file():
        lines += ["", "![geometry](geometry.png)"]
    return GeometrySection(table, "\n".join(lines) + "\n", figure if figure.is_file() else None)
