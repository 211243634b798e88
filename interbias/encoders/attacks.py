"""Adversarial perturbations of a waveform against one enrolment vector: white-box FGSM and PGD
on an encoder's differentiable torch path, and query-based NES (FakeBob-style) for any encoder.

The objective is the cosine score ``s(x) = cos(embed(x), enrol)``: an *impostor* attack
(``direction`` +1) raises it so a non-target test is accepted, a *lock-out* attack
(``direction`` −1) lowers it so a target test is rejected. Budgets:

- ``linf``: ``max |δ| ≤ ε`` (``budget`` = ε, full scale 1.0; 0 is no attack);
- ``snr``: ``10·log10(P_s / mean(δ²)) ≥ budget`` dB, with ``P_s`` the mean square of the clean
  utterance's active speech (:func:`interbias.audio.level.active_mask`, 40 dB range), i.e. δ in
  the L2 ball of radius ``r = sqrt(N · P_s · 10^(−budget/10))`` (``inf`` is no attack).

Steps: FGSM ``δ = ε·sign(∇)`` (linf) or ``δ = r·sign(∇)/‖sign(∇)‖`` (snr: the sign step scaled
onto the ball's surface); PGD from δ = 0, ``steps`` steps of ``α = step_ratio·ε`` along
``sign(∇)`` (linf) or of ``α = step_ratio·r`` along ``∇/‖∇‖`` (snr), each projected back onto the
budget; NES estimates ∇ from ``nes_samples`` antithetic Gaussian pairs,
``ĝ = Σ_i (s(x+σu_i) − s(x−σu_i))·u_i / (2σn)``, and steps as PGD does, stopping when the
attacker's own decision flips or the next step would pass ``queries`` (a query budget too small
for one step, ``queries < 2·nes_samples + 2``, is refused). After every step the attacked
waveform is clipped to [−1, 1] (the perturbation is what remains after the clip).

Every method keeps its best iterate: of the unperturbed start and each step's result, the one
whose score ``s`` is furthest toward the attacker's goal (``direction·s`` largest; a tie keeps
the earlier, smaller perturbation). A budget that cannot move the score toward the goal returns
the input itself (``kept_step`` 0), so the attack never leaves a trial worse than clean.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from interbias.audio.level import active_mask, active_power
from interbias.encoders.card import NO_GRADIENT
from interbias.utils.errors import EncoderError

METHODS = ("fgsm", "pgd", "nes")
WHITE_BOX = ("fgsm", "pgd")
NORMS = ("linf", "snr")
#: Accepted budgets: linf ε in [0, LINF_MAX]; snr in [SNR_RANGE_DB] dB or inf (no attack).
LINF_MAX = 0.5
SNR_RANGE_DB = (-10.0, 80.0)

Score = Callable[[np.ndarray], float]
ScoreGrad = Callable[[np.ndarray], tuple[float, np.ndarray]]


@dataclass(frozen=True)
class AttackParams:
    """One attack: method, budget norm and size, and the method's knobs (see the module docs)."""

    method: str
    norm: str
    budget: float
    steps: int = 10
    step_ratio: float = 0.25
    nes_samples: int = 20
    nes_sigma: float = 1e-3
    queries: int = 0

    def __post_init__(self) -> None:
        check_params(self)

    @property
    def is_clean(self) -> bool:
        """Whether the budget admits no perturbation (ε = 0, or SNR = inf)."""
        return self.budget == 0.0 if self.norm == "linf" else math.isinf(self.budget)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        if self.method != "nes":
            for k in ("nes_samples", "nes_sigma", "queries"):
                out.pop(k)
        if self.method == "fgsm":
            out.pop("steps")
            out.pop("step_ratio")
        return out


