"""Paper-ready LaTeX tables of one analysed run (``interbias report --latex``).

Writes ``tables/<name>.tex`` (one booktabs ``table`` each, a ``longtable`` past
:data:`LONG_ROWS` rows, to ``\\input`` into a paper) and
``tables.tex`` (a standalone document that inputs them all, to check they compile):

- ``contrasts``: the interaction effect per model and contrast, over the settings with all
  four factorial terms (InterBias-SV's Table 11 shape: n, mean IE with its interval, SD, share
  positive, mean NLI);
- ``summary``: the same per experiment × family;
- ``models``: the metric per cell (rows) and model (columns), intervals when the run has them;
- ``gaps``: subgroup gap per model and condition with its interval;
- ``leaderboard``: encoders × experiment with intervals and the bootstrap rank (needs replicates);
- ``fairness``: the run's fairness comparisons (the fairness report's comparisons file,
  :data:`interbias.run.rundir.FAIRNESS`, when the run has a dev split).

Numbers are rounded to :data:`DIGITS` decimals (metrics are fractions: 0.010 is one percentage
point); shares in percent to one decimal; intervals in brackets ``[lo, hi]`` at the analysis's
level. Every caption states the rounding.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from interbias.analysis.suite import Analysis
from interbias.utils import atomic
from interbias.utils.errors import AnalysisError, InterbiasError
from interbias.utils.paths import slug

DIGITS = 3
_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def escape(text: Any) -> str:
    """``text`` with LaTeX's special characters escaped (``−`` and ``×`` as math)."""
    out = "".join(_SPECIAL.get(c, c) for c in str(text))
    return out.replace("−", "$-$").replace("×", r"$\times$").replace("Δ", r"$\Delta$")


def number(v: Any, digits: int = DIGITS) -> str:
    """A number rounded to ``digits`` decimals, ``--`` when missing or not finite."""
    try:
        x = float(v)
    except (TypeError, ValueError):
        return "--" if v in (None, "") else escape(v)
    if not math.isfinite(x):
        return "--"
    if round(x, digits) == 0:  # never a negative zero
        x = 0.0
    return f"${x:.{digits}f}$"


def interval(v: Any, lo: Any, hi: Any, digits: int = DIGITS) -> str:
    """``value [lo, hi]``; the value alone when the interval is missing."""
    value = number(v, digits)
    bounds = number(lo, digits), number(hi, digits)
    if "--" in bounds:
        return value
    return f"{value} [{bounds[0]}, {bounds[1]}]"


@dataclass(frozen=True)
class Col:
    """One table column: its header and how a row becomes the cell's LaTeX."""

    header: str
    cell: Callable[[pd.Series], str]
    align: str = "r"


def text(col: str, header: str | None = None) -> Col:
    return Col(escape(header or col), lambda r: escape(r.get(col, "")), "l")


def num(col: str, header: str | None = None, digits: int = DIGITS) -> Col:
    return Col(escape(header or col), lambda r: number(r.get(col), digits))


def with_ci(col: str, header: str | None = None) -> Col:
    return Col(escape(header or col), lambda r: interval(r.get(col), r.get(f"{col}_lo"), r.get(f"{col}_hi")))


#: Tables with more rows than this are a ``longtable`` that breaks across pages (a ``table``
#: float of 228 rows cannot be typeset on one page).
LONG_ROWS = 40


def booktabs(frame: pd.DataFrame, cols: Sequence[Col], caption: str, label: str) -> str:
    """A ``table`` environment with a booktabs ``tabular`` of ``frame``'s rows, or a booktabs
    ``longtable`` (header repeated on every page) when it has more than :data:`LONG_ROWS` rows."""
    header = [r"\toprule", " & ".join(c.header for c in cols) + r" \\", r"\midrule"]
    rows = [" & ".join(c.cell(row) for c in cols) + r" \\" for _, row in frame.iterrows()]
    spec = "".join(c.align for c in cols)
    if len(rows) > LONG_ROWS:
        return longtable(spec, len(cols), header, rows, caption, label)
    lines = [
        r"\begin{table}[htbp]",
        r"\centering",
        r"\small",
        rf"\caption{{{caption}}}",
        rf"\label{{tab:{label}}}",
        r"\begin{tabular}{" + spec + "}",
        *header,
    ]
    lines += rows
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}", ""]
    return "\n".join(lines)


