"""Whether an experiment runs here now, and the one load-and-check of ``interbias run``.

:func:`availability` answers for one loaded experiment (a short reason key for tables, one
clause for errors, the full message for ``interbias list -v``) on its default corpus or a
variant. The preflight of ``interbias run`` (:func:`interbias.run.tasks.experiment_for_run`)
reads the experiment file once and refuses what cannot run here (:func:`check_can_run`: the
error says what is missing, names the data the corpus needs in a second sentence, and ends with
the command that runs here when a variant does); a verification experiment's own checks
(:func:`verification_for_run`) refuse a grid too large to run (:func:`check_grid_size`).

The grid's size is counted before any work. A run scores every cell (one level per factor: the
product of the factors' level counts) with every encoder; each cell × encoder is one results
row, one scores file and one completion record, and its trials, chains and embeddings are
planned up front. :data:`DEFAULT_MAX_ROWS` (10,000 rows) is 125 times the largest experiment in
the catalogue (E14: 80 cells) and keeps the run directory to some 20,000 files; a grid of
~200,000 cells was seen to spend minutes and over a gigabyte before its first line of progress.
A larger grid is almost always a factor given levels it should not have (a continuous
attribute, one level per speaker); a deliberate one raises the limit with ``INTERBIAS_MAX_CELLS``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from interbias.utils.errors import DOCS_PAGES, ConfigError, DataMissingError, InterbiasError, RunError

if TYPE_CHECKING:
    from interbias.experiments.schema import Cell, Experiment
    from interbias.run.inputs import RunOptions

#: Cells × encoders a run accepts unless ``INTERBIAS_MAX_CELLS`` says otherwise.
DEFAULT_MAX_ROWS = 10_000
ENV = "INTERBIAS_MAX_CELLS"

#: What each reason key means (the legend of ``interbias list``).
REASONS = {
    "data": "the corpus is not here (--corpus-root DIR or INTERBIAS_CORPORA)",
    "attr": "the corpus has no label the experiment selects by",
    "file": "a labels file the experiment needs is missing under the corpus root",
    "manifest": "the experiment's manifest file does not exist",
    "adapter": "no adapter for the corpus",
    "ops": "an operator's resources are missing (noise recordings, a codec backend, room simulation)",
    "models": "a countermeasure's checkpoint is not here (interbias cm train; docs/countermeasures.md)",
    "invalid": "the experiment file is invalid",
}


@dataclass(frozen=True)
class Availability:
    """``runnable``, else why not: ``key`` (one of :data:`REASONS`), ``reason`` (one clause)
    and ``detail`` (the full message, ending with what data the experiment needs)."""

    runnable: bool
    key: str = ""
    reason: str = ""
    detail: str = ""


def availability(exp: Experiment, *, root: Path | None = None, models: bool = True) -> Availability:
    """Whether the loaded experiment ``exp`` runs here: its data, then its operators' resources,
    then (``models``) the checkpoints of the CMs it names."""
    from interbias.corpora import check_runnable
    from interbias.experiments.schema import resource_problems

    try:
        check_runnable(exp, root=root)
    except DataMissingError as exc:
        data: Availability | None = Availability(False, exc.key, exc.reason, str(exc))
    else:
        data = None
    problems = resource_problems(exp)
    if not problems:
        return data or (models_availability(exp) if models else Availability(True))
    ops = "; ".join(problems)
    if data is not None:
        return Availability(False, data.key, data.reason, f"{exp.name}: operators need: {ops}; {data.detail}")
    return Availability(False, "ops", ops, f"{exp.name}: operators need: {ops}")


def models_availability(exp: Experiment) -> Availability:
    """Runnable, else why not: the first CM checkpoint the run would load that is not here (the
    file is looked up, never loaded; experiments without CMs import nothing)."""
    if not exp.cm_labels:
        return Availability(True)
    from interbias.cm.models import missing_checkpoints

    missing = missing_checkpoints(exp.cm_labels)
    if not missing:
        return Availability(True)
    return Availability(False, "models", missing[0], f"{exp.name}: {'; '.join(missing)}")


def runnable_variants(path: Path, *, skip: str | None = None) -> list[str]:
    """The ``variants:`` of the experiment file ``path`` that run here now (``skip`` excluded)."""
    from interbias.experiments.schema import load_experiment

    out = []
    for name in sorted((load_experiment(path).raw.get("variants") or {}).keys()):
        if name == skip:
            continue
        try:
            if availability(load_experiment(path, corpus=name)).runnable:
                out.append(name)
        except InterbiasError:
            continue
    return out


def unavailable_message(exp: Experiment, why: Availability, *, argument: str, variants: list[str]) -> str:
    """``E14 cannot run here: <reason>. It needs: <data>. See docs/guide/corpora.md. Runs here:
    interbias run E14 --corpus synthetic`` (the operators page when an operator's resources are missing)."""
    needs = " ".join(exp.requires.split()).rstrip(".")
    page = DOCS_PAGES[{"ops": "operators", "models": "countermeasures"}.get(why.key, "corpora")]
    # an operator's own message may name the page already: said once, at the end
    sentences = [f"{exp.name} cannot run here: {why.reason.replace(f'; see {page}', '')}"]
    if needs:
        sentences.append(f"It needs: {needs}")
    sentences.append("See " + page)
    if variants:
        sentences.append("Runs here: " + " or ".join(f"interbias run {argument} --corpus {v}" for v in variants))
    return ". ".join(sentences)


def check_can_run(exp: Experiment, argument: str, path: Path, root: Path | None = None, *, models: bool = True) -> None:
    """Raise :class:`DataMissingError` when the loaded experiment ``exp`` (``argument``: ``E14``
    or a YAML path, read from ``path``) cannot run here; the message ends with a command that does
    (``models`` False: the CMs are chosen on the command line, so their checkpoints are not judged here)."""
    why = availability(exp, root=root, models=models)
    if why.runnable:
        return
    variants = runnable_variants(path, skip=exp.variant)
    raise DataMissingError(
        unavailable_message(exp, why, argument=argument, variants=variants), key=why.key, reason=why.reason
    )


def user_data(options: RunOptions) -> bool:
    """Whether the command line brings its own data (``--manifest``, ``--data-root``, ``--trials``)."""
    return bool(options.manifest or options.data_root or options.trials or options.trials_format)


def loaded_for_run(options: RunOptions) -> tuple[Path, Experiment]:
    """The file ``options`` names and its experiment as ``run`` reads it (``--dev-share``,
    ``--trim-silence`` and, without a manifest, ``--noise-dir`` applied)."""
    from interbias.experiments.requirements import with_noise_dir
    from interbias.experiments.schema import find_experiment, load_experiment, with_dev_share, with_trim_silence
    from interbias.utils.paths import conditions_dir

    path = find_experiment(options.experiment, conditions_dir())
    exp = load_experiment(path, corpus=options.corpus)
    if options.dev_share is not None:  # run --dev-share: a dev split of the sampled trials
        if options.trials is not None:
            raise ConfigError("--dev-share splits sampled trials; a --trials list is scored whole (no dev split)")
        exp = with_dev_share(exp, options.dev_share)
    if options.noise_dir is not None and options.manifest is None:  # on a manifest: manifest_form applies it
        exp = with_noise_dir(exp, options.noise_dir)
    return path, with_trim_silence(exp) if options.trim_silence else exp


def verification_experiment(options: RunOptions) -> Experiment:
    """The speaker-verification experiment ``options`` names, loaded and checked as
    :func:`interbias.run.tasks.experiment_for_run` checks it (the conductor called directly)."""
    path, exp = loaded_for_run(options)
    if not user_data(options):
        check_can_run(exp, options.experiment, path, options.corpus_root, models=options.countermeasures is None)
    return verification_for_run(exp, options)


def verification_for_run(exp: Experiment, options: RunOptions) -> Experiment:
    """The verification task's check before any work (:meth:`interbias.run.tasks.base.Task.check`):
    the user's ``--cm``, ``--manifest``/``--trials`` applied (on a ``--manifest`` the experiment runs
    in its :func:`~interbias.experiments.requirements.manifest_form`: levels whose recordings are not
    given left out, recorded in ``left_out``; ``--noise-dir`` supplies recorded noise), its grid
    within :func:`max_rows`, its white-box attacks possible, the user's data and operators'
    resources here, the failure share valid."""
    from interbias.corpora import check_runnable
    from interbias.experiments.requirements import manifest_form
    from interbias.experiments.schema import resource_problems, with_backend, with_countermeasures, with_data

    own = user_data(options)
    if options.backend is not None:  # run --backend: the scoring back-end fitted on the dev split
        exp = with_backend(exp, options.backend)
    if options.countermeasures is not None:
        exp = with_countermeasures(exp, options.countermeasures)
    if options.manifest is not None:  # the user's corpus: levels without their recordings left out, visibly
        exp = manifest_form(exp, noise_dir=options.noise_dir)
    if own:
        exp = with_data(
            exp,
            manifest=options.manifest,
            data_root=options.data_root,
            trials=options.trials,
            trials_format=options.trials_format,
        )
    check_experiment(exp, options.encoders)
    if own:  # the user's data and the operators' resources (availability checked them otherwise)
        check_runnable(exp, root=options.corpus_root)
        if problems := resource_problems(exp):
            raise RunError(f"{exp.name} cannot run here: " + "; ".join(problems))
    if not 0 <= options.max_failure_share < 1:
        raise RunError("--max-failure-share must be in [0, 1)")
    return exp


def check_experiment(exp: Experiment, labels: Sequence[str]) -> None:
    """What ``run`` refuses of a verification experiment from its file and the encoder labels
    alone, before loading anything: a grid over :func:`max_rows`, a white-box attack on an
    encoder without a differentiable path (``validate`` runs the same checks)."""
    from interbias.experiments.attack_spec import check_attack_labels
    from interbias.run.cm_stage import check_spoofing_cms

    check_grid_size(exp, len(labels))
    check_attack_labels(exp, labels)
    check_spoofing_cms(exp)


# ---- the grid's size ---------------------------------------------------------------------------


def n_cells(exp: Experiment) -> int:
    """Cells of ``exp``'s grid: the product of its factors' level counts (no cell is built)."""
    return math.prod(len(f.levels) for f in exp.factors)


def max_rows() -> int:
    """The limit on cells × encoders: ``$INTERBIAS_MAX_CELLS`` (a positive integer) or the default."""
    raw = os.environ.get(ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_ROWS
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        raise ConfigError(f"{ENV}={raw!r}: expected a positive whole number of cells × encoders")
    return value


def check_grid_size(exp: Experiment, n_encoders: int) -> int:
    """The number of results rows (cells × encoders) ``exp`` would write; a :class:`ConfigError`
    with the count and how to raise the limit when it exceeds :func:`max_rows`."""
    cells = n_cells(exp)
    rows = cells * max(1, n_encoders)
    limit = max_rows()
    if rows > limit:
        sizes = " × ".join(f"{f.name} {len(f.levels)}" for f in exp.factors)
        raise ConfigError(
            f"{exp.name}: the grid has {cells:,} cells ({sizes}) × {n_encoders} encoder(s) = {rows:,} results rows, "
            f"over the limit of {limit:,}; check the factors' levels, or raise the limit with {ENV}={rows}"
        )
    return rows


def repeated_levels(exp: Experiment) -> list[str]:
    """One line per set of cells of a stratum that measure the same thing (the same enrolment and
    test chains, draws, protocol settings and back-end) under different levels, naming the
    levels: e.g. two acoustic levels with the same chain, or two identical protocol levels."""
    groups: dict[tuple[object, ...], list[Cell]] = {}
    for cell in exp.cells():
        key = (cell.stratum, cell.enrol_chain.fingerprint, cell.test_chain.fingerprint, cell.n_draws)
        groups.setdefault((*key, cell.enrol_utterances, cell.vad, cell.backend), []).append(cell)
    out: dict[str, None] = {}
    for cells in groups.values():
        if len(cells) < 2:
            continue
        shared = set.intersection(*(set(c.levels) for c in cells))
        names = [",".join(f"{f}={lv}" for f, lv in c.levels if (f, lv) not in shared) for c in cells]
        sides = f"enrolment {cells[0].enrol_chain.label}, test {cells[0].test_chain.label}"
        out[
            f"levels {' and '.join(names)} give the same chains and settings ({sides}): their cells measure "
            "the same thing, each counted as a chain setting"
        ] = None
    return sorted(out)
