"""Trial models of several enrolment utterances (``trials: {enrol_utterances: K}``).

A trial's enrolment side is its ``enrol`` utterance plus K − 1 more of the same speaker, in
columns ``enrol_2`` … ``enrol_K`` of the trial list (absent when K = 1). The extra utterances
are drawn per trial, after the pairs, from the speaker's enrolment pool less the trial's two
utterances, preferring utterances whose :data:`DISTINCT_BY` attributes (session, text,
sentence) no chosen utterance has yet.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from interbias.corpora.manifest import Utterance
from interbias.utils.errors import TrialError

#: Attributes that the K enrolment utterances of a model should not share, where the manifest has them.
DISTINCT_BY = ("session", "text", "sentence")


def enrol_columns(frame: pd.DataFrame) -> list[str]:
    """The columns holding a trial's enrolment utterances: ``enrol``, then ``enrol_2`` … in order."""
    extra = []
    k = 2
    while f"enrol_{k}" in frame.columns:
        extra.append(f"enrol_{k}")
        k += 1
    return ["enrol", *extra]


def first_enrolment(frame: pd.DataFrame, k: int | None) -> pd.DataFrame:
    """``frame`` with trial models of its first ``k`` enrolment utterances (a protocol level's
    ``enrol_utterances``: the columns past ``enrol_k`` dropped; ``None``: ``frame`` itself). A
    :class:`TrialError` when the trials hold fewer than ``k``."""
    if k is None:
        return frame
    cols = enrol_columns(frame)
    if len(cols) < k:
        raise TrialError(
            f"a cell scores {k} enrolment utterances per trial model, but the trial list holds {len(cols)}"
        )
    return frame.drop(columns=cols[k:]) if len(cols) > k else frame


def enrolment_ids(frame: pd.DataFrame) -> set[str]:
    """Every enrolment utterance id of ``frame`` (all K columns)."""
    out: set[str] = set()
    for col in enrol_columns(frame):
        out.update(frame[col].astype(str))
    return out


def with_models(pool: Mapping[str, list[str]], k: int) -> dict[str, list[str]]:
    """The speakers of ``pool`` with at least ``k`` utterances (all of them when k = 1)."""
    return {s: ids for s, ids in pool.items() if len(ids) >= k}


def extra_enrolment(
    speaker_ids: Sequence[str],
    taken: tuple[str, ...],
    k: int,
    by_id: Mapping[str, Utterance],
    rng: np.random.Generator,
) -> tuple[str, ...]:
    """K − 1 utterances of ``speaker_ids`` not in ``taken`` (the trial's two utterances),
    drawn in ``rng``'s order, each the first one sharing the fewest :data:`DISTINCT_BY`
    values with the enrolment utterances chosen before it (``taken[0]`` first)."""
    if k <= 1:
        return ()
    cands = [u for u in speaker_ids if u not in taken]
    order = [cands[i] for i in rng.permutation(len(cands)).tolist()]
    used: set[tuple[str, str]] = set(_values(by_id[taken[0]]))
    out: list[str] = []
    for _ in range(k - 1):
        pick = min(range(len(order)), key=lambda i: (len(used & _values(by_id[order[i]])), i))
        chosen = order.pop(pick)
        out.append(chosen)
        used |= _values(by_id[chosen])
    return tuple(out)


def _values(u: Utterance) -> set[tuple[str, str]]:
    return {(a, v) for a in DISTINCT_BY if (v := u.get(a))}


def expand(frame: pd.DataFrame, k: int) -> pd.DataFrame:
    """``frame`` with its ``_extra`` column (tuples of K − 1 ids) written out as ``enrol_2`` …
    ``enrol_K`` after ``enrol`` (the column dropped when k = 1)."""
    extra = frame.pop("_extra")
    if k <= 1:
        return frame
    at = frame.columns.get_loc("enrol") + 1
    for j in range(k - 1):
        frame.insert(at + j, f"enrol_{j + 2}", [t[j] for t in extra])
    return frame


def check_enrolment(name: str, k: int, utts: Sequence[Utterance]) -> None:
    """A :class:`TrialError` before any work when no speaker of ``utts`` has the K + 1
    utterances a target trial of K enrolment utterances needs (the count in the line)."""
    per: dict[str, int] = {}
    for u in utts:
        per[u.speaker] = per.get(u.speaker, 0) + 1
    most = max(per.values(), default=0)
    if most < k + 1:
        raise TrialError(
            f"{name}: trials.enrol_utterances {k} needs {k + 1} utterances of a speaker ({k} to enrol, one to test); "
            f"the most any speaker of the population has is {most}"
        )