def longtable(spec: str, n: int, header: list[str], rows: list[str], caption: str, label: str) -> str:
    """A booktabs ``longtable``: caption and header on the first page, the header again under a
    "continued" line on the next ones; ``n`` columns (needs ``\\usepackage{longtable}``, as
    tables.tex has)."""
    lines = [
        r"% a longtable: \usepackage{longtable} and \usepackage{booktabs} in the preamble",
        r"\begingroup\small",
        r"\begin{longtable}{" + spec + "}",
        rf"\caption{{{caption}}}\label{{tab:{label}}}\\",
        *header,
        r"\endfirsthead",
        rf"\multicolumn{{{n}}}{{l}}{{\itshape Table \thetable, continued}}\\",
        *header,
        r"\endhead",
        r"\midrule",
        rf"\multicolumn{{{n}}}{{r}}{{\itshape continued on the next page}}\\",
        r"\endfoot",
        r"\bottomrule",
        r"\endlastfoot",
        *rows,
        r"\end{longtable}",
        r"\endgroup",
        "",
    ]
    return "\n".join(lines)


#: The interval of a results cell.
CELL_METHOD = "Each cell's percentile intervals"
#: Said after the findings' interval method in a caption.
FINDINGS_NOTE = " (the findings' interval)"
#: The interval of a mean over settings (not a findings' effect).
MEAN_METHOD = "the mean's percentile intervals"


def _rounding(a: Analysis, method: str | None = None, *, intervals: bool = True) -> str:
    """The caption's rounding and interval sentence; ``method``: the interval's method in words
    (default: the replicates' percentile interval); ``intervals``: False for a table without any."""
    if not intervals:
        ci = ""
    elif a.replicates is None:
        ci = " No intervals (no bootstrap)."
    elif method is None:
        ci = f" {escape(a.replicates.describe())} in brackets."
    else:
        r = a.replicates
        ci = f" {escape(method)} in brackets (B={r.n_boot} {r.unit}-level bootstrap replicates, master seed {r.seed})."
    return f"{escape(a.options.metric)} as fractions, rounded to {DIGITS} decimals.{ci}"


def contrasts_table(a: Analysis) -> str | None:
    frame = a.per_model
    if frame is None or not len(frame):
        return None
    ci = "mean_ie_lo" in frame.columns
    cols = [text("model"), text("family"), text("contrast"), num("n", digits=0)]
    cols += [with_ci("mean_ie", "mean IE") if ci else num("mean_ie", "mean IE"), num("sd_ie", "SD")]
    cols += [num("pct_positive", "% IE > 0", 1), num("mean_nli", "mean NLI"), num("n_nli", "n NLI", 0)]
    caption = (
        "Interaction effect (IE = observed $-$ additive prediction) by model and contrast, over the settings "
        "for which all four factorial terms are available; n is the number of settings. "
        f"{_rounding(a, MEAN_METHOD)}"
    )
    return booktabs(frame, cols, caption, "contrasts")


def summary_table(a: Analysis) -> str | None:
    frame = a.summary
    if frame is None or not len(frame):
        return None
    ci = "mean_ie_lo" in frame.columns
    cols = [text("family"), text("contrast"), num("n", digits=0)]
    cols += [with_ci("mean_ie", "mean IE") if ci else num("mean_ie", "mean IE"), num("sd_ie", "SD")]
    cols += [num("pct_positive", "% IE > 0", 1), num("mean_nli", "mean NLI")]
    caption = f"Interaction effect per experiment and model family. {_rounding(a, MEAN_METHOD)}"
    return booktabs(frame, cols, caption, "contrast-summary")


def models_table(a: Analysis) -> str | None:
    from interbias.analysis.reporting.headline import cell_pivot

    frame = cell_pivot(a)
    if frame is None or not len(frame):
        return None
    keys = [c for c in ("experiment", "cell") if c in frame.columns]
    cols = [text(c) for c in keys] + [Col(escape(c), _pivot_cell(c)) for c in frame.columns if c not in keys]
    caption = f"{escape(a.options.metric)} per cell (rows) and model (columns). {_rounding(a)}"
    return booktabs(frame, cols, caption, "models")


def _pivot_cell(col: str) -> Callable[[pd.Series], str]:
    def cell(row: pd.Series) -> str:
        v = row.get(col)
        if isinstance(v, str) and "[" in v:  # "0.1234 [0.1, 0.2]" from the pivot: re-round
            head, _, rest = v.partition("[")
            lo, _, hi = rest.rstrip("]").partition(",")
            return interval(head.strip(), lo.strip(), hi.strip())
        return number(v)

    return cell


def gaps_table(a: Analysis) -> str | None:
    frame = a.gaps.gaps
    if frame is None or not len(frame):
        return None
    cols = [text("model"), text("group_level", "group"), text("condition"), with_ci("gap"), num("abs_gap", "|gap|")]
    if "p_perm" in frame.columns:
        cols.append(num("p_perm", "p (perm.)"))
    caption = (
        f"Subgroup gap (group level $-$ reference group) per model, group level and condition. "
        f"{_rounding(a, a.interval_method + FINDINGS_NOTE)}"
    )
    return booktabs(frame, cols, caption, "gaps")


