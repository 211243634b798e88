"""What an experiment needs from a corpus (interbias.experiments.requirements): the speakers per
stratum with the dev split, checked against the sampler's own split; recorded inputs left out
visibly or supplied by --noise-dir; a manifest run's description and requires."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from interbias.corpora.manifest import Utterance
from interbias.experiments.requirements import (
    dev_count,
    manifest_form,
    requirements,
    speakers_needed,
    with_noise_dir,
)
from interbias.experiments.schema import load_experiment
from interbias.trials.sampler import split_speakers
from interbias.utils.errors import ConfigError
from interbias.utils.paths import conditions_dir


def _split(n: int, share: float) -> dict[str, int]:
    """How the sampler splits ``n`` speakers of one group."""
    utts = [Utterance(f"s{i}/u", f"s{i}/u.wav", f"s{i}", gender="female") for i in range(n)]
    _, info = split_speakers(utts, share, ("gender",), ("t",))
    return info["groups"]["gender=female"]


@pytest.mark.parametrize(("least", "share"), [(7, 0.3), (10, 0.3), (8, 0.5), (4, 0.2), (3, None)])
def test_speakers_needed_is_the_smallest_group_the_sampler_splits_into_enough(least, share) -> None:
    evaluation, dev = speakers_needed(least, share)
    n = evaluation + dev
    if share is None:
        assert (evaluation, dev) == (least, 0)
        return
    assert _split(n, share) == {"eval": evaluation, "dev": dev}  # the rule is the sampler's
    assert min(evaluation, dev) >= least
    smaller = _split(n - 1, share)
    assert min(smaller["eval"], smaller["dev"]) < least


def test_e16_needs_22_speakers_per_gender() -> None:
    req = requirements(load_experiment(conditions_dir() / "E16.yaml"))
    assert req.speakers is not None and req.speakers.text() == "≥ 22 speakers per gender (15 evaluation + 7 dev)"
    assert [a.text() for a in req.attributes] == ["gender (female, male)"]
    assert dev_count(22, 0.3) == 7 and dev_count(1, 0.3) == 0


def _noisy(tmp_path: Path, reference: str = "clean") -> Path:
    gone = str(tmp_path / "no-such-noise")
    data = {
        "name": "T01",
        "corpus": "synthetic",
        "description": "gender × noise, the experiment's own words",
        "requires": "a corpus nobody has",
        "factors": [
            {"name": "gender", "type": "population", "attribute": "gender", "reference": "female",
             "levels": {"female": "female", "male": "male"}},
            {"name": "noise", "type": "acoustic", "apply_to": "test", "reference": reference,
             "levels": {"clean": [], "g5": [{"op": "noise", "kind": "gaussian", "snr_db": 5}],
                        "env_15": [{"op": "noise", "kind": "environmental", "snr_db": 15, "noise_dir": gone}],
                        "env_5": [f"noise:kind=environmental,snr_db=5,noise_dir={gone}"]}},
        ],
        "trials": {"targets": 10, "min_speakers": 2},
        "variants": {"synthetic": {"description": "on the synthetic corpus"}},
    }  # fmt: skip
    path = tmp_path / "T01.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_missing_noise_is_left_out_visibly_and_requires_is_derived(tmp_path: Path) -> None:
    exp = manifest_form(load_experiment(_noisy(tmp_path), corpus="synthetic"))
    noise = exp.factors[1]
    assert noise.level_names == ["clean", "g5"]
    assert [left.line() for left in exp.left_out] == ["env_15/5 left out: they need recorded noise: --noise-dir DIR"]
    assert exp.resolved()["left_out"] == [
        {"factor": "noise", "levels": ["env_15", "env_5"], "need": "recorded noise", "fix": "--noise-dir DIR"}
    ]
    assert exp.description == "gender × noise, the experiment's own words"  # not the variant's corpus
    assert exp.variant == "synthetic"
    assert exp.requires == (
        "a manifest with gender (female, male); ≥ 2 speakers per gender, each with ≥ 2 utterances; "
        "recorded noise for env_15/5 (--noise-dir DIR)"
    )


def test_noise_dir_supplies_the_environmental_levels(tmp_path: Path) -> None:
    folder = tmp_path / "noise"
    folder.mkdir()
    (folder / "hum.wav").write_bytes(b"")
    exp = manifest_form(load_experiment(_noisy(tmp_path)), noise_dir=folder)
    assert exp.left_out == ()
    env = [lv for lv in exp.factors[1].levels if lv.name.startswith("env")]
    assert [op.noise_dir for lv in env for op in lv.test.ops] == [str(folder.resolve())] * 2
    with pytest.raises(ConfigError, match=r"--noise-dir .*: not a folder"):
        with_noise_dir(load_experiment(_noisy(tmp_path)), tmp_path / "nothing")


def test_a_reference_level_without_its_recordings_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="the reference level noise=env_15 needs recorded noise: --noise-dir DIR"):
        manifest_form(load_experiment(_noisy(tmp_path, reference="env_15")))


def test_numeric_values_are_listed_in_numeric_order() -> None:
    """E07 selects years_from_first 0..20: the need lists 2 before 10 (not 0, 1, 10, 11, …)."""
    from interbias.experiments.requirements import requirements

    exp = load_experiment(conditions_dir() / "E07.yaml")
    need = next(n for n in requirements(exp).attributes if n.attribute == "years_from_first")
    assert need.values is not None and list(need.values) == [str(i) for i in range(21)]
