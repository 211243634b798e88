"""``mfcc-stats``: a weight-free baseline (family ``baseline``).

Embedding = [mean_t c_k, std_t c_k] for k = 1..20, with c_k the orthonormal-DCT MFCCs of a
40-bin Kaldi log filterbank (c0, the level term, is dropped). Cosine on this vector is a
classical long-term-spectrum speaker comparison with no learned weights.

Runs on the requested device. Batched (CUDA by default; ``batch="always"`` on CPU): padded
waveforms in one call, MFCCs in batch, mean and biased std over each row's own frames, equal
to one at a time within float rounding.
"""

from __future__ import annotations

import numpy as np
import torch

from interbias.encoders import Encoder, EncoderCard, register
from interbias.encoders.features import mfcc, mfcc_batch, num_frames
from interbias.encoders.masking import length_mask, masked_mean, masked_std, padded_waves

N_CEPS = 20


class MfccStats(Encoder):
    #: 2: Kaldi fbank's power spectrum computed as re² + im² (was |z|²; float32 features can differ in the last bit).
    code_version = 2
    supports_masks = True

    def _embed_one(self, wave: np.ndarray) -> np.ndarray:
        return self.torch_embed(torch.from_numpy(wave).to(self.device)).cpu().numpy()

    def frame_count(self, n_samples: int) -> int:
        return num_frames(n_samples)

    def _embed_batch(self, waves: list[np.ndarray]) -> list[np.ndarray]:
        """[mean, biased std] of MFCC 1..20 over each row's frames, one batched computation."""
        x, lengths = padded_waves(waves, self.device)
        ceps, frames = mfcc_batch(x, lengths, num_ceps=N_CEPS + 1, num_mel_bins=40)
        c = ceps[:, :, 1:].to(torch.float64).transpose(1, 2)  # (N, 20, frames)
        mask = length_mask(frames, c.shape[-1])
        mean = masked_mean(c, mask, frames)
        std = masked_std(c, mask, frames, mean, unbiased=False)
        return list(torch.cat([mean, std], dim=1).cpu().numpy())

    def torch_embed(self, wave: torch.Tensor) -> torch.Tensor:
        """The (40,) float64 embedding of a (T,) waveform tensor, differentiable in the waveform."""
        c = mfcc(wave, num_ceps=N_CEPS + 1, num_mel_bins=40)[:, 1:].to(torch.float64)
        return torch.cat([c.mean(0), c.std(0, unbiased=False)])


def _build(card: EncoderCard, *, device: str = "cpu") -> MfccStats:
    return MfccStats(
        card, source="builtin", checkpoint_sha256="none", device=device, config={"n_ceps": N_CEPS, "num_mel_bins": 40}
    )


register(
    EncoderCard(
        label="mfcc-stats",
        no_gradient_reason="",
        family="baseline",
        backend="builtin",
        embedding_dim=2 * N_CEPS,
        features="40-bin log fbank -> MFCC 1..20, mean and std over frames",
        description="weight-free MFCC statistics baseline",
        factory=_build,
    )
)
