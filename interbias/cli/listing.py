"""``interbias list``: the experiment catalogue and whether each entry runs here now."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from interbias.cli import app, guarded
from interbias.cli.tables import width
from interbias.run.catalogue import REASON_KEY, experiment_entries, without_reason_keys


def _mark(v: dict[str, Any]) -> str:
    return "✓" if v["runnable"] else f"✗{v.get(REASON_KEY, 'invalid')}"


def _runs_here(e: dict[str, Any]) -> str:
    """``ravdess ✗data · synthetic(11) ✓``: the default corpus, then each variant with its cells."""
    parts = [f"{e['corpus']} {_mark(e)}"]
    for v in e["variants"]:
        cells = f"({v['n_cells']})" if "n_cells" in v else ""
        parts.append(f"{v['name']}{cells} {_mark(v)}")
    return " · ".join(parts)


def _wrapped(text: str, indent: str) -> list[str]:
    """``text`` wrapped to the width, continuation lines indented by ``indent``; words whole."""
    import textwrap

    return textwrap.wrap(text, width(), subsequent_indent=indent, break_long_words=False, break_on_hyphens=False)


def _packed(parts: list[str], total: int, indent: str) -> list[str]:
    """``parts`` joined by `` · `` into lines of at most ``total`` characters (a part longer
    than that stays whole on its own line), each starting with ``indent``."""
    lines: list[str] = []
    for part in parts:
        if lines and len(lines[-1]) + 3 + len(part) <= total:
            lines[-1] += " · " + part
        else:
            lines.append(indent + part)
    return lines


def catalogue_table(entries: list[dict[str, Any]]) -> list[str]:
    """One line per experiment (id, title, use, cells, where it runs), then a legend of the
    reason keys that occur and where to go next."""
    from interbias.run.preflight import REASONS

    rows = [("exp", "title", "use", "cells", "runs here: corpus · --corpus variant(cells)")]
    for e in entries:
        if "error" in e:
            rows.append((e["name"], "(invalid experiment file)", "", "", _mark(e)))
            continue
        rows.append((e["name"], e["title"], e["use"], str(e["n_cells"]), _runs_here(e)))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = [
        f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:<{widths[2]}}  {r[3]:>{widths[3]}}  {r[4]}".rstrip()
        for r in rows
    ]
    if max(map(len, lines[1:]), default=0) <= width() < len(lines[0]):  # the rows fit: a shorter header
        lines[0] = lines[0].removesuffix(": corpus · --corpus variant(cells)")
    elif max(map(len, lines)) > width():  # the last column under each row, packed at " · "
        lines = []
        for r in rows:
            lines.append(f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:<{widths[2]}}  {r[3]:>{widths[3]}}".rstrip())
            lines.extend(_packed(r[4].split(" · "), width(), "     "))
    keys = {x.get(REASON_KEY) for e in entries for x in [e, *e.get("variants", [])] if not x["runnable"]}
    lines.append("")
    lines.append("✓ runs here now; ✗ does not, because:")
    for k in (k for k in REASONS if k in keys):
        lines.extend(_wrapped(f"  ✗{k:<9}{REASONS[k]}", " " * 12))
    runs = sorted((e for e in entries if e.get("runnable_with") or e["runnable"]), key=lambda e: e["name"] != "E16")
    if runs:
        e = runs[0]
        cmd = f"interbias run {e['name']}" + ("" if e["runnable"] else f" --corpus {e['runnable_with'][0]}")
        lines.extend(_wrapped(f"Try `{cmd}`; `interbias list -v` shows levels, reasons and the data each needs.", "  "))
    return lines


@app.command("list", epilog="Example: interbias list -v")
@guarded
def list_experiments(
    verbose: Annotated[
        bool,
        typer.Option("--verbose", "-v", help="Every factor and level, and in full why an entry does not run here."),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (every field, every variant).")] = False,
) -> None:
    """The experiments, their cells, and whether each runs here now (its corpus, each variant).

    -v adds factors, levels, why an entry does not run here, and the data each needs."""
    entries = experiment_entries()
    if as_json:
        typer.echo(json.dumps(without_reason_keys(entries), indent=2))
        return
    if not verbose:
        typer.echo("\n".join(catalogue_table(entries)))
        return
    _print_detail(entries)


def _print_detail(entries: list[dict[str, Any]]) -> None:
    for e in entries:
        if "error" in e:
            typer.echo(f"{e['name']}  INVALID: {e['error']}")
            continue
        typer.echo(f"{e['name']}  {e['title']}  [{e['use']}]  corpus {e['corpus']}, {e['n_cells']} cells")
        for f in e["factors"]:
            typer.echo(f"     {f['name']} ({f['type']}, ref {f['reference']}): {', '.join(f['levels'])}")
        typer.echo("     runs here: " + ("yes" if e["runnable"] else f"no: {e['why_not']}"))
        for v in e["variants"]:
            if "error" in v:
                typer.echo(f"     variant {v['name']}: INVALID: {v['error']}")
                continue
            state = "yes" if v["runnable"] else f"no: {v['why_not']}"
            typer.echo(f"     variant {v['name']} (--corpus {v['name']}): {v['n_cells']} cells, runs here: {state}")
