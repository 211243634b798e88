"""``interbias list``: the experiment catalogue and whether each entry runs here now."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from interbias.cli import app, guarded


def _describe(exp: Any) -> dict[str, Any]:
    """Corpus, factors with levels, cells, and runnability of one loaded experiment."""
    from interbias.corpora import check_runnable
    from interbias.errors import CorpusError
    from interbias.experiments import resource_problems

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
    try:
        check_runnable(exp)
        out["runnable"] = True
    except CorpusError as exc:
        out["runnable"] = False
        out["why_not"] = str(exc)
    problems = resource_problems(exp)
    if problems:
        reason = f"{exp.name}: operators need: " + "; ".join(problems)
        out["why_not"] = f"{reason}; {out['why_not']}" if "why_not" in out else reason
        out["runnable"] = False
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
            entry.update({"error": str(exc), "runnable": False})
            out.append(entry)
            continue
        entry.update({"title": exp.title, "use": exp.use, **_describe(exp)})
        variants = []
        for name in sorted((exp.raw.get("variants") or {}).keys()):
            try:
                variants.append({"name": name, **_describe(load_experiment(path, corpus=name))})
            except InterbiasError as exc:
                variants.append({"name": name, "error": str(exc), "runnable": False})
        entry["variants"] = variants
        entry["runnable_with"] = [v["name"] for v in variants if v["runnable"]]
        out.append(entry)
    return out


@app.command("list")
@guarded
def list_experiments(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (every field, every variant).")] = False,
) -> None:
    """The experiments in conditions/: corpus, factors and levels, cells, and whether they run here now
    (and if not, why and what data they need), for the default corpus and every variant."""
    entries = experiment_entries()
    if as_json:
        typer.echo(json.dumps(entries, indent=2))
        return
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
