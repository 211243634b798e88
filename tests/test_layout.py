"""Tests are findable from the code: every module of ``interbias/`` has a test file named after
it (``test_<package>_<module>.py``) or a row in tests/README.md's table saying which test files
cover it; the table names only modules and files that exist; every test file is named after a
module or listed in the table; docs/architecture.md's code map names every module in its
package's row (read from the source, the README and the page, nothing imported)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from test_layers import PACKAGE, all_modules, module_file

TESTS = Path(__file__).resolve().parent
README = TESTS / "README.md"
#: A table row: | `test_x.py` | what it covers, modules in backticks |
ROW = re.compile(r"^\| `(test_\w+\.py)` \| (.*) \|$")


def table() -> dict[str, set[str]]:
    """test file -> the interbias modules its row names (``run.rundir`` -> ``interbias.run.rundir``)."""
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    rows: dict[str, set[str]] = {}
    for line in README.read_text(encoding="utf-8").splitlines():
        if m := ROW.match(line):
            names = re.findall(r"`([a-z_0-9.]+)`", m.group(2))
            rows[m.group(1)] = {f"interbias.{n}" for n in names if n.split(".")[0] in packages}
    return rows


def named_file(module: str) -> str:
    """The test file named after ``module``: interbias.run.conductor -> test_run_conductor.py."""
    return "test_" + "_".join(module.split(".")[1:]) + ".py"


def only_reexports(module: str) -> bool:
    """A package ``__init__`` with no function or class of its own."""
    path = module_file(module)
    assert path is not None
    body = ast.parse(path.read_text(encoding="utf-8")).body
    return path.name == "__init__.py" and not any(
        isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) for n in body
    )


def command_modules() -> set[str]:
    """The modules of the CLI's noun folders (``interbias.cli.runs.card``): each registers commands
    whose ``--help`` example tests/test_docs_examples.py runs (it reads every command's example
    from the app, so a new command is tested by its own example), and the code map names the
    folder, not each file: a new command is one file."""
    return {m for m in all_modules() if m.startswith("interbias.cli.") and m.count(".") >= 3}


def test_every_module_has_a_named_test_file_or_a_row() -> None:
    files = {p.name for p in TESTS.glob("test_*.py")}
    covered = set().union(*table().values()) | command_modules()
    lost = [
        m
        for m in all_modules()
        if m != "interbias" and named_file(m) not in files and m not in covered and not only_reexports(m)
    ]
    assert not lost, f"modules with no test file named after them and no row in tests/README.md: {lost}"


def test_the_table_names_only_what_exists() -> None:
    rows = table()
    assert len(rows) > 50, "the README table was not parsed"
    files = {p.name for p in TESTS.glob("test_*.py")}
    assert not set(rows) - files, f"rows for missing test files: {sorted(set(rows) - files)}"
    modules = set(all_modules())
    wrong = {f: sorted(mods - modules) for f, mods in rows.items() if mods - modules}
    assert not wrong, f"rows naming modules that do not exist: {wrong}"


def test_every_test_file_is_named_after_a_module_or_listed() -> None:
    named = {named_file(m) for m in all_modules() if m != "interbias"}
    rows = table()
    stray = sorted(p.name for p in TESTS.glob("test_*.py") if p.name not in named and p.name not in rows)
    assert not stray, f"test files named after no module and not in tests/README.md's table: {stray}"


def test_the_check_would_catch_a_module_without_tests() -> None:
    """The first check can fail: a module name nobody tests is neither named nor listed."""
    files = {p.name for p in TESTS.glob("test_*.py")}
    ghost = "interbias.run.no_such_stage"
    assert named_file(ghost) not in files and ghost not in set().union(*table().values())
    assert named_file("interbias.analysis.geometry.pipeline") == "test_analysis_geometry_pipeline.py"


def test_the_architecture_page_names_every_module_in_its_package_row() -> None:
    """docs/architecture.md's code map has one row per package naming each of its modules."""
    page = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `(\w+)/` \| (.*) \|$", page, flags=re.M))
    packages = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file())
    assert sorted(rows) == packages
    missing = {
        pkg: names
        for pkg in packages
        if (
            names := sorted(
                p.name
                for p in (PACKAGE / pkg).rglob("*.py")
                if p.name != "__init__.py"
                and f"`{p.name}`" not in rows[pkg]
                and ".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts) not in command_modules()
            )
        )
    }
    assert not missing, f"modules not named in their package's row of docs/architecture.md: {missing}"
