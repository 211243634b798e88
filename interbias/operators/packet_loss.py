"""Packet loss: the signal is cut into frames (packets) and some are lost.

Loss patterns:

* ``iid``: each frame is lost independently with probability ``rate``.
* ``gilbert_elliott``: a two-state Markov chain (the Gilbert model: every frame in the bad
  state is lost, none in the good state). Leaving the bad state has probability
  r = 1/``burst_frames`` (so bursts last ``burst_frames`` frames on average, geometric);
  entering it p = rate·r/(1 − rate), so the stationary loss rate is p/(p + r) = ``rate``.
  The first frame's state is drawn from the stationary distribution.

Concealment: ``zero`` fills lost frames with silence; ``repeat`` repeats the last received
frame (silence before the first). The realised loss rate and bursts are recorded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np

from interbias.operators import OpContext, Operator, register_operator
from interbias.utils.errors import OperatorError


def iid_mask(n_frames: int, loss_rate: float, rng: np.random.Generator) -> np.ndarray:
    """Boolean loss mask: each frame lost with probability ``loss_rate``."""
    return rng.random(n_frames) < loss_rate


def gilbert_elliott_mask(n_frames: int, loss_rate: float, burst_frames: float, rng: np.random.Generator) -> np.ndarray:
    """Boolean loss mask from the two-state Gilbert model (see the module docstring)."""
    if loss_rate == 0:
        return np.zeros(n_frames, dtype=bool)
    r = 1.0 / burst_frames
    p = loss_rate * r / (1.0 - loss_rate)
    u = rng.random(n_frames)
    lost = np.empty(n_frames, dtype=bool)
    state = u[0] < loss_rate
    lost[0] = state
    for i in range(1, n_frames):
        state = (u[i] >= r) if state else (u[i] < p)
        lost[i] = state
    return lost


def burst_lengths(lost: np.ndarray) -> np.ndarray:
    """Lengths of the runs of consecutive lost frames."""
    padded = np.concatenate([[False], lost, [False]]).astype(np.int8)
    edges = np.diff(padded)
    return np.flatnonzero(edges == -1) - np.flatnonzero(edges == 1)


@register_operator
@dataclass(frozen=True)
class PacketLoss(Operator):
    """Drop ``frame_ms`` frames at loss ``rate`` (0 ≤ rate < 1) with the given ``model`` and
    ``concealment``; ``burst_frames`` is the mean burst length for Gilbert–Elliott."""

    rate: float
    model: Literal["iid", "gilbert_elliott"] = "iid"
    burst_frames: float = 3.0
    frame_ms: float = 20.0
    concealment: Literal["zero", "repeat"] = "zero"
    name = "packet_loss"
    recorded = ("loss_rate_realised",)
    stochastic = True
    ranges: ClassVar[dict[str, tuple[float, float, str]]] = {
        "rate": (0.0, 0.999, "(share of frames)"),
        "burst_frames": (1.0, 1000.0, "frames"),
        "frame_ms": (1.0, 1000.0, "ms"),
    }

    def validate(self) -> None:
        if not 0.0 <= self.rate < 1.0:
            raise OperatorError(f"packet_loss.rate: {self.rate} is outside [0, 1)")
        if not 1.0 <= self.burst_frames <= 1000.0:
            raise OperatorError(f"packet_loss.burst_frames: {self.burst_frames} is outside [1, 1000] frames")
        if not 1.0 <= self.frame_ms <= 1000.0:
            raise OperatorError(f"packet_loss.frame_ms: {self.frame_ms} ms is outside [1, 1000]")
        if self.model == "gilbert_elliott":
            ceiling = self.burst_frames / (self.burst_frames + 1.0)
            if self.rate > ceiling:
                raise OperatorError(
                    f"packet_loss.rate: {self.rate} is above {ceiling:.3f}, the highest Gilbert–Elliott loss "
                    f"rate with burst_frames={self.burst_frames:g} (entering the bad state would need p > 1)"
                )

    def columns(self, record: dict[str, Any]) -> dict[str, Any]:
        return {"loss_rate_realised": record["loss_rate_realised"]}

    def apply(self, x: np.ndarray, ctx: OpContext) -> tuple[np.ndarray, dict[str, Any]]:
        flen = max(1, int(round(self.frame_ms * ctx.sample_rate_hz / 1000)))
        n_frames = -(-len(x) // flen)
        if self.model == "iid":
            lost = iid_mask(n_frames, self.rate, ctx.rng)
        else:
            lost = gilbert_elliott_mask(n_frames, self.rate, self.burst_frames, ctx.rng)
        y = np.array(x, dtype=np.float32, copy=True)
        last: np.ndarray | None = None
        for i in range(n_frames):
            sl = slice(i * flen, min(len(x), (i + 1) * flen))
            if not lost[i]:
                last = x[sl]
            elif self.concealment == "repeat" and last is not None:
                y[sl] = last[: sl.stop - sl.start]  # only the trailing frame can be shorter
            else:
                y[sl] = 0.0
        bursts = burst_lengths(lost)
        return y, {
            "frame_samples": flen,
            "n_frames": int(n_frames),
            "n_lost": int(lost.sum()),
            "loss_rate_realised": float(lost.mean()) if n_frames else 0.0,
            "mean_burst_frames": float(bursts.mean()) if len(bursts) else 0.0,
            "lost_frames": np.flatnonzero(lost).tolist(),
        }
