"""The ``attacks`` section of an experiment: adversarial attacks on the verifier, run as a stage
after scoring (:mod:`interbias.run.attack_stage`).

::

    attacks:
      kinds: [impostor, lockout]  # impostor: a non-target test is perturbed to be accepted;
                                  # lockout: a target test is perturbed to be rejected
      methods: [pgd]              # fgsm, pgd (white-box), nes (query-based)
      norm: linf                  # linf (budget = ε, full scale 1) or snr (budget = dB over active speech)
      budgets: [0, 0.0005, 0.002, 0.008]   # 0 (linf) or inf (snr): no attack, the clean cell
      steps: 10                   # PGD / NES steps
      step_ratio: 0.25            # step size as a share of the budget
      nes: {samples: 20, sigma: 0.001, queries: 2000}
      trials: 8                   # attacked trials per stratum and kind (eval split, derived seed)
      threshold: eer              # dev-threshold rule: eer, far:X, fixed:X

The attacked audio passes through each cell's test chain (a codec after the attack).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from interbias.encoders.attacks import METHODS, NORMS, WHITE_BOX, AttackParams, check_white_box_labels
from interbias.utils.errors import AnalysisError, ConfigError, EncoderError

KINDS = ("impostor", "lockout")
ATTACK_KEYS = {"kinds", "methods", "norm", "budgets", "steps", "step_ratio", "nes", "trials", "threshold"}
NES_KEYS = {"samples", "sigma", "queries"}


@dataclass(frozen=True)
class AttackSpec:
    """The parsed section: every (kind, method, budget) is attacked on ``trials`` trials per stratum."""

    kinds: tuple[str, ...]
    methods: tuple[str, ...]
    norm: str
    budgets: tuple[float, ...]
    trials: int
    threshold: str = "eer"
    steps: int = 10
    step_ratio: float = 0.25
    nes_samples: int = 20
    nes_sigma: float = 1e-3
    nes_queries: int = 2000

    def params(self, method: str, budget: float) -> AttackParams:
        return AttackParams(
            method,
            self.norm,
            budget,
            steps=self.steps,
            step_ratio=self.step_ratio,
            nes_samples=self.nes_samples,
            nes_sigma=self.nes_sigma,
            queries=self.nes_queries,
        )


def _names(value: Any, valid: tuple[str, ...], where: str, key: str) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items or any(v not in valid for v in items) or len(set(items)) < len(items):
        raise ConfigError(f"{where}: attacks.{key}: {value!r}: distinct values from {', '.join(valid)}")
    return tuple(items)


def _number(value: Any, where: str, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(float(value)):
        raise ConfigError(f"{where}: attacks.{key}: must be a number, got {value!r}")
    return float(value)


def _count(value: Any, where: str, key: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{where}: attacks.{key}: must be an integer >= {minimum}, got {value!r}")
    return value


def parse_attacks(spec: Any, where: str) -> AttackSpec | None:
    """The section, or None when absent; each problem is one :class:`ConfigError` line."""
    if spec is None:
        return None
    if not isinstance(spec, dict):
        raise ConfigError(f"{where}: attacks: must be a mapping ({', '.join(sorted(ATTACK_KEYS))})")
    bad = sorted(set(spec) - ATTACK_KEYS)
    if bad:
        raise ConfigError(f"{where}: unknown key {bad[0]!r} at attacks; valid: {', '.join(sorted(ATTACK_KEYS))}")
    norm = spec.get("norm", "linf")
    if norm not in NORMS:
        raise ConfigError(f"{where}: attacks.norm: {norm!r} is not one of {', '.join(NORMS)}")
    budgets = spec.get("budgets")
    if not isinstance(budgets, list) or not budgets:
        raise ConfigError(f"{where}: attacks.budgets: a non-empty list of budgets (linf: ε; snr: dB)")
    nes = spec.get("nes") or {}
    if not isinstance(nes, dict) or set(nes) - NES_KEYS:
        raise ConfigError(f"{where}: attacks.nes: a mapping of {', '.join(sorted(NES_KEYS))}")
    out = AttackSpec(
        kinds=_names(spec.get("kinds", list(KINDS)), KINDS, where, "kinds"),
        methods=_names(spec.get("methods", ["pgd"]), METHODS, where, "methods"),
        norm=norm,
        budgets=tuple(_number(b, where, "budgets") for b in budgets),
        trials=_count(spec.get("trials"), where, "trials", 1),
        threshold=str(spec.get("threshold", "eer")),
        steps=_count(spec.get("steps", 10), where, "steps", 1),
        step_ratio=_number(spec.get("step_ratio", 0.25), where, "step_ratio"),
        nes_samples=_count(nes.get("samples", 20), where, "nes.samples", 1),
        nes_sigma=_number(nes.get("sigma", 1e-3), where, "nes.sigma"),
        nes_queries=_count(nes.get("queries", 2000), where, "nes.queries", 0),
    )
    if len(set(out.budgets)) < len(out.budgets):
        raise ConfigError(f"{where}: attacks.budgets: repeated budget in {list(budgets)}")
    _check(out, where)
    return out


def _check(spec: AttackSpec, where: str) -> None:
    from interbias.metrics.thresholds import ThresholdRule

    try:
        ThresholdRule.parse(spec.threshold)
    except AnalysisError as exc:
        raise ConfigError(f"{where}: attacks.threshold: {exc}") from None
    for method in spec.methods:
        for budget in spec.budgets:
            try:
                spec.params(method, budget)
            except EncoderError as exc:
                key = "nes.queries" if "query budget" in str(exc) else "budgets"
                raise ConfigError(f"{where}: attacks.{key}: {exc}") from None


def check_attack_labels(exp: Any, labels: Sequence[str]) -> None:
    """Refuse, before anything is loaded, a white-box method of ``exp``'s attacks on an encoder
    label without a differentiable path (``run``'s preflight and ``validate`` both call it)."""
    if exp.attacks is not None and set(exp.attacks.methods) & set(WHITE_BOX):
        check_white_box_labels(labels)


def check_attack_experiment(exp: Any, where: str) -> Any:
    """``exp`` itself; what its attack stage cannot serve is one :class:`ConfigError` line."""
    spec = exp.attacks
    if spec is None:
        return exp
    if exp.spoofing is not None:
        raise ConfigError(
            f"{where}: attacks: adversarial attacks perturb bona fide test utterances against the verification "
            "threshold and cannot serve the spoofing section's spoof trials; run them as separate experiments"
        )
    if exp.trials.list_file is None and exp.trials.dev_share is None and not spec.threshold.startswith("fixed:"):
        raise ConfigError(
            f"{where}: attacks.threshold: {spec.threshold} is chosen on dev trials; set trials.dev_share or use fixed:X"
        )
    for problem, ok in (
        ("trials.enrol_utterances > 1 (an attack targets one enrolment utterance)", exp.trials.enrol_utterances == 1),
        ("trials.operator_draws > 1", exp.trials.operator_draws == 1),
        ("frontend.long_audio: window", exp.frontend.long_audio != "window"),
        (
            "a protocol factor (the attack stage attacks one front end and one enrolment utterance)",
            not any(f.type == "protocol" for f in exp.factors),
        ),
    ):
        if not ok:
            raise ConfigError(f"{where}: attacks: not available with {problem}")
    return exp
