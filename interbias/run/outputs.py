"""The one rule for a file a command writes where the user said (``--out FILE``, ``OUT``): it
never replaces what the command did not write itself unless told to (``--force``).

Refused, always: the output is one of the command's inputs (the same path, or a link to it).
Refused without ``--force``: an existing file inside a run directory (a folder holding
``run.json``, up to :data:`RUN_DEPTH` levels up: results.csv, run.json, trials.parquet, a
cell's scores…) — a run's own files are written by ``run`` only; and any other existing file
that does not begin as this command's files do (a hand-written manifest, someone's
recording), since nothing tells it from the user's own work. An earlier output of the same
command (same first line) is replaced, so rerunning a command works as before.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from interbias.run import rundir
from interbias.utils.errors import ConfigError

if TYPE_CHECKING:
    import pandas as pd

#: How many folders above an output are searched for ``run.json`` (scores/<model>/<cell> is 2 deep).
RUN_DEPTH = 3


def run_dir_of(path: Path) -> Path | None:
    """The run directory that holds ``path`` (a folder with ``run.json`` at most
    :data:`RUN_DEPTH` levels up), or ``None``."""
    folder = Path(path).absolute().parent
    for _ in range(RUN_DEPTH):
        if (folder / rundir.RUN_JSON).is_file():
            return folder
        if folder.parent == folder:
            return None
        folder = folder.parent
    return None


def _starts_with(path: Path, prefix: str) -> bool:
    want = prefix.encode("utf-8")
    try:
        with open(path, "rb") as fh:
            return fh.read(len(want)) == want
    except OSError:
        return False


def check_output(
    path: Path,
    *,
    force: bool = False,
    option: str = "--out",
    inputs: Iterable[Path] = (),
    header: str | None = None,
) -> None:
    """Refuse (:class:`ConfigError`, one line naming ``option``) to write ``path`` when it is
    one of ``inputs``, a folder, or — unless ``force`` — an existing file inside a run
    directory or an existing file that does not begin with ``header`` (how every file of this
    command begins, e.g. :func:`csv_header`; ``None``: no file of this command can be told
    apart, so any existing file is refused)."""
    path = Path(path)
    for src in inputs:
        src = Path(src)
        same = src.absolute() == path.absolute() or (path.exists() and src.exists() and path.samefile(src))
        if same:
            raise ConfigError(f"{option} {path}: the output is an input of this command; writing it would destroy it")
    if path.is_dir():
        raise ConfigError(f"{option} {path}: is a folder; give a file name")
    if not path.exists() or force:
        return
    run = run_dir_of(path)
    if run is not None:
        raise ConfigError(
            f"{option} {path}: is a file of the run {run}; writing it would replace the run's own "
            "data (choose another file, or --force)"
        )
    if header is not None and _starts_with(path, header):
        return
    why = "this command did not write it" if header is not None else "nothing tells it from your own files"
    raise ConfigError(
        f"{option} {path}: the file exists and {why}; writing it would replace it (choose another file, or --force)"
    )


#: The files ``run`` writes into a run directory (:mod:`interbias.run.rundir`'s layout).
RUN_FILES = frozenset(rundir.RUN_FILES)


def check_output_folder(
    folder: Path | None, names: Iterable[str], *, force: bool = False, option: str = "--out"
) -> None:
    """Refuse (:class:`ConfigError`) to write files ``names`` into ``folder`` when it is a run
    directory that already holds one of them as a file of its own layout (:data:`RUN_FILES`,
    e.g. fairness.csv), unless ``force``: ``run`` wrote it, and a command's other settings
    (another threshold) would replace it without a word. ``None`` (no folder asked for) passes."""
    if folder is None:
        return
    folder = Path(folder)
    if force or not (folder / rundir.RUN_JSON).is_file():
        return
    for name in names:
        if name in RUN_FILES and (folder / name).exists():
            raise ConfigError(
                f"{option} {folder}: is a run directory and holds its own {name}; writing it would "
                "replace the run's data (choose another folder, or --force)"
            )


def csv_header(frame: pd.DataFrame) -> str:
    """The first line (with its line end) :func:`interbias.utils.atomic.write_csv` writes for
    ``frame``."""
    return frame.head(0).to_csv(index=False, lineterminator="\n")


def json_header(doc: str) -> str:
    """The first two lines of an indented JSON document: ``{`` and its first key."""
    return "".join(doc.splitlines(keepends=True)[:2])
