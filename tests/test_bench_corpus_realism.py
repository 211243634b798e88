"""benchmarks/bench_corpus_realism.py: its measures, and (slow) the corpus meets its targets."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import bench_corpus_realism as B


def test_variance_ratio_against_a_hand_computed_case() -> None:
    # speaker a at (±0.1, 1) around (0, 1); speaker b at (1, ±0.3) around (1, 0)
    emb = np.array([[0.1, 1.0], [-0.1, 1.0], [1.0, 0.3], [1.0, -0.3]])
    within = (0.01 + 0.09) / 2  # mean squared distance to the own centroid
    between = 0.5  # centroids (0, 1) and (1, 0) around (0.5, 0.5)
    assert B.variance_ratio(emb, ["a", "a", "b", "b"]) == pytest.approx(within / between)


def test_pair_eer_counts_all_same_gender_pairs() -> None:
    rng = np.random.default_rng(0)
    centres = rng.standard_normal((6, 16))
    emb = np.repeat(centres, 4, axis=0) + 0.05 * rng.standard_normal((24, 16))
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    spk = [f"s{k // 4}" for k in range(24)]
    assert B.pair_eer(emb, spk) == 0.0  # well separated
    shuffled = list(rng.permutation(spk))
    assert 0.3 < B.pair_eer(emb, shuffled) < 0.7  # labels unrelated to the embeddings


def test_targets_need_the_order_the_ratio_and_the_range() -> None:
    def rows(cam: float, ge2e: float, mfcc: float) -> list[B.Realism]:
        return [B.Realism(e, "female", v, 0.1, 10, 2) for e, v in zip(B.ENCODERS, (cam, ge2e, mfcc), strict=True)]

    assert B.targets_met(rows(0.03, 0.05, 0.08)) == {"female": True}
    assert B.targets_met(rows(0.03, 0.05, 0.05)) == {"female": False}  # mfcc-stats < 2× CAM++
    assert B.targets_met(rows(0.005, 0.05, 0.2)) == {"female": False}  # CAM++ too easy
    assert B.targets_met(rows(0.06, 0.05, 0.2)) == {"female": False}  # GE2E ahead of CAM++


@pytest.mark.slow
def test_default_corpus_ranks_the_encoders_like_real_speech(session_cache: Path) -> None:
    from interbias.corpora.synthetic import SyntheticSpec, build

    manifest, _ = build(SyntheticSpec(), session_cache)
    rows = B.realism(manifest, B.select(manifest))
    for r in rows:
        print(f"{r.encoder} {r.gender}: EER {100 * r.eer:.2f} %, within/between {r.variance_ratio:.3f}")
    assert B.targets_met(rows) == {"female": True, "male": True}