def check_params(p: AttackParams) -> None:
    """One :class:`EncoderError` line per bad value."""
    if p.method not in METHODS:
        raise EncoderError(f"attack method {p.method!r}: valid: {', '.join(METHODS)}")
    if p.norm not in NORMS:
        raise EncoderError(f"attack norm {p.norm!r}: valid: {', '.join(NORMS)}")
    b = float(p.budget)
    if p.norm == "linf" and not 0.0 <= b <= LINF_MAX:
        raise EncoderError(f"linf budget {p.budget!r} is out of range: ε must lie in [0, {LINF_MAX:g}] (full scale 1)")
    lo, hi = SNR_RANGE_DB
    if p.norm == "snr" and not (math.isinf(b) and b > 0) and not lo <= b <= hi:
        raise EncoderError(f"snr budget {p.budget!r} dB is out of range: use {lo:g}..{hi:g} dB, or inf for no attack")
    if p.steps < 1 or not 0 < p.step_ratio <= 1:
        raise EncoderError(f"attack steps {p.steps} / step_ratio {p.step_ratio}: need steps ≥ 1, 0 < step_ratio ≤ 1")
    if p.method == "nes":
        if p.nes_samples < 1 or not p.nes_sigma > 0:
            raise EncoderError(f"nes: nes_samples must be ≥ 1 and nes_sigma > 0, got {p.nes_samples}, {p.nes_sigma}")
        need = nes_step_queries(p.nes_samples) + 1
        if p.queries < need:
            raise EncoderError(
                f"nes query budget {p.queries} allows no step: the clean check takes 1 query and each step "
                f"2·nes_samples + 1 = {need - 1}; use queries ≥ {need}"
            )


def nes_step_queries(samples: int) -> int:
    """Queries one NES step spends: ``samples`` antithetic pairs and one query of its result."""
    return 2 * samples + 1


@dataclass(frozen=True)
class Attacked:
    """The attacked waveform (float32) and what it took: L∞ and SNR of its perturbation against
    the clean one, gradient steps taken and score queries spent (white-box: 0 queries); the
    attack's own score ``s`` at the kept iterate and at the unperturbed start, and which iterate
    was kept (``kept_step`` 0: the unperturbed input, the budget moved nothing toward the goal)."""

    wave: np.ndarray
    linf: float
    snr_db: float
    steps: int
    queries: int
    score: float = math.nan
    start_score: float = math.nan
    kept_step: int = 0
    budget: float = math.nan


@dataclass
class Best:
    """The best iterate so far: ``direction·score`` largest, the earlier one on a tie."""

    direction: int
    delta: np.ndarray
    score: float
    step: int = 0
    start: float = field(init=False)

    def __post_init__(self) -> None:
        self.start = self.score

    def offer(self, delta: np.ndarray, score: float, step: int) -> None:
        if self.direction * score > self.direction * self.score:
            self.delta, self.score, self.step = delta, score, step


def speech_power(x: np.ndarray, sample_rate_hz: int) -> float:
    """``P_s``: mean square of the active speech of ``x`` (the SNR budget's reference)."""
    return active_power(x, active_mask(x, sample_rate_hz))


def achieved(x: np.ndarray, attacked: np.ndarray, p_speech: float) -> tuple[float, float]:
    """(L∞, SNR dB) of ``attacked − x``; SNR is inf for no perturbation."""
    delta = attacked.astype(np.float64) - x.astype(np.float64)
    power = float(np.mean(delta**2))
    linf = float(np.max(np.abs(delta))) if delta.size else 0.0
    return linf, (math.inf if power == 0 else 10 * math.log10(p_speech / power))


def radius(p: AttackParams, n: int, p_speech: float) -> float:
    """The budget as a radius: ε (linf) or the L2 radius of the SNR ball."""
    if p.norm == "linf":
        return float(p.budget)
    return math.sqrt(n * p_speech * 10 ** (-float(p.budget) / 10))


def project(delta: np.ndarray, x: np.ndarray, norm: str, r: float) -> np.ndarray:
    """δ onto the budget (linf box or L2 ball of radius ``r``), then x + δ clipped to [−1, 1]."""
    if norm == "linf":
        delta = np.clip(delta, -r, r)
    else:
        size = float(np.linalg.norm(delta))
        if size > r:
            delta = delta * (r / size)
    return np.clip(x + delta, -1.0, 1.0) - x


def step(grad: np.ndarray, norm: str, alpha: float) -> np.ndarray:
    """A step of size ``alpha`` up ``grad``: ``alpha·sign`` (linf) or ``alpha·g/‖g‖`` (snr)."""
    if norm == "linf":
        return alpha * np.sign(grad)
    size = float(np.linalg.norm(grad))
    return np.zeros_like(grad) if size == 0 else alpha * grad / size


