"""Whether a trial's enrolment and test utterances say the same text.

An utterance's text is its ``text`` attribute, else its ``sentence`` attribute
(:data:`TEXT_ATTRIBUTES`). A trial is ``same`` when its test utterance's text equals the text of
one of its enrolment utterances (all K of them with ``trials.enrol_utterances``), ``different``
when it equals none, and ``""`` (unknown) when any of them has no text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from interbias.corpora.manifest import Utterance
from interbias.trials.enrolment import enrol_columns
from interbias.utils.errors import TrialError

#: The attributes that name an utterance's text, first found wins.
TEXT_ATTRIBUTES = ("text", "sentence")
RELATIONS = ("same", "different")


def text_of(u: Utterance) -> str | None:
    """The utterance's text (:data:`TEXT_ATTRIBUTES`), ``None`` without one."""
    for attr in TEXT_ATTRIBUTES:
        value = u.get(attr)
        if value:
            return value
    return None


def text_relation(frame: pd.DataFrame, by_id: Mapping[str, Utterance]) -> np.ndarray:
    """Per trial of ``frame``: ``same``, ``different`` or ``""`` (see the module docs)."""
    texts = {uid: text_of(by_id[uid]) for col in [*enrol_columns(frame), "test"] for uid in set(frame[col])}
    enrol = frame[enrol_columns(frame)].to_numpy()
    out = np.empty(len(frame), dtype=object)
    for i, (model, t) in enumerate(zip(enrol, frame["test"].to_numpy(), strict=True)):
        te = texts[t]
        ts = [texts[u] for u in model]
        if te is None or any(x is None for x in ts):
            out[i] = ""
        else:
            out[i] = "same" if te in ts else "different"
    return out


def text_counts(
    symmetric: bool, enrol: Mapping[str, list[str]], test: Mapping[str, list[str]], texts: Mapping[str, str]
) -> tuple[int, int]:
    """(same-text, different-text) non-target pairs of the pools (different speakers; unordered
    in a symmetric stratum)."""
    per_text_e: dict[str, int] = {}
    per_text_t: dict[str, int] = {}
    within = 0  # same-speaker same-text (enrol, test) pairs, which are not non-targets
    for side, pool, count in (("e", enrol, per_text_e), ("t", test, per_text_t)):
        for ids in pool.values():
            for u in ids:
                count[texts[u]] = count.get(texts[u], 0) + 1
        del side
    for s, ids in enrol.items():
        mine: dict[str, int] = {}
        for u in test.get(s, []):
            mine[texts[u]] = mine.get(texts[u], 0) + 1
        within += sum(mine.get(texts[u], 0) for u in ids)
    same = sum(n * per_text_t.get(t, 0) for t, n in per_text_e.items()) - within
    ne, nt = sum(per_text_e.values()), sum(per_text_t.values())
    total = ne * nt - sum(len(ids) * len(test.get(s, [])) for s, ids in enrol.items())
    if symmetric:
        return same // 2, (total - same) // 2
    return same, total - same


def available(mode: str, same: int, different: int) -> int:
    """Most non-target trials a stratum can give under ``mode`` (:data:`TEXT_MODES`)."""
    if mode == "same":
        return same
    if mode == "different":
        return different
    if mode == "balanced":  # ⌊n/2⌋ <= same and ⌈n/2⌉ <= different
        return min(2 * same + 1, 2 * different)
    return same + different


def text_codes(e_ids: list[str], t_ids: list[str], texts: Mapping[str, str]) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes of the texts of ``e_ids`` and ``t_ids`` (equal codes: equal texts)."""
    code = {t: i for i, t in enumerate(sorted(set(texts.values())))}
    return (
        np.array([code[texts[u]] for u in e_ids], dtype=np.int64),
        np.array([code[texts[u]] for u in t_ids], dtype=np.int64),
    )


def impostor(
    e_spk: np.ndarray,
    t_spk: np.ndarray,
    ei: np.ndarray,
    ti: np.ndarray,
    rel: tuple[tuple[np.ndarray, np.ndarray], str] | None,
) -> np.ndarray:
    """Which candidate pairs (``ei``, ``ti``) are impostor pairs: different speakers, and with
    ``rel`` ((enrol codes, test codes), ``same`` | ``different``) of that text relation."""
    keep = e_spk[ei] != t_spk[ti]
    if rel is not None:
        (e_code, t_code), relation = rel
        same = e_code[ei] == t_code[ti]
        keep &= same if relation == "same" else ~same
    return keep


def text_mode(name: str, mode: str | None, utts: Sequence[Utterance]) -> tuple[dict[str, str] | None, str]:
    """(utterance id -> text, mode) for ``trials.text`` (``None`` and ``any``: no texts needed);
    a :class:`TrialError` when ``same``, ``different`` or ``balanced`` meets utterances without
    a text attribute (the count in the line)."""
    if mode in (None, "any"):
        return None, "any"
    texts = {u.id: text_of(u) for u in utts}
    lacking = sorted(uid for uid, t in texts.items() if t is None)
    if lacking:
        raise TrialError(
            f"{name}: trials.text: {mode} needs the text of every utterance, but {len(lacking)} of {len(texts)} "
            f"have no {' or '.join(TEXT_ATTRIBUTES)} attribute (first: {lacking[0]})"
        )
    return {k: v for k, v in texts.items() if v is not None}, mode
