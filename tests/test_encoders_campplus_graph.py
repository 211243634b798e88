"""CAM++'s restated network (``campplus.graph``) against the wheel's module it restates, and its
pieces against the torch operations they replace."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from interbias.encoders import load_encoder
from interbias.encoders.campplus.graph import SEGMENT, CamPlusInference, bn_relu_conv, segment_matrices


@pytest.fixture(scope="module")
def campplus():
    return load_encoder("CAM++", options={"runtime": "eager"}).model


def _fbank(frames: int, seed: int, batch: int = 1) -> torch.Tensor:
    rng = np.random.default_rng(seed)
    return torch.from_numpy(rng.standard_normal((batch, frames, 80)).astype(np.float32))


# lengths around the segment edges after the stride-2 TDNN (200 frames → 100), a length below
# one segment, the shortest the exported graph takes (4) and a long one with a partial segment
@pytest.mark.parametrize("frames", [4, 37, 199, 200, 201, 202, 403, 1234])
def test_restated_network_matches_the_wheels_module(campplus, frames: int) -> None:
    x = _fbank(frames, seed=frames)
    with torch.inference_mode():
        want = campplus(x).double()
        got = CamPlusInference(campplus).eval()(x).double()
    assert got.shape == want.shape == (1, 192)
    cos = float(F.cosine_similarity(got, want).min())
    assert cos >= 0.999999, cos
    assert float((got - want).abs().max()) <= 1e-4 * float(want.abs().max())


def test_restated_network_batches_equal_lengths(campplus) -> None:
    x = _fbank(321, seed=7, batch=3)
    with torch.inference_mode():
        want = campplus(x)
        got = CamPlusInference(campplus).eval()(x)
    assert float(F.cosine_similarity(got, want).min()) >= 0.999999


@pytest.mark.parametrize("frames", [1, 2, 99, 100, 101, 250, 300])
def test_segment_matrices_are_mean_plus_ceil_mode_segment_mean(frames: int) -> None:
    x = torch.from_numpy(np.random.default_rng(frames).standard_normal((2, 5, frames))).double()
    pool, expand = segment_matrices(frames, torch.float64)
    seg = F.avg_pool1d(x, SEGMENT, SEGMENT, ceil_mode=True)  # the wheel's seg_pooling, pre-expansion
    assert torch.allclose(x @ pool, x.mean(-1, keepdim=True) + seg, atol=1e-12)
    # the wheel's expansion: each segment's value repeated over its frames, cut to the length
    repeated = seg.unsqueeze(-1).expand(*seg.shape, SEGMENT).reshape(2, 5, -1)[..., :frames]
    assert torch.equal(seg @ expand, repeated)


@pytest.mark.parametrize("affine", [True, False])
def test_batchnorm_relu_as_depthwise_convolution(affine: bool) -> None:
    norm = torch.nn.BatchNorm1d(6, affine=affine).eval()
    rng = np.random.default_rng(3)
    norm.running_mean.copy_(torch.from_numpy(rng.standard_normal(6)))
    norm.running_var.copy_(torch.from_numpy(rng.uniform(0.1, 3.0, 6)))
    if affine:
        norm.weight.data.copy_(torch.from_numpy(rng.standard_normal(6)))
        norm.bias.data.copy_(torch.from_numpy(rng.standard_normal(6)))
    x = torch.from_numpy(rng.standard_normal((2, 6, 1, 40)).astype(np.float32))
    with torch.inference_mode():
        want = F.relu(norm(x.squeeze(2))).unsqueeze(2)
        got = bn_relu_conv(norm, x)
    assert torch.allclose(got, want, atol=1e-5, rtol=1e-5)
    assert bool((got >= 0).all())


def test_equal_frame_batches_hand_example_and_limits() -> None:
    from interbias.encoders import equal_frame_batches

    # frames 5 5 3 5 3 7 → by (frames, index): 3(2) 3(4) | 5(0) 5(1) 5(3) | 7(5)
    assert equal_frame_batches([5, 5, 3, 5, 3, 7], [50, 51, 30, 52, 31, 70], 8, 10_000) == [[2, 4], [0, 1, 3], [5]]
    assert equal_frame_batches([5, 5, 5], [50, 50, 50], 2, 10_000) == [[0, 1], [2]]  # items cap
    assert equal_frame_batches([5, 5, 5], [50, 50, 50], 8, 120) == [[0, 1], [2]]  # samples cap
    assert equal_frame_batches([], [], 8, 100) == []


def test_campplus_batches_with_masks_off_the_cpu_under_their_own_keys() -> None:
    """CUDA (faked here) turns on masked batches of mixed lengths; they get their own cache
    keys, the CPU default (one at a time) keeps its own (see tests/test_encoders_masked.py)."""
    enc = load_encoder("CAM++", options={"runtime": "eager"})
    cpu_key = enc.fingerprint
    assert not enc.batches() and enc.supports_masks
    enc.device = "cuda"
    assert enc.batches() and enc.fingerprint != cpu_key
    assert enc.batch_groups([16000, 48000, 32000]) == [[0, 2, 1]]  # one call, sorted by length
    enc.set_batching("never")
    assert not enc.batches() and enc.fingerprint == cpu_key
