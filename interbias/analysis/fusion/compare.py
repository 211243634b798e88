"""Whether a fusion helped, in words: per component, the macro EER change of
fusion_comparison.csv (:mod:`interbias.analysis.fusion.paired`) with its interval and the cells
where the fused EER is lower; and which of a run's files the fused copy takes (the run's own
files, never an analysis or report of the source run, which would not know the fused model)."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from interbias.analysis.effect_rule import RESOLVED, UNRESOLVED
from interbias.analysis.fusion.paired import MACRO
from interbias.run import rundir
from interbias.run.backend_set import BACKENDS_DIR

if TYPE_CHECKING:
    from interbias.analysis.reporting.document import Report

#: The files and folders a run writes (``interbias.run.rundir``) and its fitted back-ends: what
#: the fused copy takes.
RUN_FILES = (*rundir.RUN_FILES, *rundir.RUN_FOLDERS, BACKENDS_DIR)
#: The comparison's file in the fused copy.
COMPARISON = "fusion_comparison.csv"


def copy_run_files(src: Path, dest: Path) -> list[str]:
    """Copy the run's own files (:data:`RUN_FILES`) from ``src`` into the new folder ``dest``;
    returns the names left behind (analysis and report outputs of the source run; hidden files
    such as its lock are neither copied nor named)."""
    dest.mkdir(parents=True)
    for name in RUN_FILES:
        path = src / name
        if path.is_dir():
            shutil.copytree(path, dest / name)
        elif path.is_file():
            shutil.copy2(path, dest / name)
    return sorted(p.name for p in src.iterdir() if p.name not in RUN_FILES and not p.name.startswith("."))


def verdict(change: float, status: str) -> str:
    """ "fusion helped" when the change (fused − component) is negative and resolved; else in
    words why not (worse, resolved; lower but not resolved; not lower)."""
    if status == RESOLVED:
        return "fusion helped" if change < 0 else "fusion did not help: the fused model is worse"
    return "fusion did not clearly help: lower, not resolved" if change < 0 else "fusion did not help"


def _ci(r: Any) -> str:
    if status_has_interval(r.status):
        return f"95 % CI {r.lo:+.3f} to {r.hi:+.3f}, {r.status}"
    return str(r.status)


def status_has_interval(status: str) -> bool:
    return status in (RESOLVED, UNRESOLVED)


def verdicts(frame: pd.DataFrame, label: str) -> list[str]:
    """One line per component of a comparison (:func:`~interbias.analysis.fusion.paired.paired_comparison`):
    the macro EERs, the change with its interval and the verdict, then in how many cells the
    fused EER is lower and higher (resolved ones in brackets)."""
    lines = []
    for m, part in frame.groupby("component", sort=False):
        macro = part[part["cell"] == MACRO]
        cells = part[part["cell"] != MACRO]
        if macro.empty:
            continue
        r = next(macro.itertuples(index=False))
        done = cells["status"] == RESOLVED
        lower, higher = cells["change"] < 0, cells["change"] > 0
        lines.append(
            f"{label} vs {m}: macro EER {r.fused_eer:.3f} vs {r.eer:.3f}, change {r.change:+.3f} ({_ci(r)}): "
            f"{verdict(r.change, r.status)}; lower in {int(lower.sum())} of {len(cells)} cells "
            f"({int((lower & done).sum())} resolved), higher in {int(higher.sum())} ({int((higher & done).sum())} "
            "resolved)"
        )
    return lines


def read_comparison(folder: Path) -> pd.DataFrame | None:
    """fusion_comparison.csv of a fused copy, or None when the folder has none."""
    path = Path(folder) / COMPARISON
    if not path.is_file():
        return None
    return pd.read_csv(path, keep_default_na=False, na_values=[""])


def fusion_answer(folder: Path) -> tuple[str, list[str]] | None:
    """(the fused model's label, :func:`verdicts`) of a fused copy; None when it is not one."""
    frame = read_comparison(folder)
    if frame is None or frame.empty or "fused" not in frame.columns:
        return None
    label = str(frame["fused"].iloc[0])
    return label, verdicts(frame, label)


def dev_share_for(speakers: Sequence[int], min_speakers: int, preferred: float = 0.3) -> float | None:
    """The ``--dev-share`` (a multiple of 0.05, the nearest to ``preferred``) whose split
    (:func:`~interbias.experiments.requirements.dev_count`) keeps at least ``min_speakers`` on each
    side of every stratum of ``speakers``; None when no share does."""
    from interbias.experiments.requirements import dev_count

    def fits(share: float) -> bool:
        return all(min_speakers <= dev_count(n, share) <= n - min_speakers for n in speakers)

    shares = [k / 20 for k in range(1, 20) if fits(k / 20)]
    return min(shares, key=lambda s: (abs(s - preferred), s)) if shares else None


@dataclass(frozen=True)
class NoDev:
    """What a run without a dev split says of itself: its command (run.json), its strata's
    speakers (trials.json), the experiment's ``min_speakers`` and whether it scores a trial list."""

    experiment: str
    command: Sequence[str] | None
    speakers: Sequence[int]
    min_speakers: int
    trial_list: bool = False


def no_dev_advice(path: Path, run: NoDev) -> str:
    """Why a run without a dev split cannot be fused, and the command that gives one: the run's
    own command with ``--dev-share`` (:func:`dev_share_for` its strata), then fuse on the new run.
    A run of a trial list, or of strata too small to split, cannot have one: said instead."""
    import shlex

    why = (
        f"{path} has no dev split to fit a fusion on (fuse fits its weights on dev trials, never on the eval "
        "trials it reports)"
    )
    given = list(run.command or ["interbias", "run", run.experiment])
    if run.trial_list or any(a == "--trials" or a.startswith("--trials=") for a in given):
        return f"{why}; its trials come from a trial list, which is scored whole, so no run of it has one"
    share = dev_share_for(run.speakers, run.min_speakers) if run.speakers else 0.3
    if share is None:
        return (
            f"{why}; a dev split needs {run.min_speakers} speakers (trials.min_speakers) on each side of every "
            f"stratum, and its smallest stratum has {min(run.speakers)}: run it on a corpus with at least "
            f"{2 * run.min_speakers} speakers per stratum"
        )
    return f"{why}; run it again with a dev split: {shlex.join([*given, '--dev-share', f'{share:g}'])}, then fuse the new run"


def fusion_block(folder: Path, rep: Report) -> None:
    """The report's answer for a fused copy (nothing for another run): the fused model, per
    component the macro verdict (:func:`verdicts`), then the per-cell table."""
    frame = read_comparison(folder)
    found = fusion_answer(folder)
    if frame is None or found is None:
        return
    label, lines = found
    rep.para(
        f"What the fusion does: this run holds the fused model {label} (interbias fuse). Against each "
        "component: the EER change fused − component (negative: fusion better) on the same eval trials, "
        "macro (mean over cells) and per cell, with the 95 % corrected-SE t interval (speaker and "
        "non-target-pair replicates, one resample for both models) and its status after Holm over the "
        f"macro rows and, apart, over the cell rows ({COMPARISON}):"
    )
    rep.bullets(lines)
    rep.table(
        frame[frame["cell"] != MACRO],
        ["component", "cell", "eer", "fused_eer", "change", "lo", "hi", "p_holm", "status"],
        collapsed=f"{label} against each component, per cell",
    )