def fgsm(x: np.ndarray, score_grad: ScoreGrad, p: AttackParams, p_speech: float, direction: int) -> Best:
    """One signed-gradient step of the full budget, kept if it beats the start (module docs)."""
    x64 = x.astype(np.float64)
    start, grad = score_grad(x64)
    best = Best(direction, np.zeros_like(x64), start)
    sign = np.sign(direction * grad)
    r = radius(p, x.size, p_speech)
    if p.norm == "linf":
        delta = project(r * sign, x64, "linf", r)
    else:
        size = float(np.linalg.norm(sign))
        delta = project(np.zeros_like(x64) if size == 0 else r * sign / size, x64, "snr", r)
    best.offer(delta, score_grad(x64 + delta)[0], 1)
    return best


def pgd(x: np.ndarray, score_grad: ScoreGrad, p: AttackParams, p_speech: float, direction: int) -> Best:
    """``p.steps`` projected steps from δ = 0; the best of the start and every step (module docs)."""
    x64 = x.astype(np.float64)
    r = radius(p, x.size, p_speech)
    delta = np.zeros_like(x64)
    best: Best | None = None
    for i in range(p.steps + 1):
        s, grad = score_grad(x64 + delta)
        if best is None:
            best = Best(direction, delta, s)
        best.offer(delta, s, i)
        if i < p.steps:
            delta = project(delta + step(direction * grad, p.norm, p.step_ratio * r), x64, p.norm, r)
    assert best is not None
    return best


def nes_gradient(score: Score, x: np.ndarray, sigma: float, pairs: int, rng: np.random.Generator) -> np.ndarray:
    """NES estimate of ∇score at ``x`` from ``pairs`` antithetic Gaussian pairs (2·pairs queries)."""
    grad = np.zeros(x.shape, dtype=np.float64)
    for _ in range(pairs):
        u = rng.standard_normal(x.shape)
        grad += (score(x + sigma * u) - score(x - sigma * u)) * u
    return grad / (2 * sigma * pairs)


def nes(
    x: np.ndarray,
    score: Score,
    p: AttackParams,
    p_speech: float,
    direction: int,
    accepts: Callable[[float], bool],
    rng: np.random.Generator,
) -> tuple[Best, int, int]:
    """NES attack (FakeBob-style): (best iterate, steps, queries). ``accepts(score)`` is the
    attacker's success test; one query checks the clean input, one each step's result."""
    x64 = x.astype(np.float64)
    r = radius(p, x.size, p_speech)
    delta = np.zeros_like(x64)
    queries, steps = 1, 0
    best = Best(direction, delta, score(x64))
    if accepts(best.score):
        return best, steps, queries
    while steps < p.steps and queries + nes_step_queries(p.nes_samples) <= p.queries:
        grad = nes_gradient(score, x64 + delta, p.nes_sigma, p.nes_samples, rng)
        delta = project(delta + step(direction * grad, p.norm, p.step_ratio * r), x64, p.norm, r)
        queries += nes_step_queries(p.nes_samples)
        steps += 1
        s = score(x64 + delta)
        best.offer(delta, s, steps)
        if accepts(s):
            break
    return best, steps, queries


def white_box(encoder: Any) -> Callable[[Any], Any]:
    """The encoder's differentiable path ``torch_embed`` (a (T,) float tensor → embedding), or
    one :class:`EncoderError` line refusing the white-box attack and naming the query-based one."""
    path = getattr(encoder, "torch_embed", None)
    if path is None:
        label = getattr(encoder, "label", type(encoder).__name__)
        raise white_box_refusal(label, getattr(encoder, "no_gradient_reason", NO_GRADIENT))
    return path


def white_box_refusal(label: str, why: str) -> EncoderError:
    """The one line refusing white-box attacks on ``label`` (``why``: its card's or class's reason)."""
    return EncoderError(
        f"{label}: white-box attacks (fgsm, pgd) are refused: {why}; use method: nes (query-based, any encoder)"
    )


