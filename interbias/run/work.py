"""The work of one invocation of a run: which cell × encoder pairs finished earlier and are
reused (never scored again), which are pending, and the (chain, utterance) items the pending
ones need embedded.

A completion record is reused only for the same encoder fingerprint, trial list, chains and
audio digest; a finished cell that dropped more trials than this invocation's
``max_failure_share`` stops the invocation before anything is written (finished results are
never scored again or lost)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from interbias.embedding.stage import ChainItems, chains_for_cells
from interbias.encoders import Encoder
from interbias.experiments.schema import Cell
from interbias.run.results import chain_fingerprint
from interbias.run.rundir import RunDir
from interbias.trials.sampler import TrialList
from interbias.utils.errors import RunError
from interbias.utils.progress import Reporter


@dataclass
class RunWork:
    """What is finished and what is left: rows of cells reused from earlier runs (with their
    failures), the pending cell × encoder pairs and the (chain, utterance) items they need."""

    cells: list[Cell]
    shas: dict[str, str]
    audio: dict[str, str]
    rows: dict[tuple[str, str], dict[str, Any]]
    failures: list[dict[str, str]]
    pending: list[tuple[Cell, Encoder]]
    reused: int = 0
    items: ChainItems = field(default_factory=dict)
    errored: list[str] = field(default_factory=list)
    #: The work ahead, in words (trials, cells, what is reused); shown with the embeddings to compute.
    ahead: str = ""
    #: rows of finished cells whose inputs changed (scored again): kept if the new score fails.
    previous: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)


def record_status(
    run: RunDir, cell: Cell, enc: Encoder, trials_sha256: str, audio_sha256: str
) -> tuple[str, dict[str, Any] | None]:
    """``("new", None)`` when ``cell`` × ``enc`` has no completion record; ``("finished", rec)``
    when its record is valid for this run (same encoder, trials, chains and audio, scores file
    present); ``("changed", rec)`` when a record exists for other inputs (possible only when the
    code changed under the same revision): it is scored again."""
    rec = run.cell_record(enc.label, cell.id)
    if rec is None:
        return "new", None
    try:
        chains = rec["row"]["chain_fingerprint"]
    except (KeyError, TypeError):
        return "changed", None
    ok = (
        rec.get("encoder_fingerprint") == enc.fingerprint
        and rec.get("trials_sha256") == trials_sha256
        and rec.get("audio_sha256") == audio_sha256
        and chains == chain_fingerprint(cell)
    )
    return ("finished", rec) if ok else ("changed", rec)


def check_failure_shares(
    run: RunDir, trials: TrialList, finished: list[tuple[Cell, Encoder, dict[str, Any]]], max_failure_share: float
) -> None:
    """A finished cell that dropped more trials than this invocation's --max-failure-share is
    never scored again (its audio has not changed, so it would drop the same trials): the
    invocation stops here, before it writes anything, naming each such cell and its share."""
    over = []
    for cell, enc, rec in finished:
        n_cell = len(trials.for_stratum(cell.stratum))
        n_dropped = int(rec["row"].get("n_dropped_trials", 0) or 0)
        if n_dropped / max(1, n_cell) > max_failure_share:
            over.append((cell, enc, n_dropped, n_cell))
    if not over:
        return
    worst = max(d / max(1, n) for _, _, d, n in over)
    listed = "; ".join(f"{c.id} / {e.label}: {d} of {n} trials dropped ({d / max(1, n):.1%})" for c, e, d, n in over)
    raise RunError(
        f"{len(over)} finished cell(s) in {run.path} exceed --max-failure-share "
        f"{max_failure_share:g}: {listed}; nothing was changed (rerun with --max-failure-share "
        f"{math.ceil(worst * 1e4) / 1e4:g} to use them as they are, or give another --out to score the run again)"
    )


def find_work(
    run: RunDir,
    cells: list[Cell],
    encoders: Sequence[Encoder],
    trials: TrialList,
    shas: dict[str, str],
    audio: dict[str, str],
    *,
    max_failure_share: float,
    run_id: str,
    reporter: Reporter,
    also_reuse: Callable[[RunWork], None] | None = None,
) -> RunWork:
    """Which cell × encoder pairs are finished (reused) and what the others need embedded
    (``audio``: the digest of each stratum's audio, which a reusable record must match).
    ``also_reuse`` edits the reuse decision before the counts and items are derived (the
    normalised rows: a raw cell whose normalised row is stale goes back to pending)."""
    work = RunWork(cells, shas, audio, {}, [], [])
    finished: list[tuple[Cell, Encoder, dict[str, Any]]] = []
    for enc in encoders:
        for cell in cells:
            status, rec = record_status(run, cell, enc, trials.sha256, audio[cell.stratum])
            if status != "finished" or rec is None:
                work.pending.append((cell, enc))
                if status == "changed" and rec is not None and isinstance(rec.get("row"), dict):
                    work.previous[(enc.label, cell.id)] = rec["row"]
                continue
            finished.append((cell, enc, rec))
            work.rows[(enc.label, cell.id)] = rec["row"]
            work.failures.extend({"model": enc.label, "cell": cell.id, **f} for f in rec.get("failures", []))
    check_failure_shares(run, trials, finished, max_failure_share)
    if work.previous:
        reporter.notice(
            f"note: {len(work.previous)} finished cell(s) were scored with other inputs (encoder, chains or code "
            "changed under the same revision) and are scored again; each keeps its row until its new score is "
            "written: " + ", ".join(f"{c} / {m}" for m, c in work.previous)
        )
    work.reused = len(work.rows)
    if also_reuse is not None:
        also_reuse(work)
    work.ahead = (  # the embedding stage adds what it has to compute, on the same line
        f"run {run_id}: {len(trials.frame)} trials, {len(cells)} cells × {len(encoders)} "
        f"encoder{'' if len(encoders) == 1 else 's'}: "
        f"{work.reused} of {len(cells) * len(encoders)} finished earlier (reused), {len(work.pending)} to score"
    )
    work.items = chains_for_cells([c for c, _ in work.pending], trials.for_stratum)
    return work
