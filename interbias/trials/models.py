"""Enrolment models of an external trial list (``trials: {list: FILE, models: MODELS}``).

A models file lists one speaker model per line in Kaldi's ``spk2utt`` layout, ``model utt1 utt2
…`` (every model with the same number K of enrolment utterances); the trial list then names a
model where it would name an enrolment utterance. Each model's utterances are matched to the
manifest like the list's names, must belong to one speaker and must not include the trial's
test utterance; the trial list gets ``enrol`` (the first) and ``enrol_2`` … ``enrol_K``
(:mod:`interbias.trials.enrolment`), ``enrol_name`` the model's name. Strata are assigned by
the model's first utterance.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from interbias.corpora.manifest import Utterance
from interbias.utils.errors import TrialError

_SHOW = 5


def parse_models(path: Path) -> dict[str, tuple[int, list[str]]]:
    """model -> (line, utterance names) of a ``model utt1 utt2 …`` file; a line with no
    utterance, a model named twice or models with different numbers of utterances are errors."""
    path = Path(path)
    if not path.is_file():
        raise TrialError(f"models file {path} does not exist")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TrialError(f"models file {path}: cannot read as UTF-8 text ({exc})") from exc
    out: dict[str, tuple[int, list[str]]] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) < 2:
            raise TrialError(f"models file {path}: line {lineno} names model {parts[0]!r} without utterances")
        if parts[0] in out:
            raise TrialError(f"models file {path}: line {lineno} repeats model {parts[0]!r} (line {out[parts[0]][0]})")
        out[parts[0]] = (lineno, parts[1:])
    if not out:
        raise TrialError(f"models file {path} is empty")
    sizes = sorted({len(v[1]) for v in out.values()})
    if len(sizes) > 1:
        raise TrialError(
            f"models file {path}: models have {', '.join(map(str, sizes))} utterances; every model needs the same "
            "number (trials.enrol_utterances of a sampled list is one K too)"
        )
    return out


def model_names(listed: list[Any], models: dict[str, tuple[int, list[str]]], where: str) -> list[tuple[int, str]]:
    """(models line, utterance name) of every model utterance, the names
    :func:`interbias.trials.external.match_names` must resolve; a trial (``ListedTrial``)
    naming a model the file lacks is an error."""
    unknown = [f"{t.enrol!r} (line {t.line})" for t in listed if t.enrol not in models]
    if unknown:
        raise TrialError(
            f"{where}: {len(unknown)} trial(s) name an enrolment model the models file lacks; first: "
            + ", ".join(unknown[:_SHOW])
        )
    return [(line, name) for line, names in models.values() for name in names]


def check_models(
    listed: list[Any],
    models: dict[str, tuple[int, list[str]]],
    resolved: dict[str, Utterance],
    where: str,
    models_where: str = "models file",
) -> dict[str, Utterance]:
    """``resolved`` with each model name mapped to its first utterance; a model of several
    speakers (an error of ``models_where``, the models file), or a trial whose test utterance
    is in its model (an error of ``where``, the trial list), is an error."""
    out = dict(resolved)
    for model, (line, names) in models.items():
        speakers = sorted({resolved[n].speaker for n in names})
        if len(speakers) > 1:
            raise TrialError(f"{models_where}: line {line}: model {model!r} mixes speakers {', '.join(speakers)}")
        out[model] = resolved[names[0]]
    selfs = [f"line {t.line}" for t in listed if resolved[t.test].id in {resolved[n].id for n in models[t.enrol][1]}]
    if selfs:
        raise TrialError(
            f"{where}: {len(selfs)} trial(s) test an utterance of their own model; first: {', '.join(selfs[:_SHOW])}"
        )
    return out


def model_columns(
    names: list[str], models: dict[str, tuple[int, list[str]]], resolved: dict[str, Utterance]
) -> dict[str, list[str]]:
    """``enrol_2`` … ``enrol_K``: the further utterance ids of each row's model (``names``)."""
    k = len(next(iter(models.values()))[1])
    return {f"enrol_{j + 1}": [resolved[models[m][1][j]].id for m in names] for j in range(1, k)}
