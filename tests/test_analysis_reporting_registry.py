"""Report sections are registered where they are written (analysis.reporting.registry): the
report writes every registered section in the order of their places, a place is taken once,
and a new section is one decorated function."""

from __future__ import annotations

import pytest

from interbias.analysis.reporting.registry import REPORT_SECTIONS, report_section, sections


def test_the_registered_sections_are_in_their_places() -> None:
    names = [s.name for s in sections()]
    assert names == [
        "robustness",
        "draws",
        "operations",
        "contrasts",
        "gaps",
        "paper",
        "additivity",
        "macro",
        "cells",
        "calibration",
        "qmf",
        "deployment",
        "attacks",
        "sasv",
    ]
    places = [s.place for s in sections()]
    assert places == sorted(places) and len(set(places)) == len(places)


def test_a_place_is_taken_once_and_a_name_registered_once() -> None:
    with pytest.raises(ValueError, match="report section 'other': place 10 is taken by 'robustness'"):
        report_section("other", 10)(lambda a, rep: None)
    with pytest.raises(ValueError, match="report section 'robustness' is registered twice"):
        report_section("robustness", 999)(lambda a, rep: None)


def test_a_new_section_is_written_in_its_place(monkeypatch: pytest.MonkeyPatch) -> None:
    written: list[str] = []
    entries = dict(REPORT_SECTIONS._entries)  # restored below: the registry is process-wide
    try:
        report_section("toy", 45)(lambda a, rep: written.append("toy"))
        order = [s.name for s in sections()]
        assert order[order.index("contrasts") + 1] == "toy"
        next(s for s in sections() if s.name == "toy").write(None, None)  # type: ignore[arg-type]
        assert written == ["toy"]
    finally:
        REPORT_SECTIONS._entries.clear()
        REPORT_SECTIONS._entries.update(entries)
