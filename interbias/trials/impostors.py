"""Impostor (non-target) pairs of a stratum's pools: counted, and drawn at random.

Pairs join utterances of two different speakers; in a symmetric stratum a pair is unordered
(drawn once, its sides then swapped at random). With ``trials: {text: same|different|balanced}``
only pairs of that text relation are drawn (:mod:`interbias.trials.text_pairs`; ``balanced``:
⌊n/2⌋ same-text pairs, then ⌈n/2⌉ different-text pairs, from one generator).
"""

from __future__ import annotations

import numpy as np

from interbias.experiments.schema import Stratum
from interbias.trials.enrolment import with_models
from interbias.trials.text_pairs import available, impostor, text_codes, text_counts

#: Above this many candidate pairs, impostor pairs are drawn by rejection instead of listed.
_ENUMERATE_LIMIT = 2_000_000


def count_nontargets(stratum: Stratum, enrol: dict[str, list[str]], test: dict[str, list[str]]) -> int:
    ne = sum(len(v) for v in enrol.values())
    nt = sum(len(v) for v in test.values())
    same = sum(len(enrol[s]) * len(test.get(s, [])) for s in enrol)
    total = ne * nt - same
    return total // 2 if stratum.symmetric else total


def nontarget_pairs(
    stratum: Stratum,
    enrol: dict[str, list[str]],
    test: dict[str, list[str]],
    k: int,
    rng: np.random.Generator,
    texts: tuple[dict[str, str], str] | None = None,
) -> list[tuple[str, str]]:
    """``k`` impostor pairs; with ``texts`` ((utterance -> text), ``same`` | ``different``) only
    pairs of that text relation."""
    if k == 0:
        return []
    e_ids = [u for s in sorted(enrol) for u in enrol[s]]
    e_spk = np.array([s for s in sorted(enrol) for _ in enrol[s]])
    t_ids = [u for s in sorted(test) for u in test[s]]
    t_spk = np.array([s for s in sorted(test) for _ in test[s]])
    rel = None if texts is None else (text_codes(e_ids, t_ids, texts[0]), texts[1])
    if len(e_ids) * len(t_ids) <= _ENUMERATE_LIMIT:
        ei, ti = np.meshgrid(np.arange(len(e_ids)), np.arange(len(t_ids)), indexing="ij")
        ei, ti = ei.ravel(), ti.ravel()
        keep = impostor(e_spk, t_spk, ei, ti, rel)
        if stratum.symmetric:
            keep &= ei < ti
        ei, ti = ei[keep], ti[keep]
        pick = np.sort(rng.choice(len(ei), size=k, replace=False))
        ei, ti = ei[pick], ti[pick]
    else:
        chosen: dict[tuple[int, int], None] = {}
        while len(chosen) < k:
            m = 2 * (k - len(chosen)) + 16
            a = rng.integers(0, len(e_ids), size=m)
            b = rng.integers(0, len(t_ids), size=m)
            ok = impostor(e_spk, t_spk, a, b, rel).tolist()
            for x, y, good in zip(a.tolist(), b.tolist(), ok, strict=True):
                if not good:
                    continue
                key = (min(x, y), max(x, y)) if stratum.symmetric else (x, y)
                if key not in chosen:
                    chosen[key] = None
                    if len(chosen) == k:
                        break
        pairs = np.array(list(chosen), dtype=np.int64)
        ei, ti = pairs[:, 0], pairs[:, 1]
    if stratum.symmetric:
        swap = rng.random(len(ei)) < 0.5
        ei, ti = np.where(swap, ti, ei), np.where(swap, ei, ti)
    return [(e_ids[a], t_ids[b]) for a, b in zip(ei.tolist(), ti.tolist(), strict=True)]


def nontarget_pools(
    stratum: Stratum, enrol: dict[str, list[str]], test: dict[str, list[str]], k: int
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """The pools non-target pairs are drawn from: enrolment speakers with ``k`` utterances (in a
    symmetric stratum either side may enrol, so both sides keep only those speakers)."""
    if k <= 1:
        return enrol, test
    models = with_models(enrol, k)
    return models, (models if stratum.symmetric else test)


def nontargets_available(
    stratum: Stratum, enrol: dict[str, list[str]], test: dict[str, list[str]], texts: dict[str, str] | None, mode: str
) -> int:
    """Non-target pairs the pools can give under ``mode`` (``any`` without ``texts``)."""
    if texts is None or mode == "any":
        return count_nontargets(stratum, enrol, test)
    return available(mode, *text_counts(stratum.symmetric, enrol, test, texts))


def draw_nontargets(
    stratum: Stratum,
    enrol: dict[str, list[str]],
    test: dict[str, list[str]],
    n: int,
    rng: np.random.Generator,
    texts: dict[str, str] | None,
    mode: str,
) -> list[tuple[str, str]]:
    """``n`` non-target pairs under ``mode`` (see the module docs)."""
    if texts is None or mode == "any":
        return nontarget_pairs(stratum, enrol, test, n, rng)
    if mode == "balanced":
        same = nontarget_pairs(stratum, enrol, test, n // 2, rng, (texts, "same"))
        return same + nontarget_pairs(stratum, enrol, test, n - n // 2, rng, (texts, "different"))
    return nontarget_pairs(stratum, enrol, test, n, rng, (texts, mode))
