"""A back-end as a factor of an experiment (type: backend): each cell is (chain, back-end); the
levels re-score the same cached embeddings of the same trials, each fitted level is saved and
recorded, the calibration is fitted per level, and an adapted level is adapted per condition
to that condition's dev embeddings only."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import NOISE, gender_factor, tiny_experiment
from run_helpers import isolated_cache

from interbias.experiments.schema import load_experiment, with_backend
from interbias.metrics.backends import adapt_backend, fit_backend
from interbias.run.backend_set import backend_paths, load_backend
from interbias.run.conductor import RunOptions, run
from interbias.run.rundir import RunDir
from interbias.utils.errors import ConfigError

SPLIT = {"targets": 30, "min_speakers": 3, "dev_share": 0.5}
LEVELS = {"cosine": "cosine", "lda": "lda+cosine", "plda": "plda", "adapted": "plda+adapt"}
BACKEND = {"name": "backend", "type": "backend", "reference": "cosine", "levels": LEVELS}
GENDER = gender_factor()


def _exp(tmp: Path, name: str, factors: list) -> Path:
    return tiny_experiment(tmp, name=name, trials=SPLIT, factors=factors)


def _run(path: Path, out: Path, cache: Path) -> Path:
    """The run's directory (with the analyses a run writes: attributes, fairness)."""
    from interbias.analysis.after_run import run_analyses

    opts = RunOptions(experiment=str(path), encoders=["mfcc-stats"], out=out, quiet=True,
                      command=["test"], cache_dir=cache, after_run=run_analyses)  # fmt: skip
    return run(opts).run_dir


@pytest.fixture(scope="module")
def runs(tmp_path_factory, tiny_corpus, session_cache) -> tuple[Path, Path, dict]:
    """(the backend × gender × noise run, resumed once: every cell and back-end reused; the gender
    × noise run; the first invocation's counts), each run from an empty embedding cache."""
    tmp = tmp_path_factory.mktemp("bfactor")
    cache = isolated_cache(tmp / "a", session_cache)
    crossed = _run(_exp(tmp, "T27", [BACKEND, GENDER, NOISE]), tmp / "r", cache)
    counts = json.loads((crossed / "run.json").read_text())["counts"]
    saved = {p.name: p.read_bytes() for p in (crossed / "backends").iterdir()}
    assert _run(_exp(tmp, "T27", [BACKEND, GENDER, NOISE]), tmp / "r", cache) == crossed  # resumed: all reused
    assert json.loads((crossed / "run.json").read_text())["counts"]["cells_reused"] == 16
    assert {p.name: p.read_bytes() for p in (crossed / "backends").iterdir()} == saved
    plain = _run(_exp(tmp, "T27", [GENDER, NOISE]), tmp / "r", isolated_cache(tmp / "b", session_cache))
    return crossed, plain, counts


def test_levels_rescore_the_same_embeddings_of_the_same_trials(runs) -> None:
    crossed, plain, _ = runs
    a, b = (json.loads((d / "run.json").read_text())["counts"] for d in runs[:2])
    assert a["embedded"] == 0 and a["forward_calls"] == {"mfcc-stats": 0}  # the resumed invocation
    a = runs[2]  # the first invocation's counts
    # four back-ends, and not one embedding or encoder call more than the cosine-only run
    assert a["embedded"] == b["embedded"] > 0 and a["forward_calls"] == b["forward_calls"]
    assert a["cells"] == 4 * b["cells"] == 16
    res = pd.read_csv(crossed / "results.csv")
    assert len(res) == 16 and set(res["level_a"]) == set(LEVELS)
    ids = {tuple(sorted(pd.read_parquet(f)["trial_id"])) for f in (crossed / "scores").rglob("*.parquet")}
    assert len(ids) == 2  # one set of trials per gender stratum, scored by every back-end and noise level
    cos = res[res.level_a == "cosine"].set_index(["level_b", "level_c"])["eer"]
    ref = pd.read_csv(plain / "results.csv").set_index(["level_a", "level_b"])["eer"]
    assert np.allclose(cos.sort_index().to_numpy(), ref.sort_index().to_numpy())  # the cosine level is the plain run


