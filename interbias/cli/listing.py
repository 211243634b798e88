"""``interbias list``."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from interbias.cli import app, guarded


def experiment_entries() -> list[dict[str, Any]]:
    from interbias.corpora import CORPORA
    from interbias.errors import InterbiasError
    from interbias.experiments import load_experiment
    from interbias.paths import conditions_dir, corpora_dir

    out = []
    for path in sorted(conditions_dir().glob("*.yaml")):
        entry: dict[str, Any] = {"name": path.stem, "file": str(path)}
        try:
            exp = load_experiment(path)
        except InterbiasError as exc:
            entry.update({"error": str(exc), "runnable": False})
            out.append(entry)
            continue
        variants = sorted((exp.raw.get("variants") or {}).keys())
        entry.update(
            {
                "title": exp.title,
                "use": exp.use,
                "corpus": exp.corpus.name,
                "variants": variants,
                "factors": [
                    {"name": f.name, "type": f.type, "reference": f.reference, "levels": f.level_names}
                    for f in exp.factors
                ],
                "n_cells": len(exp.cells()),
            }
        )
        reason = ""
        if exp.corpus.manifest:
            runnable = True
        elif exp.corpus.name not in CORPORA:
            runnable, reason = False, f"no adapter for corpus {exp.corpus.name!r}"
        else:
            adapter = CORPORA.get(exp.corpus.name)
            root = exp.corpus.root or str(corpora_dir() / exp.corpus.name)
            from pathlib import Path

            runnable = (not adapter.needs_root) or Path(root).expanduser().is_dir()
            if not runnable:
                reason = f"needs {exp.corpus.name} at {root}" + (f" ({exp.requires})" if exp.requires else "")
        entry["runnable"] = runnable
        entry["runnable_with"] = [v for v in variants if v in CORPORA and not CORPORA.get(v).needs_root]
        if reason:
            entry["why_not"] = reason
        out.append(entry)
    return out


@app.command("list")
@guarded
def list_experiments(as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """The experiments in conditions/: corpus, factors, cells, and whether they run here now."""
    entries = experiment_entries()
    if as_json:
        typer.echo(json.dumps(entries, indent=2))
        return
    for e in entries:
        if "error" in e:
            typer.echo(f"{e['name']:5s} INVALID: {e['error']}")
            continue
        factors = " × ".join(f"{f['name']}({len(f['levels'])})" for f in e["factors"])
        here = (
            "yes"
            if e["runnable"]
            else ("with --corpus " + ",".join(e["runnable_with"]) if e["runnable_with"] else "no")
        )
        typer.echo(
            f"{e['name']:5s} {e['title'][:40]:40s} corpus={e['corpus']:12s} {factors:40s} "
            f"cells={e['n_cells']:<4d} runs here: {here}"
        )
