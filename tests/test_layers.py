"""Layering of the package, read from the source (nothing is imported): the run layer — what
``interbias run`` executes to produce results.csv — never imports :mod:`interbias.analysis`,
directly or through another module, so that the results schema has one home (the run layer)
and the analysis only reads what a run wrote."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "interbias"
#: The modules of the run layer: the runner and every stage it conducts.
RUN_LAYER = (
    "interbias.run.conductor",
    "interbias.run.cells",
    "interbias.embedding.stage",
    "interbias.embedding.executors",
    "interbias.embedding.tasks",
    "interbias.embedding.local",
    "interbias.embedding.ray",
    "interbias.embedding.jobs",
    "interbias.run.work",
    "interbias.run.scoring",
    "interbias.run.rundir",
    "interbias.run.results",
    "interbias.trials.sampler",
    "interbias.trials.external",
    "interbias.embedding.cache",
    "interbias.metrics.spoof",
)


def module_file(name: str) -> Path | None:
    rel = Path(*name.split("."))
    for cand in (PACKAGE.parent / rel.with_suffix(".py"), PACKAGE.parent / rel / "__init__.py"):
        if cand.is_file():
            return cand
    return None


def imported_modules(name: str) -> set[str]:
    """Every interbias module ``name`` imports, at module level or inside a function."""
    path = module_file(name)
    assert path is not None, name
    is_pkg = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_pkg else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join([*base, *([node.module] if node.module else [])])
            else:
                mod = node.module or ""
            found.add(mod)
            found.update(f"{mod}.{a.name}" for a in node.names if module_file(f"{mod}.{a.name}"))
    return {m for m in found if m.split(".")[0] == "interbias" and module_file(m)}


def import_path(start: str, forbidden: str) -> list[str] | None:
    """The first chain of imports from ``start`` to a module under ``forbidden`` (breadth first)."""
    seen, frontier = {start: [start]}, [start]
    while frontier:
        nxt = []
        for mod in frontier:
            for dep in sorted(imported_modules(mod)):
                if dep in seen:
                    continue
                seen[dep] = [*seen[mod], dep]
                if dep == forbidden or dep.startswith(forbidden + "."):
                    return seen[dep]
                nxt.append(dep)
        frontier = nxt
    return None


@pytest.mark.parametrize("module", RUN_LAYER)
def test_run_layer_never_imports_the_analysis(module: str) -> None:
    assert import_path(module, "interbias.analysis") is None, " -> ".join(import_path(module, "interbias.analysis"))


def test_the_walk_finds_an_import_of_the_analysis() -> None:
    """The check above can fail: the CLI's run command does import the analysis (after_run)."""
    chain = import_path("interbias.cli.run", "interbias.analysis")
    assert chain is not None and chain[-1].startswith("interbias.analysis")
