"""The findings an analysis writes beside a run, and when ``report`` may reuse them.

``findings.csv`` holds the findings table; ``findings.json`` its stamp: the options that decide
the findings (:data:`FINDINGS_KEYS`) and the sha256 of results.csv. A saved table is reused
only when its stamp equals the stamp of the analysis at hand, so a report never shows findings
computed from other options or other results.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from interbias.analysis.reporting.headline import Headline
    from interbias.analysis.suite import Analysis

#: Options that decide the findings: a saved analysis is reused only when all of them match.
FINDINGS_KEYS = ("metric", "n_boot", "seed", "unit", "level", "group_factor", "adjust", "design", "simple")


def findings_stamp(a: Analysis) -> dict[str, object]:
    """What the findings were computed from: the deciding options and results.csv's sha256."""
    from interbias.run.rundir import RESULTS

    opts = asdict(a.options)
    path = a.run.file(RESULTS)
    sha = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""
    return {**{k: opts[k] for k in FINDINGS_KEYS}, "results_sha256": sha}


def with_label(findings: Any) -> Any:
    """``findings`` with ``label`` after ``effect``: the effect's one display name
    (:func:`~interbias.analysis.effect_names.effect_name`); ``effect`` keeps its long form."""
    from interbias.analysis.effect_names import effect_name

    out = findings.drop(columns="label", errors="ignore")
    names = [effect_name(r) for r in out.itertuples(index=False)]
    out.insert(list(out.columns).index("effect") + 1 if "effect" in out else 0, "label", names)
    return out


def write_findings(a: Analysis, folder: Path, found: Headline) -> list[Path]:
    """findings.csv and findings.json (its stamp) when there are intervals; the paths written."""
    from interbias.utils import atomic

    if found.findings is None:
        return []
    atomic.write_csv(folder / "findings.csv", with_label(found.findings))
    stamp = json.dumps(findings_stamp(a), indent=1, sort_keys=True) + "\n"
    atomic.write_text(folder / "findings.json", stamp)
    return [folder / "findings.csv", folder / "findings.json"]


def saved_findings(a: Analysis, folder: Path) -> Headline | None:
    """The findings an earlier analysis wrote into ``folder`` when its stamp matches ``a``
    (same options and results.csv), as a Headline; else None."""
    import pandas as pd

    from interbias.analysis.reporting.headline import Headline, family_line

    csv, stamp = folder / "findings.csv", folder / "findings.json"
    if a.replicates is None or not (csv.is_file() and stamp.is_file()):
        return None
    if json.loads(stamp.read_text()) != json.loads(json.dumps(findings_stamp(a))):
        return None
    frame = pd.read_csv(csv, keep_default_na=True)
    for col in ("effect", "group", "condition", "reference"):
        if col in frame:
            frame[col] = frame[col].fillna("").astype(str)
    alpha = round(1 - a.replicates.level, 12)
    return Headline(frame, [family_line(frame, a.options.metric, a.replicates.pct, a.options.adjust, alpha)])
