"""The report as a document: headings, paragraphs, tables and figures (:class:`Report`),
rendered as Markdown (figures beside it) or as one self-contained HTML page (figures embedded
as base64 PNG), and written with each figure's vector files.
"""

from __future__ import annotations

import base64
import html
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from interbias.analysis import plots
from interbias.utils import atomic

DIGITS = 4


@dataclass
class Figure:
    name: str
    title: str
    caption: str
    png: bytes
    #: The same figure as vector files by format (pdf, svg), saved beside the PNG.
    vectors: dict[str, bytes] = field(default_factory=dict)


@dataclass
class Report:
    title: str
    blocks: list[tuple[str, Any]] = field(default_factory=list)  # (kind, payload)
    figures: list[Figure] = field(default_factory=list)
    omitted: list[str] = field(default_factory=list)

    def heading(self, text: str) -> None:
        self.blocks.append(("h2", text))

    def para(self, text: str) -> None:
        self.blocks.append(("p", text))

    def table(self, frame: pd.DataFrame, columns: list[str] | None = None) -> None:
        cols = [c for c in (columns or list(frame.columns)) if c in frame.columns]
        self.blocks.append(("table", frame[cols].reset_index(drop=True)))

    def figure(self, fig: Figure) -> None:
        self.figures.append(fig)
        self.blocks.append(("figure", fig))


def format_value(v: Any) -> str:
    if isinstance(v, (float, np.floating)):
        return "" if math.isnan(v) else f"{v:.{DIGITS}f}"
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    return str(v)


def make_figure(name: str, title: str, caption: str, fig: Any) -> Figure:
    return Figure(name, title, caption, plots.png(fig), plots.vectors(fig))


def _md_table(frame: pd.DataFrame) -> str:
    head = "| " + " | ".join(frame.columns) + " |"
    sep = "| " + " | ".join("---" for _ in frame.columns) + " |"
    body = [
        "| " + " | ".join(format_value(v).replace("|", "\\|") for v in row) + " |"
        for row in frame.itertuples(index=False)
    ]
    return "\n".join([head, sep, *body])


def to_markdown(rep: Report, figure_dir: str) -> str:
    out = [f"# {rep.title}", ""]
    for kind, payload in rep.blocks:
        if kind == "h2":
            out += [f"## {payload}", ""]
        elif kind == "p":
            out += [payload, ""]
        elif kind == "table":
            out += [_md_table(payload), ""]
        elif kind == "figure":
            out += [f"### {payload.title}", "", f"![{payload.title}]({figure_dir}/{payload.name}.png)", ""]
            out += [payload.caption, ""]
    return "\n".join(out)


_CSS = (
    "body{font-family:sans-serif;max-width:1200px;margin:2em auto;color:#222}"
    "table{border-collapse:collapse;font-size:12px;margin:0.5em 0}"
    "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}th{background:#eee}"
    "img{max-width:100%}figure{margin:1em 0}figcaption{font-size:13px;color:#444}"
)


def to_html(rep: Report) -> str:
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(rep.title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(rep.title)}</h1>",
    ]
    for kind, payload in rep.blocks:
        if kind == "h2":
            out.append(f"<h2>{html.escape(payload)}</h2>")
        elif kind == "p":
            out.append(f"<p>{html.escape(payload)}</p>")
        elif kind == "table":
            cells = payload.map(format_value)
            out.append(cells.to_html(index=False, escape=True, border=0))
        elif kind == "figure":
            data = base64.b64encode(payload.png).decode("ascii")
            out.append(
                f'<figure id="{html.escape(payload.name)}"><h3>{html.escape(payload.title)}</h3>'
                f'<img alt="{html.escape(payload.title)}" src="data:image/png;base64,{data}">'
                f"<figcaption>{html.escape(payload.caption)}</figcaption></figure>"
            )
    out.append("</body></html>")
    return "\n".join(out)


def write_report(rep: Report, folder: Path) -> tuple[Path, Path]:
    """Write ``report.md`` (figures in ``report_figures/``) and ``report.html`` into ``folder``."""
    fig_dir = "report_figures"
    for fig in rep.figures:
        atomic.write_bytes(folder / fig_dir / f"{fig.name}.png", fig.png)
    write_vector_figures(rep, folder / fig_dir)
    md, page = folder / "report.md", folder / "report.html"
    atomic.write_text(md, to_markdown(rep, fig_dir))
    atomic.write_text(page, to_html(rep))
    return md, page


def write_vector_figures(rep: Report, folder: Path) -> list[Path]:
    """Each figure's vector files (``<name>.pdf``, ``<name>.svg``) beside its PNG in ``folder``."""
    paths = []
    for fig in rep.figures:
        for fmt, data in fig.vectors.items():
            paths.append(folder / f"{fig.name}.{fmt}")
            atomic.write_bytes(paths[-1], data)
    return paths
