"""``interbias list``: the experiment catalogue and whether each entry runs here now."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from interbias.cli import app, guarded

#: The short reason key of an entry that does not run here (shown in the table, not in --json).
_KEY = "why_key"


def _describe(exp: Any) -> dict[str, Any]:
    """Corpus, factors with levels, cells, and runnability of one loaded experiment."""
    from interbias.availability import availability

    out: dict[str, Any] = {
        "corpus": exp.corpus.name,
        "factors": [
            {
                "name": f.name,
                "type": f.type,
                **({"attribute": f.attribute} if f.attribute else {}),
                "reference": f.reference,
                "levels": f.level_names,
            }
            for f in exp.factors
        ],
        "n_cells": len(exp.cells()),
        "requires": exp.requires.strip(),
    }
    why = availability(exp)
    out["runnable"] = why.runnable
    if not why.runnable:
        out["why_not"] = why.detail
        out[_KEY] = why.key
    return out


def experiment_entries(conditions: Path | None = None) -> list[dict[str, Any]]:
    """One entry per ``conditions/*.yaml``: its default corpus and every ``variants:`` entry."""
    from interbias.errors import InterbiasError
    from interbias.experiments import load_experiment
    from interbias.paths import conditions_dir

    out = []
    for path in sorted((conditions or conditions_dir()).glob("*.yaml")):
        entry: dict[str, Any] = {"name": path.stem, "file": str(path)}
        try:
            exp = load_experiment(path)
        except InterbiasError as exc:
            entry.update({"error": str(exc), "runnable": False, _KEY: "invalid"})
            out.append(entry)
            continue
        entry.update({"title": exp.title, "use": exp.use, **_describe(exp)})
        variants = []
        for name in sorted((exp.raw.get("variants") or {}).keys()):
            try:
                variants.append({"name": name, **_describe(load_experiment(path, corpus=name))})
            except InterbiasError as exc:
                variants.append({"name": name, "error": str(exc), "runnable": False, _KEY: "invalid"})
        entry["variants"] = variants
        entry["runnable_with"] = [v["name"] for v in variants if v["runnable"]]
        out.append(entry)
    return out


def _mark(v: dict[str, Any]) -> str:
    return "✓" if v["runnable"] else f"✗{v.get(_KEY, 'invalid')}"


def _runs_here(e: dict[str, Any]) -> str:
    """``ravdess ✗data · synthetic(11) ✓``: the default corpus, then each variant with its cells."""
    parts = [f"{e['corpus']} {_mark(e)}"]
    for v in e["variants"]:
        cells = f"({v['n_cells']})" if "n_cells" in v else ""
        parts.append(f"{v['name']}{cells} {_mark(v)}")
    return " · ".join(parts)


def catalogue_table(entries: list[dict[str, Any]]) -> list[str]:
    """One line per experiment (id, title, use, cells, where it runs), then a legend of the
    reason keys that occur and where to go next."""
    from interbias.availability import REASONS

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
    keys = {x.get(_KEY) for e in entries for x in [e, *e.get("variants", [])] if not x["runnable"]}
    lines.append("")
    lines.append("✓ runs here now; ✗ does not, because:")
    lines.extend(f"  ✗{k:<9}{REASONS[k]}" for k in REASONS if k in keys)
    runs = sorted((e for e in entries if e.get("runnable_with") or e["runnable"]), key=lambda e: e["name"] != "E16")
    if runs:
        e = runs[0]
        cmd = f"interbias run {e['name']}" + ("" if e["runnable"] else f" --corpus {e['runnable_with'][0]}")
        lines.append(f"Try `{cmd}`; `interbias list -v` shows levels, reasons and the data each needs.")
    return lines


def _without_keys(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries as ``--json`` has always printed them (no table-only reason keys)."""
    out = []
    for e in entries:
        e = {k: v for k, v in e.items() if k != _KEY}
        if "variants" in e:
            e["variants"] = [{k: v for k, v in x.items() if k != _KEY} for x in e["variants"]]
        out.append(e)
    return out


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
        typer.echo(json.dumps(_without_keys(entries), indent=2))
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