def grid_tables(a: Analysis) -> str | None:
    """Per experiment × model the metric as a grid (rows: the first factor's levels; columns:
    the other factors' settings), each cell with its interval."""
    from interbias.analysis.reporting.paper_tables import grids

    out = []
    for exp, model, grid in grids(a.results, a.options.metric, a.cells):
        cols = [text(str(grid.columns[0]))] + [Col(escape(c), _pivot_cell(c)) for c in grid.columns[1:]]
        caption = (
            f"{escape(a.options.metric)} of {escape(model)} in {escape(exp)}: rows the levels of "
            f"{escape(grid.columns[0])}, columns the other factors. {_rounding(a, CELL_METHOD)}"
        )
        out.append(booktabs(grid, cols, caption, f"grid-{slug(exp)}-{slug(model)}"))
    return "\n".join(out) or None


def settings_table(a: Analysis) -> str | None:
    """Table 12: per setting the observed metric and the additive prediction (means over
    encoders), the mean IE per family, the ceiling (U − prediction) and the chance line."""
    from interbias.analysis.reporting.paper_tables import setting_table

    frame = setting_table(a.contrasts.contrasts, a.options.metric)
    if not len(frame):
        return None
    fams = [c for c in frame.columns if c.startswith("ie_") and c not in ("ie_ceiling", "ie_chance")]
    cols = [text("contrast"), text("level_a"), text("level_b"), num("observed"), num("predicted", "additive")]
    cols += [num(c, f"IE {c[3:]}") for c in fams] + [num("ie_ceiling", "ceiling"), num("ie_chance", "chance line")]
    caption = (
        "Per setting: observed and additive prediction, each the mean over encoders; the mean IE per model family; "
        "ceiling = U $-$ prediction, the largest IE the metric's maximum U leaves room for (U = 1 for EER); "
        f"chance line = chance $-$ prediction, a reference, not a bound. {_rounding(a, intervals=False)}"
    )
    return booktabs(frame, cols, caption, "settings")


def conditions_table(a: Analysis) -> str | None:
    """Tables 14–30: per experiment and cell the metric's mean ± SD over encoders."""
    from interbias.analysis.reporting.paper_tables import condition_table

    frame = condition_table(a.results, a.options.metric)
    if not len(frame):
        return None
    pm = Col("mean $\\pm$ SD", lambda r: f"{number(r.get('mean'))} $\\pm$ {number(r.get('sd'))}")
    cols = [text("experiment"), text("cell"), num("n_models", "encoders", 0), pm]
    caption = f"{escape(a.options.metric)} per condition: mean $\\pm$ SD (ddof 1) over encoders. {_rounding(a, intervals=False)}"
    return booktabs(frame, cols, caption, "conditions")


def findings_table(a: Analysis) -> str | None:
    """Every effect of the findings: model, kind, effect, estimate with its interval, adjusted p,
    resolved (the findings' order: per model, main effects, interactions, gaps)."""
    from interbias.analysis.effects import order

    if a.found is None or not len(a.found):
        return None
    frame = order(a.found).rename(columns={"estimate": "est", "lo": "est_lo", "hi": "est_hi"})
    from interbias.analysis.effect_names import effect_name

    name = Col("effect", lambda r: escape(effect_name(r)), "l")
    cols = [text("model"), text("kind"), name, with_ci("est", "estimate")]
    cols += [Col("adjusted p", lambda r: p_text(r.get("p_adjusted"))), Col("resolved", _yes_no("resolved"))]
    caption = (
        f"Every effect of the family with its interval and {escape(a.options.adjust)}-adjusted p-value; resolved: "
        f"adjusted p $<$ {1 - a.options.level:g}. {_rounding(a, a.interval_method)}"
    )
    return booktabs(frame, cols, caption, "findings")


def p_text(v: Any) -> str:
    """A p-value: ``$<$0.001`` or three decimals, ``--`` when missing."""
    try:
        x = float(v)
    except (TypeError, ValueError):
        return "--"
    if x != x:
        return "--"
    return "$<$0.001" if x < 1e-3 else f"{x:.3f}"


def _yes_no(col: str) -> Callable[[pd.Series], str]:
    return lambda r: "yes" if str(r.get(col)) == "True" else "no"


def leaderboard_table(a: Analysis) -> str | None:
    from interbias.analysis.across import leaderboard as lb
    from interbias.analysis.across.runs import RunAnalysis

    if a.replicates is None:
        return None
    board = lb.build([RunAnalysis(a.run.path, a.run.trials_sha256 or "unknown", a)])
    if len(board.models) < 2:
        raise AnalysisError(f"a single encoder ({', '.join(board.models)}): no pair of encoders to rank")
    names = [c.label for c in board.columns] + ["macro"]
    cols = [text("model"), *(with_ci(n) for n in names), Col("rank", lambda r: number(r.get("rank"), 0))]
    caption = (
        f"Leaderboard: mean {escape(a.options.metric)} over each experiment's cells; the rank separates two "
        f"encoders only when their paired bootstrap difference excludes zero. {_rounding(a)}"
    )
    return booktabs(board.table, cols, caption, "leaderboard")


