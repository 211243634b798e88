"""FGSM, PGD and NES (interbias.encoders.attacks) on a tiny differentiable encoder, checked
against hand-computed gradients; the SNR budget; the one-line refusals."""

from __future__ import annotations

import math
from itertools import pairwise

import numpy as np
import pytest
import torch

from interbias.encoders.attacks import (
    AttackParams,
    achieved,
    attack,
    nes_gradient,
    nested_best,
    speech_power,
    white_box,
)
from interbias.utils.errors import EncoderError
from interbias.utils.seeding import derive_rng

RATE = 16000


class Linear:
    """embed(x) = W x: the cosine's gradient has a closed form."""

    label = "tiny"

    def __init__(self, n: int, d: int = 4) -> None:
        self.w = derive_rng("tiny-encoder").standard_normal((d, n))

    def torch_embed(self, wave: torch.Tensor) -> torch.Tensor:
        return torch.as_tensor(self.w) @ wave.to(torch.float64)

    def embed(self, waves: list[np.ndarray]) -> np.ndarray:
        out = np.stack([self.w @ np.asarray(w, np.float64) for w in waves])
        return (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float32)


def cosine_grad(w: np.ndarray, x: np.ndarray, e: np.ndarray) -> np.ndarray:
    """d/dx cos(Wx, e) = Wᵀ (e/(‖y‖‖e‖) − cos · y/‖y‖²), y = Wx (by hand)."""
    y = w @ x
    ny, ne = np.linalg.norm(y), np.linalg.norm(e)
    cos = y @ e / (ny * ne)
    return w.T @ (e / (ny * ne) - cos * y / ny**2)


def speech(n: int = 1600) -> np.ndarray:
    t = np.arange(n) / RATE
    return (0.3 * np.sin(2 * np.pi * 200 * t) * (1 + 0.5 * np.sin(2 * np.pi * 3 * t))).astype(np.float32)


def test_fgsm_linf_is_the_hand_computed_sign_gradient_step():
    x = speech(400)
    enc = Linear(x.size)
    e = derive_rng("enrol").standard_normal(4)
    for direction in (1, -1):
        out = attack(x, enc, e, AttackParams("fgsm", "linf", 0.01), sample_rate_hz=RATE, direction=direction,
                     threshold=0.0, rng=derive_rng("r"))  # fmt: skip
        want = x.astype(np.float64) + 0.01 * np.sign(direction * cosine_grad(enc.w, x.astype(np.float64), e))
        np.testing.assert_array_equal(out.wave, want.astype(np.float32))
        assert out.linf == pytest.approx(0.01, abs=1e-7)
        got = float(enc.embed([out.wave])[0] @ (e / np.linalg.norm(e)))
        clean = float(enc.embed([x])[0] @ (e / np.linalg.norm(e)))
        assert (got - clean) * direction > 0


@pytest.mark.parametrize("method", ["fgsm", "pgd"])
@pytest.mark.parametrize("snr", [10.0, 25.0, 40.0])
def test_snr_budget_is_met_within_a_tenth_of_a_db(method, snr):
    x = speech()
    enc = Linear(x.size)
    e = derive_rng("enrol").standard_normal(4)
    p = AttackParams(method, "snr", snr, steps=20, step_ratio=0.5)
    out = attack(x, enc, e, p, sample_rate_hz=RATE, direction=1, threshold=0.0, rng=derive_rng("r"))
    # independent: active-speech power over the perturbation's mean square
    delta = out.wave.astype(np.float64) - x
    measured = 10 * math.log10(speech_power(x, RATE) / np.mean(delta**2))
    assert measured == pytest.approx(out.snr_db, abs=1e-9)
    assert measured >= snr - 0.1
    if method == "fgsm":  # the sign step lands on the budget's surface
        assert abs(measured - snr) < 0.1


