"""Speaker-level permutation test for gaps against a plain loop over the same permutations."""

from __future__ import annotations

import numpy as np
import pytest

from interbias.analysis.stats.permutation import permutation_gap_test
from interbias.metrics import verification as M
from interbias.utils.errors import AnalysisError
from interbias.utils.seeding import derive_rng


def group(prefix: str, n_spk: int, shift: float, rng: np.random.Generator, per: int = 6):
    scores, labels, units = [], [], []
    for i in range(n_spk):
        off = rng.normal(0, 0.5)
        for _ in range(per):
            scores += [round(2.0 + shift + off + rng.normal(), 2), round(rng.normal(), 2)]
            labels += [1, 0]
            units += [f"{prefix}{i}", f"{prefix}{i}"]
    return np.array(scores), np.array(labels, bool), np.array(units)


def naive_p(ref, grp, n_perm: int, seed: int) -> tuple[float, float]:
    scores = np.concatenate([ref[0], grp[0]])
    labels = np.concatenate([ref[1], grp[1]])
    units = np.concatenate([ref[2], grp[2]])
    names = sorted(set(units.tolist()))
    in_group = np.array([n in set(grp[2].tolist()) for n in names])
    obs = M.eer(grp[0], grp[1]) - M.eer(ref[0], ref[1])
    hits = valid = 0
    for p in range(n_perm):
        assign = dict(zip(names, in_group[derive_rng("permutation", seed, p).permutation(len(names))], strict=True))
        member = np.array([assign[u] for u in units])
        try:
            gap = M.eer(scores[member], labels[member]) - M.eer(scores[~member], labels[~member])
        except Exception:
            continue
        valid += 1
        hits += abs(gap) >= abs(obs) - 1e-12
    return obs, (1 + hits) / (1 + valid)


def test_p_value_equals_plain_loop_over_the_same_permutations() -> None:
    rng = derive_rng("test", "perm")
    ref, grp = group("f", 6, 0.0, rng), group("m", 5, -0.4, rng)
    res = permutation_gap_test("eer", ref, grp, n_perm=60, seed=3)
    obs, p = naive_p(ref, grp, 60, 3)
    assert res.gap == obs and res.p_value == pytest.approx(p) and res.n_valid == 60 and res.note == ""


def test_large_gap_is_detected_and_shared_speakers_are_refused() -> None:
    rng = derive_rng("test", "perm2")
    ref, grp = group("f", 8, 0.0, rng), group("m", 8, -2.5, rng)
    res = permutation_gap_test("eer", ref, grp, n_perm=200, seed=0)
    assert res.gap > 0.1 and res.p_value == pytest.approx(1 / 201)
    shared = (grp[0], grp[1], np.char.replace(grp[2], "m", "f"))
    out = permutation_gap_test("eer", ref, shared, n_perm=10)
    assert np.isnan(out.p_value) and out.note == "not applicable: the groups share speakers"
    with pytest.raises(AnalysisError, match="--permutations must be positive"):
        permutation_gap_test("eer", ref, grp, n_perm=0)