def fairness_table(run_dir: Path) -> str | None:
    from interbias.run.rundir import FAIRNESS, RunDir

    frame = RunDir(run_dir).read_fairness(keep_default_na=False)[1]
    if frame is None or not len(frame):
        return None
    skip = {"threshold_rule", "note"}
    cols = [
        text(c) if frame[c].dtype == object else num(c, digits=0 if c.startswith("n_") else DIGITS)
        for c in frame.columns
        if c not in skip
    ]
    caption = f"Fairness comparisons of the run ({FAIRNESS}); numbers rounded to {DIGITS} decimals."
    return booktabs(frame, cols, caption, "fairness")


PREAMBLE = r"""\documentclass{article}
\usepackage[T1]{fontenc}
\usepackage[utf8]{inputenc}
\usepackage{booktabs}
\usepackage{longtable}
\usepackage[margin=1.5cm,landscape]{geometry}
\begin{document}
"""


def latex_tables(a: Analysis) -> dict[str, str]:
    """Every table this run supports, by name (absent ones are left out)."""
    makers: dict[str, Callable[[], str | None]] = {
        "contrasts": lambda: contrasts_table(a),
        "summary": lambda: summary_table(a),
        "models": lambda: models_table(a),
        "gaps": lambda: gaps_table(a),
        "findings": lambda: findings_table(a),
        "grids": lambda: grid_tables(a),
        "settings": lambda: settings_table(a),
        "conditions": lambda: conditions_table(a),
        "leaderboard": lambda: leaderboard_table(a),
        "fairness": lambda: fairness_table(a.run.path),
    }
    out = {}
    for name, make in makers.items():
        try:
            tex = make()
        except (InterbiasError, KeyError) as exc:  # a table this run cannot give: said, not silent
            tex = f"% {name}: not available for this run ({escape(exc)})\n"
        if tex:
            out[name] = tex
    return out


def t1_safe(tex: str) -> tuple[str, list[str]]:
    """``tex`` with every character the T1 font encoding cannot set (beyond ASCII and Latin-1:
    CJK, emoji, most symbols) transliterated to its NFKD letters where those are Latin-1 (``ő``
    → ``o``), else written ``{[U+XXXX]}`` (braced: a ``[`` after ``\\\\`` would be read as its
    argument); and the characters replaced, in order of first use."""
    import unicodedata

    out, replaced = [], []
    for ch in tex:
        if _settable(ch):
            out.append(ch)
            continue
        base = "".join(c for c in unicodedata.normalize("NFKD", ch) if not unicodedata.combining(c))
        out.append(base if base and all(_settable(c) for c in base) else f"{{[U+{ord(ch):04X}]}}")
        if ch not in replaced:
            replaced.append(ch)
    return "".join(out), replaced


def _settable(ch: str) -> bool:
    """Whether pdflatex with T1 and utf8 input sets ``ch``: printable ASCII, newline, tab or
    printable Latin-1."""
    code = ord(ch)
    return ch in "\n\t" or 0x20 <= code < 0x7F or 0xA0 <= code <= 0xFF


def write_latex(a: Analysis, folder: Path) -> tuple[list[Path], str | None]:
    """``tables/<name>.tex`` per table and ``tables.tex`` inputting them: the paths written, and a
    note when characters the T1 encoding cannot set were replaced (:func:`t1_safe`; each such
    table's first line, a comment, names them too)."""
    paths, replaced, touched = [], [], 0
    tables = latex_tables(a)
    for name, raw in tables.items():
        tex, here = t1_safe(raw)
        if here:
            touched += 1
            replaced += [c for c in here if c not in replaced]
            tex = f"% {_replaced_note(here)}\n{tex}"
        path = Path(folder) / "tables" / f"{name}.tex"
        atomic.write_text(path, tex)
        paths.append(path)
    body = "".join(f"\\input{{tables/{name}}}\n" for name in tables)
    doc = Path(folder) / "tables.tex"
    atomic.write_text(doc, PREAMBLE + body + "\\end{document}\n")
    return [doc, *paths], (_replaced_note(replaced, f", in {touched} table(s),") if replaced else None)


def _replaced_note(chars: list[str], where: str = "") -> str:
    what = ", ".join(f"U+{ord(c):04X}" for c in chars[:8]) + (", ..." if len(chars) > 8 else "")
    return f"{len(chars)} character(s) outside the T1 encoding{where} transliterated or written as [U+XXXX] ({what})"