def test_validate_counts_the_embeddings_the_run_computes(runs, tmp_path: Path, session_cache: Path) -> None:
    """validate on the same experiment: 2 chain settings × 4 back-ends per stratum (the back-end
    levels are not flagged as repeated chains), and its embeddings equal run.json's ``embedded``
    from an empty embedding cache (every level re-scores the same vectors)."""
    from interbias.run.validate import validate_file

    exp = _exp(tmp_path, "T27", [BACKEND, GENDER, NOISE])
    est = validate_file(exp, encoders=["mfcc-stats"], cache=session_cache).estimates[0]
    lines = est.lines()
    assert "2 strata × 2 chain setting(s) × 4 back-ends = 16 cells" in " ".join(lines), lines
    assert not any("measure the same thing" in line for line in lines), lines
    assert est.utterances_from == "the synthetic corpus built in the cache"  # the trials drawn as run draws them
    assert est.n_embeddings == runs[2]["embedded"] > 0


def test_each_level_is_saved_and_recorded(runs) -> None:
    crossed = runs[0]
    rd = RunDir(crossed)
    rec = json.loads((crossed / "run.json").read_text())["scoring"]["backend"]
    assert rec["factor"] == "backend" and rec["levels"] == LEVELS
    models = rec["models"]["mfcc-stats"]
    assert set(models) == {"lda+cosine", "plda", "plda+adapt at noise=clean", "plda+adapt at noise=n5"}
    for kind in ("lda+cosine", "plda"):
        be = load_backend(rd, "mfcc-stats", kind, backend_paths(rd, "mfcc-stats", kind))
        assert be is not None and models[kind]["sha256"] == be.sha256()
    shas = {m["sha256"] for m in models.values()}
    assert len(shas) == 4  # four distinct fitted parameter sets
    cells = {
        json.loads(p.read_text())["row"]["cell"]: json.loads(p.read_text()) for p in (crossed / "cells").rglob("*.json")
    }
    plda_cell = cells["backend=plda,gender=male,noise=n5"]
    assert plda_cell["backend"] == "plda" and plda_cell["backend_sha256"] == models["plda"]["sha256"]
    adapted = cells["backend=adapted,gender=female,noise=n5"]
    assert adapted["backend_sha256"] == models["plda+adapt at noise=n5"]["sha256"]
    assert "backend" not in cells["backend=cosine,gender=male,noise=n5"]
    cal = json.loads((crossed / "calibration.json").read_text())["models"]["mfcc-stats"]
    assert set(cal["by_backend"]) == set(LEVELS.values())
    assert cal["by_backend"]["plda"]["cells"] == ["backend=plda,gender=female,noise=clean",
                                                  "backend=plda,gender=male,noise=clean"]  # fmt: skip
    assert cal["per_cell"]["backend=lda,gender=male,noise=n5"]["backend"] == "lda+cosine"


def test_adaptation_uses_its_conditions_dev_embeddings_only(runs) -> None:
    crossed = runs[0]
    rd = RunDir(crossed)
    trials = pd.read_parquet(crossed / "trials.parquet")
    dev, ev = trials[trials.split == "dev"], trials[trials.split == "eval"]
    base = load_backend(rd, "mfcc-stats", "plda", backend_paths(rd, "mfcc-stats", "plda"))
    paths = backend_paths(rd, "mfcc-stats", "plda+adapt", "noise=n5")
    adapted = load_backend(rd, "mfcc-stats", "plda+adapt", paths)
    rec = json.loads(paths[1].read_text())
    # every dev utterance once: enrolment sides clean, test sides under n5 (the test side is degraded)
    assert rec["n_adapt"] == len(set(dev.enrol)) + len(set(dev.test))
    assert rec["cells"] == ["backend=adapted,gender=female,noise=n5", "backend=adapted,gender=male,noise=n5"]
    assert not set(base.speakers) & (set(ev.enrol_speaker) | set(ev.test_speaker))
    # the adaptation kept the LDA directions and re-estimated the rest
    assert np.array_equal(adapted.projection.matrix, base.projection.matrix)
    assert not np.allclose(adapted.projection.mean, base.projection.mean)
    assert not np.allclose(adapted.plda.between, base.plda.between)


