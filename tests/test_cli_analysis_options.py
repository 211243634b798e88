"""The analysis options bundle (``cli.analysis_options``, ``analysis.options``): ``analyze`` and
``report`` take the same options with the defaults of the analysis' own record, ``--json`` and
``--quiet`` are spelt once, and ``report`` owes nothing to the ``analyze`` command's module."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest
import typer

from interbias.analysis.options import Options
from interbias.cli import app
from interbias.cli.analysis_options import BUNDLE, DEFAULT_CHOICE, AnalysisChoice, with_analysis_options
from interbias.utils.errors import ConfigError

CLI = Path(__file__).resolve().parents[1] / "interbias" / "cli"


def _params(command: str) -> dict[str, object]:
    group = typer.main.get_command(app)
    return {p.name: p for p in group.commands[command].params}  # type: ignore[attr-defined]


@pytest.mark.parametrize("command", ["analyze", "report"])
def test_each_bundle_option_defaults_to_the_field_it_sets(command: str) -> None:
    params = _params(command)
    defaults = {f.name: f.default for f in dataclasses.fields(Options)}
    for name, field, _, _ in BUNDLE:
        assert name in params, (command, name)
        if field is not None:
            assert params[name].default == defaults[field], (command, name)  # type: ignore[attr-defined]
    assert params["bootstrap"].default is None and params["no_time_limit"].default is False  # type: ignore[attr-defined]
    assert "analysis" not in params


def test_analyze_and_report_declare_the_same_bundle_in_the_same_order() -> None:
    names = [n for n, *_ in BUNDLE]
    for command in ("analyze", "report"):
        got = [n for n in _params(command) if n in names]
        assert got == names, command


def test_the_choice_reaches_the_options_record(tmp_path: Path) -> None:
    params = {n: d for n, _, _, d in BUNDLE} | {"seed": 7, "adjust": "bh", "ci_level": 0.9, "bootstrap": 0}
    params |= {"bootstrap_design": "speaker", "no_time_limit": True, "permutations": 3}
    opts = AnalysisChoice.from_params(params).options(tmp_path)
    assert (opts.seed, opts.adjust, opts.level, opts.n_boot) == (7, "bh", 0.9, 0)
    assert (opts.design, opts.n_perm, opts.time_limit_s) == ("speaker", 3, None)
    assert DEFAULT_CHOICE.options(tmp_path) == Options()  # no scores in tmp_path: no replicates


def test_a_number_out_of_range_is_refused_naming_its_option() -> None:
    params = {n: d for n, _, _, d in BUNDLE} | {"ci_level": 1.5}
    with pytest.raises(ConfigError, match="--ci-level"):
        AnalysisChoice.from_params(params).check("report")


def test_a_command_without_the_placeholder_is_a_programming_error() -> None:
    def command(x: int = 0) -> None:
        return None

    with pytest.raises(TypeError, match="no parameter 'analysis'"):
        with_analysis_options(command)


def _imported(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}


def test_report_imports_nothing_from_the_analyze_command() -> None:
    users = [p.relative_to(CLI) for p in CLI.rglob("*.py") if "interbias.cli.analyze" in _imported(p)]
    assert users == []


def _option_names(path: Path) -> list[str]:
    """Every ``--json`` / ``--quiet`` string given to a ``typer.Option`` call in ``path``."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "Option":
            out += [a.value for a in node.args if isinstance(a, ast.Constant) and a.value in ("--json", "--quiet")]
    return out


def test_json_and_quiet_are_declared_once() -> None:
    found = {str(p.relative_to(CLI)): names for p in CLI.rglob("*.py") if (names := _option_names(p))}
    assert found == {"options.py": ["--json", "--quiet"]}


def test_the_scan_sees_an_inline_declaration(tmp_path: Path) -> None:
    f = tmp_path / "cmd.py"
    f.write_text('x = typer.Option("--json", help="h")\n', encoding="utf-8")
    assert _option_names(f) == ["--json"]
