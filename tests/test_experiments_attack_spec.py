"""The ``attacks`` section (interbias.experiments.attack_spec): parsed values and one-line refusals."""

from __future__ import annotations

import math

import pytest
from conftest import VAD, gender_factor

from interbias.experiments.schema import parse_experiment
from interbias.utils.errors import ConfigError


def experiment(attacks: dict | None, **extra) -> dict:
    data = {
        "name": "T24",
        "corpus": "synthetic",
        "factors": [gender_factor()],
        "trials": {"targets": 40, "dev_share": 0.3},
        **extra,
    }
    if attacks is not None:
        data["attacks"] = attacks
    return data


def error(data: dict) -> str:
    with pytest.raises(ConfigError) as err:
        parse_experiment(data, where="T24.yaml")
    assert "\n" not in str(err.value)
    return str(err.value)


def test_section_parses_with_defaults():
    exp = parse_experiment(experiment({"budgets": [0, 0.002], "trials": 5}), where="T24.yaml")
    spec = exp.attacks
    assert spec is not None
    assert spec.kinds == ("impostor", "lockout") and spec.methods == ("pgd",) and spec.norm == "linf"
    assert spec.budgets == (0.0, 0.002) and spec.trials == 5 and spec.threshold == "eer"
    assert spec.params("pgd", 0.0).is_clean and not spec.params("pgd", 0.002).is_clean


def test_snr_budgets_take_inf_for_no_attack():
    exp = parse_experiment(
        experiment({"norm": "snr", "budgets": [math.inf, 30, 20], "methods": ["fgsm"], "trials": 2}), where="x"
    )
    assert exp.attacks is not None and exp.attacks.params("fgsm", math.inf).is_clean


def test_no_section_leaves_the_experiment_as_it_was():
    assert parse_experiment(experiment(None), where="T24.yaml").attacks is None


@pytest.mark.parametrize(
    ("attacks", "extra", "message"),
    [
        ({"budgets": [0, 0.9], "trials": 2}, {},
         "T24.yaml: attacks.budgets: linf budget 0.9 is out of range: ε must lie in [0, 0.5] (full scale 1)"),
        ({"norm": "snr", "budgets": [100], "trials": 2}, {},
         "T24.yaml: attacks.budgets: snr budget 100.0 dB is out of range: use -10..80 dB, or inf for no attack"),
        ({"methods": ["nes"], "budgets": [0.01], "trials": 2, "nes": {"queries": 0}}, {},
         "T24.yaml: attacks.nes.queries: nes query budget 0 allows no step"),
        ({"budgets": [0.01], "trials": 2}, {"spoofing": {"attacks": "spoofs.csv"}},
         "T24.yaml: attacks: adversarial attacks perturb bona fide test utterances against the verification "
         "threshold and cannot serve the spoofing section's spoof trials; run them as separate experiments"),
        ({"budgets": [0.01], "trials": 0}, {}, "T24.yaml: attacks.trials: must be an integer >= 1, got 0"),
        ({"budgets": [0.01], "trials": 2, "methods": ["cw"]}, {},
         "T24.yaml: attacks.methods: ['cw']: distinct values from fgsm, pgd, nes"),
        ({"budgets": [0.01], "trials": 2, "kinds": "spoof"}, {},
         "T24.yaml: attacks.kinds: 'spoof': distinct values from impostor, lockout"),
        ({"budgets": [0.01], "trials": 2, "threshold": "far:2"}, {},
         "T24.yaml: attacks.threshold: threshold rule 'far:2': the target FAR must be in [0, 1)"),
        ({"budgets": [0.01], "trials": 2, "foo": 1}, {}, "T24.yaml: unknown key 'foo' at attacks"),
    ],
)  # fmt: skip
def test_bad_sections_are_one_line(attacks, extra, message):
    assert error(experiment(attacks, **extra)).startswith(message)


def test_eer_threshold_needs_a_dev_split():
    data = experiment({"budgets": [0.01], "trials": 2})
    data["trials"] = {"targets": 40}
    assert error(data) == (
        "T24.yaml: attacks.threshold: eer is chosen on dev trials; set trials.dev_share or use fixed:X"
    )
    data["attacks"]["threshold"] = "fixed:0.5"
    assert parse_experiment(data, where="T24.yaml").attacks is not None


def test_a_protocol_factor_is_refused():
    data = experiment({"budgets": [0.01], "trials": 2})
    data["factors"].append(VAD)
    assert error(data) == (
        "T24.yaml: attacks: not available with a protocol factor "
        "(the attack stage attacks one front end and one enrolment utterance)"
    )
