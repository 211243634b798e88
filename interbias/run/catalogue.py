"""The experiment catalogue (``conditions/*.yaml``): one entry per experiment and variant with
its corpus, factors, cells and whether it runs here now (``interbias list``, ``interbias validate``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from interbias.experiments.schema import Experiment

#: The short reason key of an entry that does not run here (shown in the table, not in --json).
REASON_KEY = "why_key"


def describe_experiment(exp: Experiment) -> dict[str, Any]:
    """Corpus, factors with levels, cells, and runnability of one loaded experiment."""
    from interbias.run.preflight import availability

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
        out[REASON_KEY] = why.key
    return out


def experiment_entries(conditions: Path | None = None) -> list[dict[str, Any]]:
    """One entry per ``conditions/*.yaml``: its default corpus and every ``variants:`` entry."""
    from interbias.experiments.schema import load_experiment
    from interbias.utils.errors import InterbiasError
    from interbias.utils.paths import conditions_dir

    out = []
    for path in sorted((conditions or conditions_dir()).glob("*.yaml")):
        entry: dict[str, Any] = {"name": path.stem, "file": str(path)}
        try:
            exp = load_experiment(path)
        except InterbiasError as exc:
            entry.update({"error": str(exc), "runnable": False, REASON_KEY: "invalid"})
            out.append(entry)
            continue
        entry.update({"title": exp.title, "use": exp.use, **describe_experiment(exp)})
        variants = []
        for name in sorted((exp.raw.get("variants") or {}).keys()):
            try:
                variants.append({"name": name, **describe_experiment(load_experiment(path, corpus=name))})
            except InterbiasError as exc:
                variants.append({"name": name, "error": str(exc), "runnable": False, REASON_KEY: "invalid"})
        entry["variants"] = variants
        entry["runnable_with"] = [v["name"] for v in variants if v["runnable"]]
        out.append(entry)
    return out


def without_reason_keys(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries as ``--json`` has always printed them (no table-only reason keys)."""
    out = []
    for e in entries:
        e = {k: v for k, v in e.items() if k != REASON_KEY}
        if "variants" in e:
            e["variants"] = [{k: v for k, v in x.items() if k != REASON_KEY} for x in e["variants"]]
        out.append(e)
    return out
