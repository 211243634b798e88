"""Whether a fusion helped: the fused model against each component, macro and per cell, from
the fused copy's results rows (the eval trials' metric, lower is better), and which of a run's
files the fused copy takes (the run's own files, never an analysis or report of the source
run, which would not know the fused model)."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from interbias.run import rundir
from interbias.run.backend_set import BACKENDS_DIR

#: The files and folders a run writes (``interbias.run.rundir``) and its fitted back-ends: what
#: the fused copy takes.
RUN_FILES = (*rundir.RUN_FILES, *rundir.RUN_FOLDERS, BACKENDS_DIR)
#: The comparison's file in the fused copy.
COMPARISON = "fusion_comparison.csv"


def copy_run_files(src: Path, dest: Path) -> list[str]:
    """Copy the run's own files (:data:`RUN_FILES`) from ``src`` into the new folder ``dest``;
    returns the names left behind (analysis and report outputs of the source run)."""
    dest.mkdir(parents=True)
    for name in RUN_FILES:
        path = src / name
        if path.is_dir():
            shutil.copytree(path, dest / name)
        elif path.is_file():
            shutil.copy2(path, dest / name)
    return sorted(p.name for p in src.iterdir() if p.name not in RUN_FILES)


def comparison(results: pd.DataFrame, label: str, models: Sequence[str], metric: str = "eer") -> pd.DataFrame:
    """Per component and cell: the component's and the fused model's ``metric`` and the change
    (fused − component, negative = fusion better), on the cells both hold."""
    fused = results[results["model"] == label].set_index("cell")[metric].astype(float)
    rows = []
    for m in models:
        own = results[results["model"] == m].set_index("cell")[metric].astype(float)
        for cell in [c for c in fused.index if c in own.index]:
            rows.append(
                {
                    "component": m,
                    "cell": cell,
                    metric: own[cell],
                    f"fused_{metric}": fused[cell],
                    "change": fused[cell] - own[cell],
                }
            )
    return pd.DataFrame(rows, columns=["component", "cell", metric, f"fused_{metric}", "change"])


def verdicts(frame: pd.DataFrame, label: str, metric: str = "eer") -> list[str]:
    """One line per component: macro (mean over cells) of each, the change, and in how many
    cells the fusion is lower — "fusion helped" when the macro is lower, else "did not"."""
    lines = []
    for m, part in frame.groupby("component", sort=False):
        own, fused = part[metric].mean(), part[f"fused_{metric}"].mean()
        better = int((part["change"] < 0).sum())
        word = "fusion helped" if fused < own else "fusion did not help"
        lines.append(
            f"{label} vs {m}: macro {metric.upper()} {fused:.3f} vs {own:.3f} ({fused - own:+.3f}): {word}; "
            f"lower in {better} of {len(part)} cells"
        )
    return lines


def no_dev_advice(path: Path, experiment: str, command: Sequence[str] | None) -> str:
    """Why a run without a dev split cannot be fused, and the commands that give one: the
    experiment's trials with ``dev_share`` (no ``run`` option sets it), then the run's own
    command (run.json) again, then fuse on the new run."""
    import shlex

    again = shlex.join(command) if command else f"interbias run {experiment}"
    return (
        f"{path} has no dev split to fit a fusion on (fuse fits its weights on dev trials, never on the "
        f"eval trials it reports): add `dev_share: 0.3` under `trials:` in {experiment}'s experiment file, "
        f"run it again with `{again}`, then fuse the new run"
    )
