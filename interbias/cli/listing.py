"""``interbias list``: the experiment catalogue and whether each entry runs here now."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from interbias.cli import app, guarded
from interbias.cli.options import json_flag
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


def _here(e: dict[str, Any]) -> str:
    """Where an entry runs, in one short cell: its corpus when that runs, else the first
    variant that does (``synthetic(42) ✓``), else the first variant one step from running
    (``synthetic(6) ✗models``), else its corpus and why not."""
    if "error" in e or e["runnable"]:
        return f"{e.get('corpus', '')} {_mark(e)}".strip()
    for v in e["variants"]:
        if v["runnable"]:
            return f"{v['name']}({v.get('n_cells', '?')}) ✓"
    near = [v for v in e["variants"] if v.get(REASON_KEY) not in ("data", "manifest")]  # one step away
    return f"{near[0]['name']}({near[0].get('n_cells', '?')}) {_mark(near[0])}" if near else f"{e['corpus']} {_mark(e)}"


def _narrow(entries: list[dict[str, Any]], head: tuple[str, ...]) -> list[str]:
    """The catalogue at the console's width: one cell of where each entry runs (``list -v``
    has every corpus), the title wrapped at words in the room that is left."""
    import textwrap

    rows = [(*head, "runs here")]
    for e in entries:
        title, use = ("(invalid experiment file)", "") if "error" in e else (e["title"], e["use"])
        rows.append((e["name"], title, use, str(e.get("n_cells", "")), _here(e)))
    w = [max(len(r[i]) for r in rows) for i in range(5)]
    room = max(16, width() - (w[0] + w[2] + w[3] + w[4] + 8))
    lines = []
    for r in rows:
        parts = textwrap.wrap(r[1], room, break_long_words=False, break_on_hyphens=False) or [""]
        lines.append(f"{r[0]:<{w[0]}}  {parts[0]:<{room}}  {r[2]:<{w[2]}}  {r[3]:>{w[3]}}  {r[4]}".rstrip())
        lines.extend(f"{'':<{w[0]}}  {part}" for part in parts[1:])
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
    elif max(map(len, lines)) > width():  # one place it runs (or why not), titles wrapped
        lines = _narrow(entries, rows[0][:4])
    keys = {x.get(REASON_KEY) for e in entries for x in [e, *e.get("variants", [])] if not x["runnable"]}
    lines.append("")
    lines.append("✓ runs here now; ✗ does not, because:")
    for k in (k for k in REASONS if k in keys):
        lines.extend(_wrapped(f"  ✗{k:<9}{REASONS[k]}", " " * 12))
    runs = sorted((e for e in entries if e.get("runnable_with") or e["runnable"]), key=lambda e: e["name"] != "E16")
    if runs:
        e = runs[0]
        cmd = f"interbias run {e['name']}" + ("" if e["runnable"] else f" --corpus {e['runnable_with'][0]}")
        hint = f"Try `{cmd}`; `interbias list -v` shows levels, reasons and the data each needs."
        if len(hint) > width():
            hint = f"Try `{cmd}`; all levels and reasons: `list -v`."
        lines.extend(_wrapped(hint, "  "))
    return lines


@app.command("list", epilog="Example: interbias list -v")
@guarded
def list_experiments(
    verbose: Annotated[
        bool,
        typer.Option("--verbose", "-v", help="Every factor and level, and in full why an entry does not run here."),
    ] = False,
    as_json: Annotated[bool, json_flag("Print JSON (every field, every variant).")] = False,
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