def check_white_box_labels(labels: Sequence[str]) -> None:
    """Refuse, from the encoder cards alone (nothing loaded), a white-box attack on a registered
    label whose card gives a ``no_gradient_reason`` (``LABEL+orca:REF``: its base label's card)."""
    from interbias.encoders import ENCODERS

    for label in labels:
        base = label.split("+orca:")[0]
        if base in ENCODERS and (why := ENCODERS.get(base).no_gradient_reason):
            raise white_box_refusal(label, why)


def torch_score_grad(embed: Callable[[Any], Any], enrol: np.ndarray) -> ScoreGrad:
    """(cosine score, its gradient with respect to the waveform) through ``embed``."""
    import torch

    target = torch.as_tensor(np.asarray(enrol, dtype=np.float64))

    def score_grad(x: np.ndarray) -> tuple[float, np.ndarray]:
        with torch.enable_grad():
            wave = torch.tensor(np.asarray(x, dtype=np.float32), requires_grad=True)
            s = torch.nn.functional.cosine_similarity(embed(wave).to(torch.float64), target, dim=0)
            s.backward()
        assert wave.grad is not None
        return float(s.detach()), wave.grad.to(torch.float64).numpy()

    return score_grad


def query_score(encoder: Any, enrol: np.ndarray) -> Score:
    """The black-box score: ``encoder.embed`` (its run-time path, e.g. onnxruntime) · enrol."""
    unit = np.asarray(enrol, dtype=np.float64)
    unit = unit / np.linalg.norm(unit)

    def score(x: np.ndarray) -> float:
        vec = encoder.embed([np.asarray(x, dtype=np.float32)])[0].astype(np.float64)
        return float(vec @ unit)

    return score


def attack(
    x: np.ndarray,
    encoder: Any,
    enrol: np.ndarray,
    p: AttackParams,
    *,
    sample_rate_hz: int,
    direction: int,
    threshold: float,
    rng: np.random.Generator,
) -> Attacked:
    """Attack float32 ``x`` against ``enrol`` under ``p`` (see the module docs); a clean budget
    returns ``x`` itself. ``threshold`` is the decision NES stops at (accept: score ≥ threshold)."""
    if direction not in (1, -1):
        raise EncoderError(f"attack direction {direction}: +1 (impostor) or -1 (lock-out)")
    x = np.asarray(x, dtype=np.float32)
    if p.method in WHITE_BOX:
        grad_path = torch_score_grad(white_box(encoder), enrol)
    if p.is_clean:
        return Attacked(x, 0.0, math.inf, 0, 0, budget=p.budget)
    p_speech = speech_power(x, sample_rate_hz)
    steps, queries = (1 if p.method == "fgsm" else p.steps), 0
    if p.method == "fgsm":
        best = fgsm(x, grad_path, p, p_speech, direction)
    elif p.method == "pgd":
        best = pgd(x, grad_path, p, p_speech, direction)
    else:

        def accepts(s: float) -> bool:
            return (s >= threshold) == (direction > 0)

        best, steps, queries = nes(x, query_score(encoder, enrol), p, p_speech, direction, accepts, rng)
    wave = x if best.step == 0 else (x.astype(np.float64) + best.delta).astype(np.float32)
    linf, snr = achieved(x, wave, p_speech)
    return Attacked(wave, linf, snr, steps, queries, best.score, best.start, best.step, p.budget)


def strength(p: AttackParams) -> float:
    """Sort key of budgets from the smallest perturbation allowed: ε (linf) or −dB (snr)."""
    return float(p.budget) if p.norm == "linf" else -float(p.budget)


def nested_best(results: list[tuple[AttackParams, Attacked]], direction: int) -> list[Attacked]:
    """Each budget's attack replaced by the best (``direction·score``) of its own and every
    smaller budget's of the same method and norm: a smaller budget's perturbation lies inside a
    larger one's, so the kept iterate's score is monotone in the budget. Same order as given;
    a carried result keeps its own ``budget`` (the one that found it)."""
    best: dict[tuple[str, str], Attacked] = {}
    out: dict[int, Attacked] = {}
    for i in sorted(range(len(results)), key=lambda i: strength(results[i][0])):
        p, hit = results[i]
        prev = best.get((p.method, p.norm))
        if prev is None or math.isnan(prev.score) or direction * hit.score > direction * prev.score:
            prev = best[(p.method, p.norm)] = hit
        out[i] = prev
    return [out[i] for i in range(len(results))]