def test_backend_factor_yaml_checks(tmp_path: Path, tiny_corpus) -> None:
    exp = load_experiment(_exp(tmp_path, "T27", [BACKEND, GENDER, NOISE]))
    assert [c.backend for c in exp.cells()][:: len(exp.cells()) // 4] == list(LEVELS.values())
    assert exp.backends() == tuple(LEVELS.values())
    bad = {**BACKEND, "levels": {"cosine": "cosine", "x": "pca"}}
    with pytest.raises(ConfigError, match="'pca' is not a back-end; one of cosine"):
        load_experiment(_exp(tmp_path, "T27", [bad, NOISE]))
    with pytest.raises(ConfigError, match="both set the back-end"):
        load_experiment(tiny_experiment(tmp_path, name="T27", trials=SPLIT, factors=[BACKEND, NOISE],
                                        scoring={"backend": "plda"}))  # fmt: skip
    with pytest.raises(ConfigError, match="both set the back-end"):
        with_backend(exp, "plda")
    with pytest.raises(
        ConfigError, match=r"levels: lda\+cosine is fitted on the dev split's embeddings: set trials\.dev_share"
    ):
        load_experiment(tiny_experiment(tmp_path, name="T27", factors=[BACKEND, NOISE]))
    with pytest.raises(ConfigError, match="qmf is fitted once over the reference cells"):
        load_experiment(tiny_experiment(tmp_path, name="T27", trials=SPLIT, factors=[BACKEND, NOISE],
                                        scoring={"calibration": {"kind": "qmf", "measures": ["duration"]}}))  # fmt: skip
    twice = {**BACKEND, "levels": {"a": "plda", "b": "plda"}, "reference": "a"}
    with pytest.raises(ConfigError, match="back-end plda is named by two levels"):
        load_experiment(_exp(tmp_path, "T27", [twice, NOISE]))


def test_adapt_backend_rejects_kinds_without_adaptation() -> None:
    from interbias.utils.errors import MetricError

    rng = np.random.default_rng(1)
    x, spk = rng.normal(size=(30, 4)), np.repeat(np.array(list("abcde")), 6)
    with pytest.raises(MetricError, match="lda\\+cosine has no adaptation"):
        adapt_backend(fit_backend("lda+cosine", x, spk), x)


def test_e27_declares_backend_by_noise_by_gender_and_asks_for_plda_gap_changes() -> None:
    from interbias.utils.paths import conditions_dir

    for corpus in (None, "synthetic"):
        exp = load_experiment(conditions_dir() / "E27.yaml", corpus=corpus)
        assert [f.type for f in exp.factors] == ["population", "acoustic", "backend"]
        assert exp.backends() == ("cosine", "lda+cosine", "plda") and len(exp.cells()) == 18
        assert exp.factors[1].level_names == ["clean", "crosstalk_5", "amr_nb"]
        assert exp.key_effects[0].levels == (("backend", "plda"),) and exp.key_effects[0].factors == (
            "backend",
            "gender",
        )
        assert exp.trials.dev_share is not None and exp.use == "gap"


def test_fairness_thresholds_each_backend_on_its_own_scale(runs) -> None:
    """A PLDA LLR and a cosine are on different scales: fairness picks a dev threshold and a
    calibration per back-end level and names the level in each condition."""
    crossed = runs[0]
    table = pd.read_csv(crossed / "fairness.csv")  # written by the run
    conds = set(table["condition"])
    assert conds == {f"noise={n},backend={b}" for n in ("clean", "n5") for b in LEVELS}
    thr = table.groupby("condition")["threshold"].first()
    assert thr["noise=clean,backend=plda"] == thr["noise=n5,backend=plda"]  # one threshold per back-end
    assert len({thr[f"noise=clean,backend={b}"] for b in LEVELS}) == 4
    groups = pd.read_csv(crossed / "fairness_groups.csv")
    assert groups["act_dcf"].notna().any()  # each level's calibration from calibration.json by_backend


def test_fusion_of_a_backend_factor_run_is_refused(runs, tmp_path: Path) -> None:
    from interbias.analysis.fusion.fuse import fuse_run
    from interbias.utils.errors import RunError

    with pytest.raises(RunError, match="has a back-end factor; a fusion is fitted once"):
        fuse_run(runs[0], ["mfcc-stats", "mfcc-stats"], tmp_path / "fused")
