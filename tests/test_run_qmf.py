"""QMF calibration in a run: every trial carries its sides' blind quality measures (stored with
the vectors in the embedding cache), the QMF weights equal scikit-learn's prior-weighted logistic
regression on the reference cells' dev trials, the qmf_ columns are recomputed by hand and the
linear columns stay; a second invocation serves the measures from the cache."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import tiny_experiment
from run_helpers import isolated_cache
from test_fairness_run import SPLIT
from test_metrics_logistic import sklearn_fit

from interbias.audio.quality import feature_names
from interbias.embedding.cache import EmbeddingCache
from interbias.experiments.schema import load_experiment
from interbias.metrics.llr import CostPoint, act_dcf, cllr
from interbias.run.calibrate import calibration_columns
from interbias.run.conductor import RunOptions, run
from interbias.run.qmf import qmf_columns
from interbias.run.results import COLUMNS
from interbias.utils.errors import ConfigError
from interbias.utils.paths import slug

MEASURES = ["duration", "snr", "magnitude"]
QMF = {"calibration": {"kind": "qmf", "measures": MEASURES}}
REFS = ("gender=female,noise=clean", "gender=male,noise=clean")
CELLS = (*REFS, "gender=female,noise=n10", "gender=male,noise=n10")


@pytest.fixture(scope="module")
def qmf_run(tmp_path_factory, tiny_corpus, session_cache):
    tmp = tmp_path_factory.mktemp("qmf")
    exp = tiny_experiment(tmp, name="T52q", trials=SPLIT, scoring=QMF)
    cache = isolated_cache(tmp, session_cache)
    opts = RunOptions(
        experiment=str(exp), encoders=["mfcc-stats"], out=tmp / "r", quiet=True, command=["t"], cache_dir=cache
    )
    first = run(opts)
    shutil.rmtree(first.run_dir / "cells")  # score every cell again, vectors and measures from the cache
    again = run(opts)
    return first, again, cache


def _frame(run_dir: Path, cell: str) -> pd.DataFrame:
    return pd.read_parquet(run_dir / "scores" / slug("mfcc-stats") / f"{slug(cell)}.parquet")


def test_measures_are_stored_with_the_vectors_and_served_again(qmf_run) -> None:
    first, again, cache = qmf_run
    assert first.n_embedded > 0 and again.n_embedded == 0
    db = EmbeddingCache(cache / "embeddings.sqlite")
    stored = db._db.execute("SELECT COUNT(*) FROM quality").fetchone()[0]
    db.close()
    assert stored == first.n_embedded
    for cell in CELLS:
        a, b = _frame(first.run_dir, cell), _frame(again.run_dir, cell)
        pd.testing.assert_frame_equal(a, b)
        ok = ~a.dropped
        for m in MEASURES:
            assert np.isfinite(a.loc[ok, f"q_{m}_min"]).all()
            assert (a.loc[ok, f"q_{m}_min"] <= a.loc[ok, f"q_{m}_max"]).all()
        assert (a.loc[ok, "q_duration_min"] > 0.5).all() and (a.loc[ok, "q_magnitude_min"] > 0).all()
    clean, noisy = _frame(first.run_dir, REFS[0]), _frame(first.run_dir, CELLS[2])
    # the noisy cell's test side is at 10 dB: its trials' lower SNR falls, the blind estimate sees it
    assert noisy.q_snr_min.median() < clean.q_snr_min.median() - 3


def test_qmf_equals_sklearn_and_columns_recomputed_by_hand(qmf_run) -> None:
    run_dir = qmf_run[0].run_dir
    res = pd.read_csv(run_dir / "results.csv")
    points = load_experiment(run_dir / "../../T52q.yaml").operating_points
    assert list(res.columns) == COLUMNS + calibration_columns(points) + qmf_columns(points)
    res = res.set_index("cell")
    names = ["score", *feature_names(MEASURES)]
    dev = pd.concat([_frame(run_dir, c) for c in REFS])
    dev = dev[(dev.split == "dev") & ~dev.dropped]
    x, lab = dev[names].to_numpy(), dev.label.to_numpy().astype(bool)
    coef, intercept = sklearn_fit(x, lab, 0.5, True)
    record = json.loads((run_dir / "calibration.json").read_text())["models"]["mfcc-stats"]["qmf"]
    assert record["features"] == names and record["cells"] == list(REFS)
    assert np.max(np.abs(np.array(record["weights"]) - coef)) <= 1e-6
    assert abs(record["offset"] - intercept) <= 1e-6
    for cell in CELLS:
        f = _frame(run_dir, cell)
        ev = f[(f.split == "eval") & ~f.dropped]
        llr = ev[names].to_numpy() @ coef + intercept
        row = res.loc[cell]
        assert row.qmf_cllr == pytest.approx(cllr(llr, ev.label), abs=1e-6)
        assert row.qmf_act_dcf == pytest.approx(act_dcf(llr, ev.label.to_numpy(), CostPoint(0.01)), abs=1e-9)
        assert row.qmf_calibration_loss == pytest.approx(row.qmf_act_dcf - row.min_dcf)
        assert np.isfinite(row.act_dcf) and np.isfinite(row.qmf_threshold_drift)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"kind": "qmf"}, "kind qmf needs at least one of duration, snr, magnitude"),
        ({"kind": "qmf", "measures": ["loudness"]}, "a list of distinct measures out of duration, snr, magnitude"),
        ({"kind": "linear", "measures": ["snr"]}, "only kind qmf uses measures"),
        ({"kind": "isotonic"}, "'isotonic' is not one of linear, qmf"),
    ],
)
def test_bad_calibration_specs_are_one_line(tmp_path: Path, spec: dict, message: str) -> None:
    path = tiny_experiment(tmp_path, name="T52b", scoring={"calibration": spec})
    with pytest.raises(ConfigError, match=message):
        load_experiment(path)


def test_gap_table_matches_the_results_columns_and_the_report_answers(qmf_run, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from interbias.analysis.qmf_gap import lowest_snr_levels, qmf_gaps
    from interbias.cli import app
    from interbias.run.rundir import RunDir

    run_dir = qmf_run[0].run_dir
    table = qmf_gaps(run_dir, n_boot=60)
    assert list(table.level) == ["clean", "n10"] and set(table.group) == {"male"}
    res = pd.read_csv(run_dir / "results.csv").set_index("cell")
    for r in table.itertuples():
        male, female = res.loc[f"gender=male,noise={r.level}"], res.loc[f"gender=female,noise={r.level}"]
        assert r.gap_linear == pytest.approx(male.act_dcf - female.act_dcf, abs=1e-12)
        assert r.gap_qmf == pytest.approx(male.qmf_act_dcf - female.qmf_act_dcf, abs=1e-12)
        assert r.change == pytest.approx(abs(r.gap_qmf) - abs(r.gap_linear))
        # the tiny corpus: 3 voices per gender in a split, below the 5 the interval rule needs
        assert r.status == "too few speakers" and not r.resolved and np.isnan(r.lo), r
        assert r.speakers < 5
    assert lowest_snr_levels(RunDir(run_dir).experiment()) == ["n10"]
    done = CliRunner().invoke(app, ["report", str(run_dir), "--out", str(tmp_path / "rep")])
    assert done.exit_code == 0, done.output
    text = (tmp_path / "rep" / "report.md").read_text()
    assert "Quality-aware calibration and the subgroup gap" in text
    n10 = table[table.level == "n10"].iloc[0]
    if n10.gap_linear == n10.gap_qmf == 0:  # mfcc-stats at act_dcf 1 in both groups: said so
        assert "mfcc-stats, n10: no act_dcf gap male − female under either calibration" in text
    else:
        assert "mfcc-stats, n10: act_dcf gap male − female" in text


def test_answer_lines_say_the_gap_change_and_whether_it_is_resolved() -> None:
    from interbias.analysis.qmf_gap import COLUMNS, answer_lines

    base = {"df": 20.0, "p": 0.01, "p_holm": 0.02, "se": 0.02, "bias": 0.0, "speakers": 12}
    table = pd.DataFrame(
        [
            {**base, "model": "A", "level": "g5", "group": "male", "reference": "female", "gap_linear": 0.10,
             "gap_qmf": 0.02, "change": -0.08, "lo": -0.12, "hi": -0.03, "status": "resolved", "resolved": True},
            {**base, "model": "B", "level": "g5", "group": "male", "reference": "female", "gap_linear": -0.05,
             "gap_qmf": -0.09, "change": 0.04, "lo": -0.02, "hi": 0.10, "status": "not resolved", "resolved": False,
             "bias": 0.012},
            {**base, "model": "C", "level": "g5", "group": "male", "reference": "female", "gap_linear": -0.05,
             "gap_qmf": -0.09, "change": 0.04, "lo": np.nan, "hi": np.nan, "status": "too few speakers",
             "resolved": False, "speakers": 3},
            {**base, "model": "B", "level": "g25", "group": "male", "reference": "female", "gap_linear": 0.0,
             "gap_qmf": 0.0, "change": 0.0, "lo": np.nan, "hi": np.nan, "status": "no interval", "resolved": False,
             "bias": 0.0},
        ],
    ).reindex(columns=COLUMNS)  # fmt: skip
    lines = answer_lines(table, ["g5"])
    assert lines == [
        "A, g5: act_dcf gap male − female +0.100 with linear, +0.020 with QMF calibration; |gap| change -0.080 "
        "(95 % CI -0.120 to -0.030): QMF narrows it (resolved after Holm).",
        "B, g5: act_dcf gap male − female -0.050 with linear, -0.090 with QMF calibration; |gap| change +0.040 "
        "(95 % CI -0.020 to +0.100; bootstrap bias +0.012 (|gap| is biased away from 0)): QMF leaves it unresolved.",
        "C, g5: act_dcf gap male − female -0.050 with linear, -0.090 with QMF calibration; |gap| change +0.040 "
        "(no interval): QMF cannot be judged: too few speakers (3; 5 needed).",
    ]
    assert answer_lines(table, ["g25"])[0].startswith("B, g25: no act_dcf gap male − female under either calibration")
