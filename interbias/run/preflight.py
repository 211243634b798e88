"""Whether an experiment runs here now, on its default corpus and on each of its variants.

:func:`availability` answers for one loaded experiment (a short reason key for tables, one
clause for errors, the full message for ``interbias list -v``); :func:`check_can_run` is the
check ``interbias run`` makes first: its error says what is missing, names the data the corpus
needs in a second sentence, and ends with the command that runs here when a variant does.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from interbias.utils.errors import DOCS_PAGES, DataMissingError, InterbiasError

#: What each reason key means (the legend of ``interbias list``).
REASONS = {
    "data": "the corpus is not on this disk (pass --corpus-root DIR or set INTERBIAS_CORPORA)",
    "attr": "the corpus has no label the experiment selects by",
    "file": "a labels file the experiment needs is missing under the corpus root",
    "manifest": "the experiment's manifest file does not exist",
    "adapter": "no adapter for the corpus",
    "ops": "an operator's resources are missing (noise recordings, a codec backend, room simulation)",
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


def availability(exp: Any, *, root: Path | None = None) -> Availability:
    """Whether the loaded experiment ``exp`` runs here: its data, then its operators' resources."""
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
        return data or Availability(True)
    ops = "; ".join(problems)
    if data is not None:
        return Availability(False, data.key, data.reason, f"{exp.name}: operators need: {ops}; {data.detail}")
    return Availability(False, "ops", ops, f"{exp.name}: operators need: {ops}")


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


def unavailable_message(exp: Any, why: Availability, *, argument: str, variants: list[str]) -> str:
    """``E14 cannot run here: <reason>. It needs: <data>. See docs/guide/corpora.md. Runs here:
    interbias run E14 --corpus synthetic`` (the operators page when an operator's resources are missing)."""
    needs = " ".join(exp.requires.split()).rstrip(".")
    page = DOCS_PAGES["operators" if why.key == "ops" else "corpora"]
    # an operator's own message may name the page already: said once, at the end
    sentences = [f"{exp.name} cannot run here: {why.reason.replace(f'; see {page}', '')}"]
    if needs:
        sentences.append(f"It needs: {needs}")
    sentences.append("See " + page)
    if variants:
        sentences.append("Runs here: " + " or ".join(f"interbias run {argument} --corpus {v}" for v in variants))
    return ". ".join(sentences)


def check_can_run(argument: str, corpus: str | None = None, root: Path | None = None) -> None:
    """Raise :class:`DataMissingError` when experiment ``argument`` (``E14`` or a YAML path)
    cannot run here on ``corpus`` (default: its own); the message ends with a command that does."""
    from interbias.experiments.schema import find_experiment, load_experiment
    from interbias.utils.paths import conditions_dir

    path = find_experiment(argument, conditions_dir())
    exp = load_experiment(path, corpus=corpus)
    why = availability(exp, root=root)
    if why.runnable:
        return
    variants = runnable_variants(path, skip=exp.variant)
    raise DataMissingError(
        unavailable_message(exp, why, argument=argument, variants=variants), key=why.key, reason=why.reason
    )
