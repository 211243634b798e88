"""Mixed-length batches with length masks: each row equal to the row alone.

The batched path (CUDA by default) is forced on CPU with the ``batch="always"`` option; the
reference is the same encoder one waveform at a time (the CPU default: onnxruntime for CAM++
and GE2E), so the check covers the masked network, the batched features and the pooling."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from interbias.encoders import frame_budget_batches, load_encoder
from interbias.encoders.features import fbank, fbank_batch, mfcc, mfcc_batch
from interbias.encoders.masking import length_mask, masked_mean, masked_std, padded_waves, segment_means
from interbias.encoders.precision import precision_scope
from interbias.utils.errors import EncoderError
from interbias.utils.seeding import derive_rng

SR = 16000


def mixed_waves(name: str, n: int, *, lo_s: float = 0.5, hi_s: float = 12.0) -> list[np.ndarray]:
    """``n`` noise-like waveforms, lengths log-uniform in [lo_s, hi_s] s with both ends present
    (log-uniform keeps the 0.5–12 s spread at a third of the uniform's audio)."""
    rng = derive_rng("test-masked-batches", name)
    seconds = [lo_s, hi_s, *np.exp(rng.uniform(math.log(lo_s), math.log(hi_s), n - 2))]
    order = rng.permutation(n)
    waves = []
    for s in np.asarray(seconds)[order]:
        t = np.arange(int(s * SR)) / SR
        f0 = rng.uniform(90, 250)
        voiced = sum(np.sin(2 * np.pi * f0 * k * t + rng.uniform(0, 6)) / k for k in range(1, 8))
        waves.append((0.05 * voiced + 0.01 * rng.standard_normal(t.size)).astype(np.float32))
    return waves


@pytest.fixture(scope="module")
def campplus():
    """CAM++ in eager PyTorch with masked batches on the CPU (counters accumulate across tests)."""
    return load_encoder("CAM++", options={"runtime": "eager", "batch": "always"})


def cosine_distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = a.astype(np.float64), b.astype(np.float64)
    return 1.0 - (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


# (label, utterances): random lengths 0.5–12 s per offline encoder; CAM++ on 64 takes 35 s (slow)
@pytest.mark.parametrize(
    ("label", "n"),
    [("mfcc-stats", 64), ("CAM++", 16), pytest.param("CAM++", 64, marks=pytest.mark.slow), ("GE2E", 64)],
)
def test_masked_batches_equal_one_at_a_time(label: str, n: int) -> None:
    waves = mixed_waves(label, n)
    alone = load_encoder(label)
    assert not alone.batches()  # CPU default: one at a time
    want = alone.embed(waves)
    enc = load_encoder(label, options={"batch": "always"})
    assert enc.batches() and enc.fingerprint != alone.fingerprint
    calls, got = 0, np.empty_like(want)
    for start in range(0, n, 16):  # batch 16, as gpu_check --batch 16
        before = enc.batch_calls
        got[start : start + 16] = enc.embed(waves[start : start + 16])
        calls += enc.batch_calls - before
    dist = cosine_distances(want, got)
    assert float(dist.max()) <= 1e-5, (label, float(dist.max()))
    assert n / calls >= 12, (label, calls)
    assert enc.valid_frames > 0 and 0.0 <= enc.padding_share() < 1.0


def test_campplus_masked_rows_of_one_to_four_frames_and_segment_edges(campplus) -> None:
    """The statistics pooling's one-frame branch (std 1e-2) and CAM segment edges (200 fbank
    frames → 100 after the stride-2 TDNN), against the eager module row by row."""
    enc = campplus
    rng = derive_rng("test-masked-batches", "short")
    lengths = [400, 560, 720, 880, 160 * 200 + 240, 160 * 403 + 240]  # 1–4, 200 and 403 frames
    waves = [(0.1 * rng.standard_normal(n)).astype(np.float32) for n in lengths]
    want = np.stack([enc.embed([w])[0] for w in waves])
    before = enc.batch_calls
    got = enc.embed(waves)
    assert enc.batch_calls == before + 1
    assert float(cosine_distances(want, got).max()) <= 1e-5


def test_batched_fbank_and_mfcc_rows_equal_the_single_version() -> None:
    waves = mixed_waves("fbank", 6, lo_s=0.03, hi_s=3.0)
    x, lengths = padded_waves(waves, "cpu")
    feats, frames = fbank_batch(x, lengths, num_mel_bins=80)
    ceps, _ = mfcc_batch(x, lengths, num_ceps=21, num_mel_bins=40)
    for i, w in enumerate(waves):
        one = fbank(torch.from_numpy(w), num_mel_bins=80)
        assert int(frames[i]) == one.shape[0]
        torch.testing.assert_close(feats[i, : one.shape[0]], one, rtol=0, atol=1e-5)
        assert bool((feats[i, one.shape[0] :] == 0).all())
        torch.testing.assert_close(ceps[i, : one.shape[0]], mfcc(torch.from_numpy(w), num_ceps=21), rtol=0, atol=1e-4)
    with pytest.raises(ValueError, match="need at least 400 samples for one frame, got 399"):
        fbank_batch(*padded_waves([waves[0], waves[0][:399]], "cpu"))


@pytest.mark.parametrize("frames", [[1, 7, 99, 100, 101, 250, 300], [5], [200, 37]])
def test_masked_reductions_equal_torch_on_each_row(frames: list[int]) -> None:
    rng = derive_rng("test-masked-batches", "reductions", len(frames))
    rows = [torch.from_numpy(rng.standard_normal((3, n))) for n in frames]
    lengths = torch.tensor(frames)
    x = torch.zeros(len(rows), 3, max(frames), dtype=torch.float64)
    for i, r in enumerate(rows):
        x[i, :, : r.shape[1]] = r
    mask = length_mask(lengths, x.shape[-1])
    mean = masked_mean(x, mask, lengths)
    std = masked_std(x, mask, lengths, mean, unbiased=True)
    biased = masked_std(x, mask, lengths, mean, unbiased=False)
    seg = segment_means(x, lengths, 100)
    for i, r in enumerate(rows):
        torch.testing.assert_close(mean[i], r.mean(-1))
        torch.testing.assert_close(biased[i], r.std(-1, unbiased=False))
        if r.shape[1] > 1:
            torch.testing.assert_close(std[i], r.std(-1, unbiased=True))
        pooled = F.avg_pool1d(r.unsqueeze(0), 100, 100, ceil_mode=True)[0]  # the wheel's seg_pooling
        torch.testing.assert_close(seg[i, :, : pooled.shape[1]], pooled)


def test_frame_budget_batches_hand_example_and_limits() -> None:
    # frames sorted: 3(2) 5(0) 5(4) 8(1) 9(3); budget 16: [3,5,5] (3×5=15), [8] (2×9=18 > 16), [9]
    assert frame_budget_batches([5, 8, 3, 9, 5], 8, 16) == [[2, 0, 4], [1], [3]]
    assert frame_budget_batches([5, 8, 3, 9, 5], 2, 1000) == [[2, 0], [4, 1], [3]]  # items cap
    assert frame_budget_batches([50], 8, 10) == [[0]]  # over-long goes alone
    assert frame_budget_batches([], 8, 10) == []
    rng = derive_rng("test-masked-batches", "budget")
    frames = [int(f) for f in rng.integers(1, 1200, 300)]
    batches = frame_budget_batches(frames, 16, 8000)
    assert sorted(i for b in batches for i in b) == list(range(300))
    for b in batches:
        assert len(b) <= 16 and (len(b) == 1 or len(b) * max(frames[i] for i in b) <= 8000)


def test_frame_buckets_ladder_and_bucketed_batches_hand_example() -> None:
    from interbias.encoders.batching import bucket_items, bucketed_batches, frame_bucket, is_full

    # step 16, ratio 1.08: 16, 32, …, 128, 144 (128·1.08 = 138.2 → 144), 160, 176, 192, 208, 240 (224.6 → 240)
    ladder = sorted({frame_bucket(f, 16, 1.08) for f in range(1, 241)})
    assert ladder == [16, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 240]
    # sorted 10(0) 12(2) 20(1) 30(3); budget 64, step 16, ratio 1: bucket 16 holds 4 rows but
    # the 4th (30) exceeds it, bucket 32 holds 2 rows and both fit: [0, 2]; then [1, 3] in 32
    assert bucketed_batches([10, 20, 12, 30], 8, 64, 16, 1.0) == [[0, 2], [1, 3]]
    assert bucketed_batches([], 8, 64) == []
    rng = derive_rng("test-masked-batches", "buckets")
    frames = [int(f) for f in rng.integers(100, 1000, 500)]
    batches = bucketed_batches(frames, 256, 32_000)
    assert sorted(i for b in batches for i in b) == list(range(500))
    for k, b in enumerate(batches):
        bucket = frame_bucket(max(frames[i] for i in b))
        assert len(b) * bucket <= 32_000 and max(frames[i] for i in b) <= bucket
        assert is_full([frames[i] for i in b], 256, 32_000) or k == len(batches) - 1
        assert len(b) == bucket_items(bucket, 256, 32_000) or k == len(batches) - 1
    assert len({(len(b), frame_bucket(max(frames[i] for i in b))) for b in batches}) <= len(batches)


def test_frame_masks_context_is_the_masked_mean_plus_segment_means() -> None:
    from interbias.encoders.masking import FrameMasks

    lengths = torch.tensor([1, 99, 100, 101, 250])
    x = torch.randn(5, 3, 250, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    x = x * length_mask(lengths, 250).unsqueeze(1)
    masks = FrameMasks.of(lengths, 250, 100, torch.float32)
    want = masked_mean(x, length_mask(lengths, 250), lengths).unsqueeze(-1) + segment_means(x, lengths, 100)
    got = masks.mean_and_segments(x.float())
    torch.testing.assert_close(got.double(), want, rtol=1e-5, atol=1e-6)
    assert masks.index.tolist() == [t // 100 for t in range(250)] and masks.weights.shape == (5, 1, 250)


def test_a_failing_utterance_fails_alone_with_the_cpu_message(campplus) -> None:
    """embed_batch (interbias.embedding.tasks) retries a failed batch item by item: the short
    waveform fails with the one-at-a-time message, the others get their one-at-a-time vectors."""
    from interbias.embedding.tasks import ExecStats, Prepared, embed_batch

    waves = mixed_waves("bad", 5, lo_s=0.5, hi_s=2.0)
    waves[2] = waves[2][:300]
    enc = campplus
    with pytest.raises(ValueError) as alone:
        enc.embed([waves[2]])  # one waveform: one at a time, as on CPU
    items = [Prepared(f"u{i}", "c", "k", w, [], (enc.fingerprint,)) for i, w in enumerate(waves)]
    results = embed_batch(enc, items, ExecStats())
    assert [r.vector is None for r in results] == [False, False, True, False, False]
    assert results[2].error == f"u2: CAM++ failed (ValueError: {alone.value})"
    good = np.stack([r.vector for i, r in enumerate(results) if i != 2])
    want = np.stack([enc.embed([w])[0] for i, w in enumerate(waves) if i != 2])
    assert float(cosine_distances(want, good).max()) <= 1e-5


def test_precision_option_keys_runs_and_restores(campplus) -> None:
    fp32 = load_encoder("mfcc-stats")
    assert load_encoder("mfcc-stats", options={"precision": "fp32"}).fingerprint == fp32.fingerprint
    assert load_encoder("mfcc-stats", options={"precision": "tf32"}).fingerprint != fp32.fingerprint
    bf16 = load_encoder("CAM++", options={"precision": "bf16", "batch": "always"})
    assert bf16.runtime == "eager" and bf16.precision == "bf16"  # auto runtime: eager, not onnxruntime
    assert bf16.fingerprint != campplus.fingerprint and bf16.provenance()["precision"] == "bf16"
    waves = mixed_waves("precision", 2, lo_s=0.5, hi_s=1.0)
    ref = campplus.embed(waves)
    got = bf16.embed(waves)
    assert 0.0 < float(cosine_distances(ref, got).max()) <= 2e-2  # bf16 differs, but little
    saved = torch.backends.cuda.matmul.fp32_precision
    with precision_scope("tf32", "cpu"):
        assert torch.backends.cuda.matmul.fp32_precision == "tf32"
    assert torch.backends.cuda.matmul.fp32_precision == saved
    with pytest.raises(EncoderError, match=r"precision 'fp16': use fp32, tf32, bf16"):
        load_encoder("CAM++", options={"precision": "fp16"})
    with pytest.raises(EncoderError, match=r"CAM\+\+: precision bf16 needs the eager runtime"):
        load_encoder("CAM++", options={"precision": "bf16", "runtime": "onnxruntime"})
    with pytest.raises(EncoderError, match=r"CAM\+\+: batch 'sometimes': use auto, always, never"):
        load_encoder("CAM++", options={"batch": "sometimes"})


def test_tf32_is_switched_through_one_api_the_new_one() -> None:
    """torch 2.13 raises on reading a legacy ``allow_tf32`` flag after the ``fp32_precision``
    API set it: interbias uses the new API only."""
    import interbias

    root = Path(interbias.__file__).parent
    assert [p.name for p in root.rglob("*.py") if "allow_tf32" in p.read_text(encoding="utf-8")] == []
    assert "fp32_precision" in (root / "encoders" / "precision.py").read_text(encoding="utf-8")
