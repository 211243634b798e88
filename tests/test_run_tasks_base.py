"""The Task interface (interbias.run.tasks.base): one task per experiment kind, and what a
countermeasure or tracks task refuses before any work — CMs added with ``--cm`` and a user's
corpus (``--manifest``, ``--data-root``, ``--trials``), which such an experiment would ignore."""

from __future__ import annotations

from pathlib import Path

import pytest

from interbias.experiments.kinds import KINDS
from interbias.experiments.schema import load_experiment
from interbias.run.inputs import RunOptions
from interbias.run.tasks import TASKS, task_of
from interbias.run.tasks.base import check_own_data
from interbias.utils.errors import ConfigError
from interbias.utils.paths import conditions_dir


def test_every_kind_has_one_task_and_only_verification_embeds() -> None:
    assert sorted(t.kind for t in TASKS.registered()) == sorted(KINDS)
    assert [t.kind for t in TASKS.registered() if t.embeds] == ["verification"]


@pytest.mark.parametrize(
    ("flag", "value"), [("manifest", Path("calls.csv")), ("data_root", Path("calls")), ("trials", Path("t.txt"))]
)
def test_a_cm_experiment_refuses_a_users_corpus_instead_of_ignoring_it(flag: str, value: Path) -> None:
    exp = load_experiment(conditions_dir() / "E19.yaml", corpus="synthetic")
    assert task_of(exp).kind == "countermeasure" and not exp.draws_trials
    options = RunOptions(experiment="E19", **{flag: value})
    with pytest.raises(ConfigError) as err:
        check_own_data(exp, options)
    option = "--" + flag.replace("_", "-")
    assert str(err.value).startswith("E19 is a countermeasure experiment: it scores its own corpus (")
    assert f"so {option} would be ignored" in str(err.value)


def test_a_tracks_experiment_refuses_cm_and_manifest_alike() -> None:
    exp = load_experiment(conditions_dir() / "E23.yaml", corpus="synthetic")
    assert task_of(exp).kind == "tracks"
    with pytest.raises(ConfigError, match="--cm adds CMs to a spoofing verification run"):
        check_own_data(exp, RunOptions(experiment="E23", countermeasures=["GMM-lfcc"]))
    with pytest.raises(ConfigError, match="E23 is a tracks experiment: it scores its own corpus"):
        check_own_data(exp, RunOptions(experiment="E23", manifest=Path("calls.csv")))


@pytest.mark.parametrize(
    ("field", "value", "flag"), [("backend", "plda", "--backend"), ("dev_share", 0.3, "--dev-share")]
)
def test_a_cm_experiment_refuses_verification_scoring_options(field: str, value: object, flag: str) -> None:
    """--backend and --dev-share shape speaker-verification trials: refused, never ignored."""
    exp = load_experiment(conditions_dir() / "E19.yaml", corpus="synthetic")
    with pytest.raises(ConfigError) as err:
        check_own_data(exp, RunOptions(experiment="E19", **{field: value}))
    assert (
        str(err.value) == f"E19: {flag} applies to speaker-verification trials; this experiment is of kind {exp.kind}"
    )