def test_pgd_linf_stays_in_the_box_and_beats_fgsm_on_the_objective():
    x = speech(400)
    enc = Linear(x.size)
    e = derive_rng("enrol").standard_normal(4)
    unit = e / np.linalg.norm(e)
    scores = {}
    for method in ("fgsm", "pgd"):
        p = AttackParams(method, "linf", 0.002, steps=20, step_ratio=0.1)
        out = attack(x, enc, e, p, sample_rate_hz=RATE, direction=1, threshold=0.0, rng=derive_rng("r"))
        assert np.max(np.abs(out.wave.astype(np.float64) - x)) <= 0.002 + 1e-7
        scores[method] = float(enc.embed([out.wave])[0] @ unit)
    assert scores["pgd"] >= scores["fgsm"] - 1e-6


def test_nes_converges_to_the_true_gradient_direction():
    n = 64
    a = derive_rng("toy-a").standard_normal(n)
    b = derive_rng("toy-b").standard_normal((n, n)) * 0.05
    x0 = derive_rng("toy-x").standard_normal(n) * 0.1

    def score(x: np.ndarray) -> float:  # smooth: linear plus a small quadratic
        return float(a @ x + 0.5 * x @ (b @ x))

    truth = a + 0.5 * (b + b.T) @ x0
    cos = []
    for pairs in (10, 100, 2000):
        g = nes_gradient(score, x0, 1e-3, pairs, derive_rng("nes", pairs))
        cos.append(float(g @ truth / (np.linalg.norm(g) * np.linalg.norm(truth))))
    assert cos[0] < cos[1] < cos[2]
    assert cos[2] > 0.98


def test_nes_counts_queries_and_stops_at_the_budget():
    x = speech(400)
    enc = Linear(x.size)
    e = derive_rng("enrol").standard_normal(4)
    p = AttackParams("nes", "linf", 0.01, steps=50, nes_samples=5, queries=40)
    out = attack(x, enc, e, p, sample_rate_hz=RATE, direction=1, threshold=1.1, rng=derive_rng("r"))
    assert out.queries == 1 + 3 * 11  # clean check, then 3 steps of 2·5 + 1 queries fit in 40
    assert out.steps == 3
    assert out.linf <= 0.01 + 1e-7


def test_a_clean_budget_returns_the_input_itself():
    x = speech(400)
    enc = Linear(x.size)
    for p in (AttackParams("pgd", "linf", 0.0), AttackParams("fgsm", "snr", math.inf)):
        out = attack(x, enc, np.ones(4), p, sample_rate_hz=RATE, direction=1, threshold=0.0, rng=derive_rng("r"))
        assert out.wave.tobytes() == x.tobytes() and out.linf == 0 and math.isinf(out.snr_db)


def test_achieved_reports_linf_and_snr():
    x = np.full(100, 0.5, np.float32)
    y = x + np.float32(0.05)
    linf, snr = achieved(x, y, 0.25)
    assert linf == pytest.approx(0.05, abs=1e-7)
    assert snr == pytest.approx(10 * math.log10(0.25 / 0.05**2), abs=1e-4)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (dict(method="pgd", norm="linf", budget=0.9), "linf budget 0.9 is out of range: ε must lie in [0, 0.5]"),
        (dict(method="pgd", norm="linf", budget=-0.1), "linf budget -0.1 is out of range"),
        (dict(method="fgsm", norm="snr", budget=120.0), "snr budget 120.0 dB is out of range: use -10..80 dB"),
        (dict(method="nes", norm="linf", budget=0.01, queries=0), "nes query budget 0 allows no step"),
        (
            dict(method="nes", norm="linf", budget=0.01, nes_samples=20, queries=41),
            "nes query budget 41 allows no step: the clean check takes 1 query and each step 2·nes_samples + 1 = 41; "
            "use queries ≥ 42",
        ),
        (dict(method="cw", norm="linf", budget=0.01), "attack method 'cw': valid: fgsm, pgd, nes"),
    ],
)
def test_bad_attack_parameters_are_one_line(params, message):
    with pytest.raises(EncoderError) as err:
        AttackParams(**params)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_white_box_refused_without_a_differentiable_path():
    class Opaque:
        label = "GE2E"
        no_gradient_reason = "its VAD runs outside torch"

    with pytest.raises(EncoderError) as err:
        white_box(Opaque())
    assert str(err.value) == (
        "GE2E: white-box attacks (fgsm, pgd) are refused: its VAD runs outside torch; "
        "use method: nes (query-based, any encoder)"
    )


