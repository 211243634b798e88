from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import gender_factor

from interbias.experiments.schema import load_experiment
from interbias.utils.errors import ConfigError

BASE = {
    "name": "X1",
    "corpus": "synthetic",
    "factors": [
        gender_factor(),
        {
            "name": "noise",
            "type": "acoustic",
            "apply_to": "test",
            "reference": "clean",
            "levels": {"clean": [], "n5": [{"op": "noise", "kind": "gaussian", "snr_db": 5}]},
        },
    ],
}


def write(tmp_path: Path, data: dict) -> Path:
    p = tmp_path / "X1.yaml"
    p.write_text(yaml.safe_dump(data, sort_keys=False))
    return p


def err(tmp_path: Path, data: dict) -> str:
    with pytest.raises(ConfigError) as exc:
        load_experiment(write(tmp_path, data))
    return str(exc.value)


def test_valid_experiment_cells_and_strata(tmp_path: Path) -> None:
    exp = load_experiment(write(tmp_path, BASE))
    assert [c.id for c in exp.cells()] == [
        "gender=female,noise=clean",
        "gender=female,noise=n5",
        "gender=male,noise=clean",
        "gender=male,noise=n5",
    ]
    assert [s.name for s in exp.strata()] == ["gender=female", "gender=male"]
    cells = exp.cells()
    assert cells[0].test_chain.fingerprint == cells[2].test_chain.fingerprint  # clean == clean
    assert cells[1].enrol_chain.label == "clean" and cells[1].test_chain.label.startswith("noise(")


def test_unknown_top_level_key(tmp_path: Path) -> None:
    msg = err(tmp_path, {**BASE, "fators": []})
    head, valid = msg.split("; valid: ")
    assert head == "X1.yaml: unknown key 'fators' at top level"
    assert {"factors", "corpus", "trials"} <= set(valid.split(", "))  # the key meant is among those named


def test_unknown_operator_lists_valid_names(tmp_path: Path) -> None:
    data = yaml.safe_load(yaml.safe_dump(BASE))
    data["factors"][1]["levels"]["n5"] = [{"op": "nois", "snr_db": 5}]
    msg = err(tmp_path, data)
    assert msg.startswith("X1.yaml: factors[1] (noise).levels.n5[0]: unknown operator 'nois'; valid: ")
    assert "identity" in msg and "noise" in msg


def test_reference_not_a_level(tmp_path: Path) -> None:
    data = yaml.safe_load(yaml.safe_dump(BASE))
    data["factors"][1]["reference"] = "quiet"
    assert err(tmp_path, data) == "X1.yaml: factors[1] (noise).reference: 'quiet' is not a level; valid: clean, n5"


def test_bad_parameter_value(tmp_path: Path) -> None:
    data = yaml.safe_load(yaml.safe_dump(BASE))
    data["factors"][1]["levels"]["n5"] = [{"op": "noise", "kind": "gaussian", "snr_db": "loud"}]
    assert err(tmp_path, data) == "X1.yaml: factors[1] (noise).levels.n5[0]: noise.snr_db: 'loud' is not a number"


def test_unknown_operator_parameter(tmp_path: Path) -> None:
    data = yaml.safe_load(yaml.safe_dump(BASE))
    data["factors"][1]["levels"]["n5"] = [{"op": "noise", "kind": "gaussian", "snr": 5}]
    assert err(tmp_path, data) == (
        "X1.yaml: factors[1] (noise).levels.n5[0]: unknown parameter 'snr' for operator 'noise'; valid: kind, snr_db, noise_dir, n_talkers"
    )


def test_missing_apply_to(tmp_path: Path) -> None:
    data = yaml.safe_load(yaml.safe_dump(BASE))
    del data["factors"][1]["apply_to"]
    assert "apply_to: None is not one of test, enrol, both" in err(tmp_path, data)


def test_variant_overrides(tmp_path: Path) -> None:
    data = {
        **BASE,
        "corpus": "commonvoice",
        "variants": {"synthetic": {"corpus": "synthetic", "trials": {"targets": 7}}},
    }
    path = write(tmp_path, data)
    assert load_experiment(path).corpus.name == "commonvoice"
    v = load_experiment(path, corpus="synthetic")
    assert v.corpus.name == "synthetic" and v.trials.targets == 7 and v.variant == "synthetic"


def test_not_yaml(tmp_path: Path) -> None:
    p = tmp_path / "bad.yaml"
    p.write_text("name: [unclosed\n")
    with pytest.raises(ConfigError, match=r"^bad.yaml:\d+: not valid YAML"):
        load_experiment(p)
