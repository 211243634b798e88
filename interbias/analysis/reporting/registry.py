"""The report's sections after its first screen and "About this run": each is registered where
it is written, with its place in the report (:func:`report_section`), and
:func:`interbias.analysis.reporting.report.build_report` writes every registered section in
the order of their places. A section writes nothing when the run has nothing for it. Every
module of :mod:`interbias.analysis` is imported before the sections are read
(:func:`sections`), so a new section is one decorated function where its analysis lives."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from interbias.utils.errors import AnalysisError
from interbias.utils.registry import Registry

if TYPE_CHECKING:
    from interbias.analysis.reporting.document import Report
    from interbias.analysis.suite import Analysis

SectionWriter = Callable[["Analysis", "Report"], None]


@dataclass(frozen=True)
class ReportSection:
    """One section: its name, its place (sections are written in increasing place) and the
    function that writes it into the report."""

    name: str
    place: int
    write: SectionWriter


REPORT_SECTIONS: Registry[ReportSection] = Registry("report section", AnalysisError)


def report_section(name: str, place: int) -> Callable[[SectionWriter], SectionWriter]:
    """Register the decorated ``write(analysis, report)`` as the section ``name`` at ``place``
    (two sections at one place is a programming error)."""

    def decorator(write: SectionWriter) -> SectionWriter:
        taken = {s.place: s.name for s in REPORT_SECTIONS.registered()}
        if place in taken:
            raise ValueError(f"report section {name!r}: place {place} is taken by {taken[place]!r}")
        REPORT_SECTIONS.register(name)(ReportSection(name, place, write))
        return write

    return decorator


def sections() -> list[ReportSection]:
    """Every registered section in the order of their places, after importing every module of
    :mod:`interbias.analysis` (where sections register)."""
    import interbias.analysis as package

    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        importlib.import_module(info.name)
    return sorted(REPORT_SECTIONS.registered(), key=lambda s: s.place)
