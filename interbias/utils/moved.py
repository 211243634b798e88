"""Pointers from module paths that moved in the last round to where their code is now.

Importing a path in :data:`MOVED` raises ``ModuleNotFoundError`` naming the new path, e.g.
``interbias.quality.snr moved to interbias.audio.wada_snr in interbias 0.1.0; import that``.
The old path stays an error; it is not an alias, so no code runs under two names. The finder
is consulted only after every other finder has failed to find a module, so it never shadows
a module that exists. The table is kept for one release, then removed.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

#: Old module path -> where its code is now (the round of 2026-12-04). A package that is gone
#: answers for its modules too (Python imports the package first), so its entry names them.
MOVED: dict[str, str] = {
    "interbias.quality": "interbias.audio (quality.snr is audio.wada_snr, quality.measures is audio.quality)",
    "interbias.run.fuse": "interbias.analysis.fusion.fuse",
    "interbias.repair.blackbox": "interbias.audits.blackbox",
    "interbias.repair.blackbox_voice": "interbias.audits.blackbox_voice",
    "interbias.repair.run": "interbias.audits.repair",
    "interbias.analysis.geometry.pipeline": "interbias.audits.geometry",
    "interbias.analysis.geometry.sweep": "interbias.audits.geometry_sweep",
    "interbias.cm.report": "interbias.analysis.security.cm_run",
    "interbias.cm.experiment": "interbias.run.tasks.countermeasure",
    "interbias.cm.tracks": "interbias.run.tasks.tracks",
    "interbias.run.validate_kinds": "interbias.run.tasks (countermeasure.cm_estimate, tracks.tracks_estimate, base)",
    # the round of 2026-12-06: analysis/ in rooms (reporting, security, across, stats)
    "interbias.analysis.answer": "interbias.analysis.reporting.answer",
    "interbias.analysis.attacks": "interbias.analysis.security.attacks",
    "interbias.analysis.bootstrap": "interbias.analysis.stats.bootstrap",
    "interbias.analysis.cm": "interbias.analysis.security.cm",
    "interbias.analysis.cm_eval": "interbias.analysis.security.cm_eval",
    "interbias.analysis.cm_fairness": "interbias.analysis.security.cm_fairness",
    "interbias.analysis.cm_run": "interbias.analysis.security.cm_run",
    "interbias.analysis.cm_track1": "interbias.analysis.security.cm_track1",
    "interbias.analysis.compare": "interbias.analysis.across.compare",
    "interbias.analysis.compare_paired": "interbias.analysis.across.compare_paired",
    "interbias.analysis.encoder_page": "interbias.analysis.across.encoder_page",
    "interbias.analysis.equivalence": "interbias.analysis.stats.equivalence",
    "interbias.analysis.headline": "interbias.analysis.reporting.headline",
    "interbias.analysis.intervals": "interbias.analysis.stats.intervals",
    "interbias.analysis.inventory": "interbias.analysis.across.inventory",
    "interbias.analysis.latex": "interbias.analysis.reporting.latex",
    "interbias.analysis.leaderboard": "interbias.analysis.across.leaderboard",
    "interbias.analysis.multiplicity": "interbias.analysis.stats.multiplicity",
    "interbias.analysis.numbers": "interbias.analysis.reporting.numbers",
    "interbias.analysis.paper_figures": "interbias.analysis.reporting.paper_figures",
    "interbias.analysis.paper_tables": "interbias.analysis.reporting.paper_tables",
    "interbias.analysis.permutation": "interbias.analysis.stats.permutation",
    "interbias.analysis.plots": "interbias.analysis.reporting.plots",
    "interbias.analysis.replicates": "interbias.analysis.stats.replicates",
    "interbias.analysis.report": "interbias.analysis.reporting.report",
    "interbias.analysis.report_document": "interbias.analysis.reporting.document",
    "interbias.analysis.report_sections": "interbias.analysis.reporting.sections",
    "interbias.analysis.runs": "interbias.analysis.across.runs",
    "interbias.analysis.sasv": "interbias.analysis.security.sasv",
    "interbias.analysis.sasv_run": "interbias.analysis.security.sasv_run",
    "interbias.analysis.spoofing": "interbias.analysis.security.spoofing",
    # the round of 2026-12-06: the CLI's folders are its nouns (cli/<noun>/)
    "interbias.cli.blackbox": "interbias.cli.audit.blackbox",
    "interbias.cli.card": "interbias.cli.runs.card",
    "interbias.cli.cm_eval": "interbias.cli.scores.cm_eval",
    "interbias.cli.compare": "interbias.cli.runs.compare",
    "interbias.cli.corpus": "interbias.cli.data.corpus",
    "interbias.cli.fairness": "interbias.cli.scores.fairness",
    "interbias.cli.geometry": "interbias.cli.audit.geometry",
    "interbias.cli.leaderboard": "interbias.cli.runs.leaderboard",
    "interbias.cli.metrics": "interbias.cli.scores.metrics",
    "interbias.cli.models": "interbias.cli.encoders.checkpoints",
    "interbias.cli.operators": "interbias.cli.data.operators",
    "interbias.cli.repair": "interbias.cli.audit.repair",
    "interbias.encoders.campplus_graph": "interbias.encoders.campplus.graph",
    "interbias.encoders.campplus_masked": "interbias.encoders.campplus.masked",
    # the round of 2026-12-06: group fairness and fusion in rooms of analysis/
    "interbias.analysis.fairness": "interbias.analysis.groups.fairness",
    "interbias.analysis.fairness_cluster": "interbias.analysis.groups.fairness_cluster",
    "interbias.analysis.fairness_stats": "interbias.analysis.groups.fairness_stats",
    "interbias.analysis.fuse": "interbias.analysis.fusion.fuse",
}


class MovedModuleFinder:
    """A meta-path finder that answers only for the paths of :data:`MOVED`, with the pointer."""

    def __init__(self, version: str) -> None:
        self.version = version

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        new = MOVED.get(fullname)
        if new is None:
            return None
        raise ModuleNotFoundError(f"{fullname} moved to {new} in interbias {self.version}; import that", name=fullname)


def install(version: str) -> None:
    """Append the finder to ``sys.meta_path`` (once), after the finders that find real modules."""
    if not any(isinstance(f, MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.append(MovedModuleFinder(version))  # type: ignore[arg-type]
