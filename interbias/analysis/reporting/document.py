"""The report as a document: headings, paragraphs, lists, tables and figures (:class:`Report`),
rendered as Markdown (figures beside it) or as one self-contained HTML page (figures embedded
as base64 PNG), and written with each figure's vector files.

Every heading gets an anchor and the contents list (``toc``) links them. A table longer than
:data:`COLLAPSE_ROWS` rows, or one added with ``collapsed``, sits in a closed ``<details>``
block (both renderings), so long tables stay out of the reading path. Values: metric values
with three decimals (one unit: fractions), p-values as ``< 0.001`` or three decimals, counts
(columns named ``n_*``, ``*speakers*``, ``*trials*``, ``family_size``) as integers, never a
negative zero. A figure whose drawing raises a warning (matplotlib's "axes sizes collapsed",
a font or layout warning) is not drawn: it is counted in ``omitted`` with the warning.
"""

from __future__ import annotations

import base64
import html
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from interbias.analysis.reporting import plots
from interbias.analysis.reporting.numbers import format_value
from interbias.utils import atomic

#: Tables with more rows than this are collapsed.
COLLAPSE_ROWS = 15


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

    def bullets(self, items: list[str]) -> None:
        self.blocks.append(("ul", list(items)))

    def toc(self) -> None:
        """A contents list of every ``h2`` (rendered from the headings present at the end)."""
        self.blocks.append(("toc", None))

    def table(self, frame: pd.DataFrame, columns: list[str] | None = None, *, collapsed: str | None = None) -> None:
        """A table; ``collapsed``: the summary line of a closed block it is put in (long tables
        are collapsed anyway, with a summary giving their row count)."""
        cols = [c for c in (columns or list(frame.columns)) if c in frame.columns]
        data = frame[cols].reset_index(drop=True)
        if collapsed is None and len(data) > COLLAPSE_ROWS:
            collapsed = f"Table of {len(data)} rows (click to open)"
        self.blocks.append(("table", (data, collapsed)))

    def figure(self, fig: Figure) -> None:
        self.figures.append(fig)
        self.blocks.append(("figure", fig))

    def draw(self, name: str, title: str, caption: str, build: Callable[[], Any]) -> bool:
        """Draw ``build()`` as a figure; any warning while drawing or saving it makes it a
        counted "not drawn" entry with the warning, never a broken image. True when drawn."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fig = build()
            plots.place_legends(fig)
            data = Figure(name, title, caption, plots.png(fig), plots.vectors(fig))
        if caught:
            why = "; ".join(dict.fromkeys(str(w.message).splitlines()[0] for w in caught))
            self.omitted.append(f"{title}: matplotlib warned while drawing it ({why})")
            return False
        self.figure(data)
        return True


def anchor(text: str) -> str:
    """The id of a heading: lower case, runs of other characters as one ``-``."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"


def _cells(frame: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({c: [format_value(v, c) for v in frame[c]] for c in frame.columns}, columns=frame.columns)


def _md_table(frame: pd.DataFrame) -> str:
    head = "| " + " | ".join(frame.columns) + " |"
    sep = "| " + " | ".join("---" for _ in frame.columns) + " |"
    body = [
        "| " + " | ".join(v.replace("|", "\\|") for v in row) + " |" for row in _cells(frame).itertuples(index=False)
    ]
    return "\n".join([head, sep, *body])


def _headings(rep: Report) -> list[str]:
    return [payload for tag, payload in rep.blocks if tag == "h2"]


def to_markdown(rep: Report, figure_dir: str) -> str:
    out = [f"# {rep.title}", ""]
    for tag, payload in rep.blocks:
        if tag == "h2":
            out += [f'<a id="{anchor(payload)}"></a>', "", f"## {payload}", ""]
        elif tag == "p":
            out += [payload, ""]
        elif tag == "ul":
            out += [*(f"- {item}" for item in payload), ""]
        elif tag == "toc":
            out += ["Contents: " + " · ".join(f"[{h}](#{anchor(h)})" for h in _headings(rep)), ""]
        elif tag == "table":
            frame, collapsed = payload
            if collapsed:
                out += ["<details>", f"<summary>{html.escape(collapsed)}</summary>", ""]
            out += [_md_table(frame), ""]
            if collapsed:
                out += ["</details>", ""]
        elif tag == "figure":
            out += [f"### {payload.title}", "", f"![{payload.title}]({figure_dir}/{payload.name}.png)", ""]
            out += [payload.caption, ""]
    return "\n".join(out)


_CSS = (
    "body{font-family:sans-serif;max-width:1200px;margin:2em auto;color:#222}"
    "table{border-collapse:collapse;font-size:12px;margin:0.5em 0}"
    "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}th{background:#eee}"
    "img{max-width:100%}figure{margin:1em 0}figcaption{font-size:13px;color:#444}"
    "ul.answer li{margin:0.2em 0}nav.toc{font-size:13px;margin:0.5em 0}summary{cursor:pointer;color:#036}"
)


def to_html(rep: Report) -> str:
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(rep.title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(rep.title)}</h1>",
    ]
    for tag, payload in rep.blocks:
        if tag == "h2":
            out.append(f'<h2 id="{anchor(payload)}">{html.escape(payload)}</h2>')
        elif tag == "p":
            out.append(f"<p>{html.escape(payload)}</p>")
        elif tag == "ul":
            out.append('<ul class="answer">' + "".join(f"<li>{html.escape(i)}</li>" for i in payload) + "</ul>")
        elif tag == "toc":
            links = " · ".join(f'<a href="#{anchor(h)}">{html.escape(h)}</a>' for h in _headings(rep))
            out.append(f'<nav class="toc">Contents: {links}</nav>')
        elif tag == "table":
            frame, collapsed = payload
            table = _cells(frame).to_html(index=False, escape=True, border=0)
            out.append(f"<details><summary>{html.escape(collapsed)}</summary>{table}</details>" if collapsed else table)
        elif tag == "figure":
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
