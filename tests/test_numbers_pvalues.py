"""p-values as the report, the findings and the terminal write them."""

from __future__ import annotations


def test_a_p_value_never_rounds_onto_the_level() -> None:
    from interbias.analysis.headline import pval
    from interbias.analysis.numbers import format_value

    assert pval(0.0496) == "0.0496" and format_value(0.0496, "p_adjusted") == "0.0496"
    assert pval(0.0504) == "0.0504" and pval(0.05) == "0.050" and pval(0.123) == "0.123"
    assert pval(0.00999) == "0.00999" and pval(0.0004) == "< 0.001"
