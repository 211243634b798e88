"""How the report, the findings and the terminal write p-values and encoder sources."""

from __future__ import annotations


def test_a_p_value_never_rounds_onto_the_level() -> None:
    from interbias.analysis.reporting.headline import pval
    from interbias.analysis.reporting.numbers import format_value

    assert pval(0.0496) == "0.0496" and format_value(0.0496, "p_adjusted") == "0.0496"
    assert pval(0.0504) == "0.0504" and pval(0.05) == "0.050" and pval(0.123) == "0.123"
    assert pval(0.00999) == "0.00999" and pval(0.0004) == "< 0.001"


def test_provenance_shows_package_paths_from_the_package_on() -> None:
    from interbias.analysis.reporting.report import short_source

    assert short_source("/x/.venv/lib/python3.11/site-packages/speechbrain/x.yaml") == "speechbrain/x.yaml"
    assert short_source("hf:org/model") == "hf:org/model" and short_source(None) is None
