"""The run's scoring back-end stage: declared in the YAML or by --backend, fitted on the dev
split's reference-cell embeddings only, saved in the run folder and recorded in run.json."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import tiny_experiment
from run_helpers import isolated_cache

from interbias.experiments.schema import load_experiment, with_backend
from interbias.metrics.backends import fit_backend
from interbias.run.backend_set import backend_paths, load_backend
from interbias.run.conductor import RunOptions, run
from interbias.run.rundir import RunDir
from interbias.utils.errors import ConfigError
from interbias.utils.paths import slug

SPLIT = {"targets": 30, "min_speakers": 3, "dev_share": 0.5}


def _run(tmp: Path, cache: Path, name: str, **over) -> Path:
    exp = tiny_experiment(tmp, name=name, trials=SPLIT, **over)
    opts = RunOptions(experiment=str(exp), encoders=["mfcc-stats"], out=tmp / "r", quiet=True,
                      command=["test"], cache_dir=cache)  # fmt: skip
    return run(opts).run_dir


SCORES = f"scores/{slug('mfcc-stats')}/{slug('gender=female,noise=clean')}.parquet"


@pytest.fixture(scope="module")
def plda_runs(tmp_path_factory, tiny_corpus, session_cache) -> tuple[Path, bytes, bytes]:
    """The run, and its back-end and first scores file before a second invocation resumed it."""
    tmp = tmp_path_factory.mktemp("plda")
    cache = isolated_cache(tmp, session_cache)
    first = _run(tmp, cache, "T62", scoring={"backend": "plda"})
    npz = backend_paths(RunDir(first), "mfcc-stats")[0].read_bytes()
    scores = (first / SCORES).read_bytes()
    again = _run(tmp, cache, "T62", scoring={"backend": "plda"})
    assert again == first
    return first, npz, scores


@pytest.fixture(scope="module")
def plda_run(plda_runs) -> Path:
    return plda_runs[0]


def test_backend_is_fitted_on_dev_reference_speakers_only(plda_run: Path) -> None:
    trials = pd.read_parquet(plda_run / "trials.parquet")
    be = load_backend(RunDir(plda_run), "mfcc-stats", "plda")
    assert be is not None and be.plda is not None
    ev = trials[trials.split == "eval"]
    dev = trials[trials.split == "dev"]
    assert not set(be.speakers) & (set(ev.enrol_speaker) | set(ev.test_speaker))
    assert set(be.speakers) == set(dev.enrol_speaker) | set(dev.test_speaker)
    rec = json.loads(backend_paths(RunDir(plda_run), "mfcc-stats")[1].read_text())
    assert rec["cells"] == ["gender=female,noise=clean", "gender=male,noise=clean"]
    run_json = json.loads((plda_run / "run.json").read_text())
    got = run_json["scoring"]["backend"]
    assert got["kind"] == "plda" and got["models"]["mfcc-stats"]["sha256"] == be.sha256() == rec["sha256"]
    assert run_json["experiment"]["scoring"] == {"backend": "plda"}


def test_backend_scores_are_llrs(plda_run: Path) -> None:
    frame = pd.read_parquet(plda_run / SCORES)
    s = frame["score"].to_numpy()
    assert np.isfinite(s).all()
    # PLDA scores are log-likelihood ratios, not cosines: some leave [-1, 1]
    assert (np.abs(s) > 1).any()
    labels = frame["label"].to_numpy().astype(bool)
    assert s[labels].mean() > s[~labels].mean()


def test_resume_reuses_the_saved_backend(plda_runs) -> None:
    run_dir, npz, scores = plda_runs
    assert backend_paths(RunDir(run_dir), "mfcc-stats")[0].read_bytes() == npz
    assert (run_dir / SCORES).read_bytes() == scores


def test_yaml_and_flag_checks(tmp_path: Path, tiny_corpus) -> None:
    with pytest.raises(ConfigError, match=r"set trials\.dev_share"):
        load_experiment(tiny_experiment(tmp_path, scoring={"backend": "plda"}))
    with pytest.raises(ConfigError, match="not one of cosine, whiten"):
        load_experiment(tiny_experiment(tmp_path, trials=SPLIT, scoring={"backend": "pca"}))
    with pytest.raises(ConfigError, match=r"not defined with scoring\.norm s-norm"):
        load_experiment(tiny_experiment(tmp_path, trials=SPLIT, scoring={"backend": "lda+cosine", "norm": "s-norm"}))
    plain = load_experiment(tiny_experiment(tmp_path, trials=SPLIT))
    assert with_backend(plain, "cosine").resolved() == plain.resolved()  # the same run id
    written = load_experiment(tiny_experiment(tmp_path, trials=SPLIT, scoring={"backend": "cosine"}))
    assert written.resolved() == plain.resolved()
    flagged = with_backend(plain, "whiten+lnorm")
    assert flagged.scoring.backend == "whiten+lnorm" and flagged.resolved() != plain.resolved()
    with pytest.raises(ConfigError, match=r"set trials\.dev_share"):
        with_backend(replace(plain, trials=replace(plain.trials, dev_share=None)), "plda")


def test_unfittable_backend_is_one_error() -> None:
    from interbias.utils.errors import MetricError

    x = np.random.default_rng(0).normal(size=(4, 3))
    with pytest.raises(MetricError, match="at least 3 speakers"):
        fit_backend("plda", x, np.array(["a", "a", "b", "b"]))