@pytest.mark.parametrize("method", ["fgsm", "pgd", "nes"])
@pytest.mark.parametrize("direction", [1, -1])
def test_an_attack_that_cannot_move_the_score_keeps_the_input(method, direction):
    """The enrolment is the test's own embedding (score +1) or its opposite (−1): no iterate can go
    further toward the goal, so every budget returns the input itself, kept_step 0."""
    x = speech(400)
    enc = Linear(x.size)
    e = direction * (enc.w @ x.astype(np.float64))
    for budget in (0.001, 0.05, 0.5):
        p = AttackParams(method, "linf", budget, steps=4, step_ratio=0.5, nes_samples=3, queries=100)
        out = attack(x, enc, e, p, sample_rate_hz=RATE, direction=direction, threshold=2.0 * direction,
                     rng=derive_rng("r"))  # fmt: skip
        assert out.wave.tobytes() == x.tobytes() and out.linf == 0 and out.kept_step == 0
        assert out.score == out.start_score == pytest.approx(direction, abs=1e-6)


@pytest.mark.parametrize("method", ["fgsm", "pgd"])
def test_the_score_never_falls_as_the_budget_grows(method):
    """A full-budget step overshoots at large ε on this encoder (seen: FGSM 0.950 at ε 0.01, 0.871 at
    0.2); the kept iterate of each budget is at least the start and at least every smaller budget's."""
    x = speech(400)
    enc = Linear(x.size)
    budgets = [0.0, 0.5, 0.001, 0.2, 0.01, 0.05]  # any order
    fell = False
    for k in range(6):
        e = derive_rng("enrol", k).standard_normal(4)
        unit = e / np.linalg.norm(e)
        runs = []
        for b in budgets:
            p = AttackParams(method, "linf", b, steps=5, step_ratio=0.5)
            runs.append((p, attack(x, enc, e, p, sample_rate_hz=RATE, direction=1, threshold=0.0, rng=derive_rng("r"))))
        own = {p.budget: float(enc.embed([a.wave])[0] @ unit) for p, a in runs}
        clean = own[0.0]
        assert all(s >= clean - 1e-6 for s in own.values())  # never below the unperturbed start
        ordered = [own[b] for b in sorted(budgets)]
        fell |= any(b < a - 1e-6 for a, b in pairwise(ordered))
        kept = {p.budget: a for p, a in zip([p for p, _ in runs], nested_best(runs, 1), strict=True)}
        scores = [float(enc.embed([kept[b].wave])[0] @ unit) for b in sorted(budgets)]
        assert all(b >= a - 1e-6 for a, b in pairwise(scores)), scores
        for b in budgets:
            assert kept[b].budget <= b and kept[b].linf <= b + 1e-7  # a smaller budget's audio fits a larger one
    assert fell  # the case is real: some budget's own best is below a smaller budget's


def test_the_cards_say_what_the_loaded_encoders_do():
    """``validate`` and ``run``'s preflight refuse white-box attacks from the card, before loading:
    the card's reason is empty exactly when the loaded encoder has a differentiable path."""
    from interbias.encoders import ENCODERS, load_encoder
    from interbias.encoders.attacks import check_white_box_labels

    for label in ("mfcc-stats", "GE2E"):
        enc = load_encoder(label)
        assert (ENCODERS.get(label).no_gradient_reason == "") == hasattr(enc, "torch_embed")
        if hasattr(enc, "torch_embed"):
            check_white_box_labels([label])
        else:
            with pytest.raises(EncoderError) as card:
                check_white_box_labels([label])
            with pytest.raises(EncoderError) as loaded:
                white_box(enc)
            assert str(card.value) == str(loaded.value)
    assert ENCODERS.get("CAM++").no_gradient_reason == ""  # its torch_embed: tests/test_encoders_campplus.py
