"""Layering of the package, read from the source (nothing is imported): every module's imports,
at module level or inside a function, collapsed to the top-level packages of ``interbias``.

The packages form the layers of :data:`LAYERS` (docs/architecture.md draws the same order): a
package imports only packages of lower layers, so the package graph has no cycle and packages
of one layer are independent of each other. In particular the run layer — what ``interbias run``
executes to produce results.csv — never imports :mod:`interbias.analysis`, directly or through
another module, so that the results schema has one home (``interbias.run``) and the analysis
only reads what a run wrote."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "interbias"

#: The top-level packages, lowest layer first; a package may import only from earlier layers.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("utils",),  # errors, atomic writes, CSV/text files, paths, seeding, progress
    ("audio", "metrics"),  # the front end and DSP; metrics as pure functions of scores
    ("operators", "encoders"),  # degradations of audio; speaker encoders (audio -> embedding)
    ("experiments",),  # the experiment YAML: schema, sections, decision specs
    ("corpora",),  # corpora and manifests
    (
        "trials",
        "cm",
    ),  # trial sampling, external lists, speaker budget, cohort; countermeasure models, training, scoring
    ("embedding",),  # the embedding stage: cache, tasks, workers
    ("run",),  # interbias run: the task of each experiment kind, cells, scoring, calibration, results, run directory
    ("analysis",),  # everything computed from run directories
    ("repair",),  # the ORCA repair method
    (
        "audits",
    ),  # the audits that embed a corpus themselves: geometry, repair, black box (and where their vectors come from)
    ("cli",),  # the typer commands
)
LEVEL = {pkg: i for i, layer in enumerate(LAYERS) for pkg in layer}


def module_file(name: str) -> Path | None:
    rel = Path(*name.split("."))
    for cand in (PACKAGE.parent / rel.with_suffix(".py"), PACKAGE.parent / rel / "__init__.py"):
        if cand.is_file():
            return cand
    return None


def all_modules() -> list[str]:
    """Every module of the package, dotted (a package by its ``__init__``), sorted."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        out.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return out


@cache
def imported_modules(name: str) -> frozenset[str]:
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
    return frozenset(m for m in found if m.split(".")[0] == "interbias" and module_file(m))


def package_of(module: str) -> str | None:
    """The top-level package of ``module`` (None for ``interbias`` itself, which imports nothing)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def package_edges() -> dict[tuple[str, str], list[str]]:
    """(importer package, imported package) -> the module imports behind it ("a.b -> c.d")."""
    edges: dict[tuple[str, str], list[str]] = {}
    for mod in all_modules():
        src = package_of(mod)
        for dep in sorted(imported_modules(mod)):
            dst = package_of(dep)
            if src and dst and src != dst:
                edges.setdefault((src, dst), []).append(f"{mod} -> {dep}")
    return edges


def package_cycle(edges: set[tuple[str, str]]) -> list[str] | None:
    """One cycle of the package graph (depth first), or None."""
    graph: dict[str, list[str]] = {}
    for a, b in sorted(edges):
        graph.setdefault(a, []).append(b)
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for nxt in graph.get(node, []):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt, [*path, nxt])):
                return found
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start, [start])):
            return found
    return None


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


def test_every_package_has_a_layer() -> None:
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    flat = sorted(p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py")
    assert not flat, f"modules beside the packages: {flat}"
    assert packages == set(LEVEL), (
        f"not in LAYERS: {sorted(packages - set(LEVEL))}; gone: {sorted(set(LEVEL) - packages)}"
    )


def test_packages_import_only_lower_layers() -> None:
    wrong = {
        f"{a} (layer {LEVEL[a]}) imports {b} (layer {LEVEL[b]})": how[:3]
        for (a, b), how in package_edges().items()
        if LEVEL[b] >= LEVEL[a]
    }
    assert not wrong, wrong


def test_the_package_graph_has_no_cycle() -> None:
    cycle = package_cycle(set(package_edges()))
    assert cycle is None, " -> ".join(cycle)


def test_the_cycle_check_finds_a_cycle() -> None:
    """The check above can fail: a package importing back from a higher one closes a loop."""
    edges = set(package_edges())
    assert ("run", "embedding") in edges
    assert package_cycle(edges | {("embedding", "run")}) in (
        ["embedding", "run", "embedding"],
        ["run", "embedding", "run"],
    )


def test_the_layers_are_the_real_graph_not_a_looser_order() -> None:
    """Each layer above the first holds a package importing from the layer just below, so no
    layer could merge into the one under it (the order is the graph's, not a convenient guess)."""
    edges = set(package_edges())
    for i in range(1, len(LAYERS)):
        for pkg in LAYERS[i]:
            below = {b for a, b in edges if a == pkg}
            assert below, f"{pkg} imports nothing: it belongs in a lower layer"
            assert max(LEVEL[b] for b in below) == i - 1, f"{pkg} imports nothing of layer {i - 1}: {LAYERS[i - 1]}"


RUN_SIDE = [m for m in all_modules() if package_of(m) and LEVEL[package_of(m)] < LEVEL["analysis"]]


@pytest.mark.parametrize("module", RUN_SIDE)
def test_run_layer_never_imports_the_analysis(module: str) -> None:
    chain = import_path(module, "interbias.analysis")
    assert chain is None, " -> ".join(chain)


def test_the_walk_finds_an_import_of_the_analysis() -> None:
    """The check above can fail: the CLI's run command does import the analysis (after_run)."""
    chain = import_path("interbias.cli.run", "interbias.analysis")
    assert chain is not None and chain[-1].startswith("interbias.analysis")
