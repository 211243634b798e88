"""The run's calibration stage: a linear calibration fitted on the reference (clean) cells' dev
trials, applied unchanged to every cell's eval trials; columns recomputed here by hand from the
scores files; operating points and calibration keys of the experiment schema."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import gender_factor, tiny_experiment
from run_helpers import isolated_cache
from test_fairness_run import SPLIT

from interbias.analysis.after_run import run_analyses
from interbias.experiments.schema import load_experiment
from interbias.metrics import verification as metrics
from interbias.metrics.calibration import fit_linear
from interbias.metrics.llr import CostPoint, act_dcf, bayes_error_curve, cllr, min_cllr
from interbias.run.calibrate import calibration_columns
from interbias.run.conductor import RunOptions, run
from interbias.run.results import COLUMNS
from interbias.utils.errors import ConfigError
from interbias.utils.paths import slug

POINTS = [{"p_target": 0.01}, {"name": "asv5", "p_target": 0.05, "c_fa": 10}]
CELLS = ("gender=female,noise=clean", "gender=male,noise=clean", "gender=female,noise=n10", "gender=male,noise=n10")


def _run(tmp: Path, session_cache: Path, name: str, **overrides):
    tmp.mkdir(parents=True, exist_ok=True)
    exp = tiny_experiment(tmp, name=name, **overrides)
    opts = RunOptions(
        experiment=str(exp), encoders=["mfcc-stats"], out=tmp / "r", quiet=True, command=["test"],
        cache_dir=isolated_cache(tmp, session_cache), after_run=run_analyses,
    )  # fmt: skip
    return run(opts)


@pytest.fixture(scope="module")
def cal_run(tmp_path_factory, tiny_corpus, session_cache):
    tmp = tmp_path_factory.mktemp("calib")
    return _run(tmp, session_cache, "T26", trials=SPLIT, operating_points=POINTS)


def _frame(run_dir: Path, cell: str) -> pd.DataFrame:
    return pd.read_parquet(run_dir / "scores" / slug("mfcc-stats") / f"{slug(cell)}.parquet")


def test_calibration_columns_recomputed_by_hand(cal_run) -> None:
    run_dir = cal_run.run_dir
    res = pd.read_csv(run_dir / "results.csv")
    assert list(res.columns) == COLUMNS + calibration_columns(
        load_experiment(run_dir / "../../T26.yaml").operating_points
    )
    assert list(res.columns)[-3:] == ["min_dcf_asv5", "act_dcf_asv5", "calibration_loss_asv5"]
    res = res.set_index("cell")
    dev = pd.concat([_frame(run_dir, c) for c in CELLS[:2]])
    dev = dev[dev.split == "dev"]
    cal = fit_linear(dev.score.to_numpy(), dev.label.to_numpy())
    fit_thr = metrics.eer_from_sweep(metrics.threshold_sweep(dev.score, dev.label))[1]
    record = json.loads((run_dir / "run.json").read_text())["calibration"]
    assert record["fit_on"] == "reference" and record["measured"] is True
    model = record["models"]["mfcc-stats"]
    assert model["slope"] == pytest.approx(cal.slope) and model["offset"] == pytest.approx(cal.offset)
    assert model["cells"] == list(CELLS[:2])
    for cell in CELLS:
        f = _frame(run_dir, cell)
        ev = f[(f.split == "eval") & ~f.dropped]
        s, lab = ev.score.to_numpy(), ev.label.to_numpy()
        llr = cal.slope * s + cal.offset
        row = res.loc[cell]
        assert row.cllr == pytest.approx(cllr(llr, lab))
        assert row.min_cllr == pytest.approx(min_cllr(s, lab))
        assert row.act_dcf == pytest.approx(act_dcf(llr, lab, CostPoint(0.01)))
        assert row.calibration_loss == pytest.approx(row.act_dcf - row.min_dcf)
        assert row.dcf_point == "p0.01"
        thr = metrics.eer_from_sweep(metrics.threshold_sweep(s, lab))[1]
        assert row.threshold_drift == pytest.approx(thr - fit_thr)
        point = CostPoint(0.05, 1, 10)
        assert row.act_dcf_asv5 == pytest.approx(act_dcf(llr, lab, point))
        low = metrics.min_dcf(s, lab, p_target=0.05, c_fa=10)
        assert row.min_dcf_asv5 == pytest.approx(low)
        assert row.calibration_loss_asv5 == pytest.approx(row.act_dcf_asv5 - low)
        assert row.calibration_loss >= -1e-12 and row.min_cllr <= row.cllr + 1e-12


def test_fit_on_each_and_no_dev_split(tmp_path: Path, tiny_corpus, session_cache) -> None:
    each = _run(tmp_path / "a", session_cache, "T27", trials=SPLIT, calibration={"fit_on": "each"})
    res = pd.read_csv(each.run_dir / "results.csv").set_index("cell")
    per_cell = json.loads((each.run_dir / "run.json").read_text())["calibration"]["models"]["mfcc-stats"]["per_cell"]
    f = _frame(each.run_dir, CELLS[2])
    dev, ev = f[f.split == "dev"], f[(f.split == "eval") & ~f.dropped]
    cal = fit_linear(dev.score.to_numpy(), dev.label.to_numpy())
    assert per_cell[CELLS[2]]["slope"] == pytest.approx(cal.slope)
    llr = cal.slope * ev.score.to_numpy() + cal.offset
    assert res.loc[CELLS[2]].cllr == pytest.approx(cllr(llr, ev.label.to_numpy()))
    plain = _run(tmp_path / "b", session_cache, "T28")  # no dev split: empty columns, and why
    res = pd.read_csv(plain.run_dir / "results.csv")
    assert res.cllr.isna().all() and res.act_dcf.isna().all()
    record = json.loads((plain.run_dir / "run.json").read_text())["calibration"]
    assert record["measured"] is False and "no dev split" in record["reason"]


def test_schema_errors(tmp_path: Path) -> None:
    for key, value, msg in (
        ("calibration", {"fit_on": "all"}, "T01.yaml: calibration: fit_on: 'all' is not one of reference, each"),
        ("calibration", {"fit": "each"}, "T01.yaml: unknown key 'fit' at calibration; valid: fit_on, split"),
        ("operating_points", [{"p_target": 1.5}], "T01.yaml: operating_points[0]: p_target must be in (0, 1), got 1.5"),
        ("operating_points", [{"p_target": 0.01}, {"p_target": 0.01}], "names must be unique, got p0.01, p0.01"),
        ("operating_points", [{"p_target": 0.1, "cfa": 2}], "unknown key 'cfa' at operating_points[0]"),
        ("scoring", {"norm": "z-norm"}, "T01.yaml: scoring: norm: 'z-norm' is not one of none, s-norm, as-norm"),
        ("scoring", {"norm": "as-norm", "top_k": 0}, "scoring.top_k: must be a positive whole number, got 0"),
    ):
        with pytest.raises(ConfigError) as exc:
            load_experiment(tiny_experiment(tmp_path, **{key: value}))
        assert msg in str(exc.value)
    exp = load_experiment(tiny_experiment(tmp_path, operating_points=POINTS))
    assert [p.name for p in exp.operating_points] == ["p0.01", "asv5"]
    assert np.isclose(exp.operating_points[1].cost.bayes_threshold, np.log(10 * 0.95 / 0.05))


def test_report_calibration_section_and_bayes_plot(cal_run, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from interbias.analysis.calibration import PRIOR_LOG_ODDS, bayes_curves, worst_cells
    from interbias.analysis.scored_run import ScoredRun
    from interbias.cli import app

    out = tmp_path / "rep"
    res = CliRunner().invoke(app, ["report", str(cal_run.run_dir), "--out", str(out), "--bootstrap", "0"])
    assert res.exit_code == 0, res.output
    md = (out / "report.md").read_text()
    section = md.split("## Calibration")[1].split("\n## ")[0]
    results = pd.read_csv(cal_run.run_dir / "results.csv")
    worst = worst_cells(results)
    assert worst.calibration_loss.is_monotonic_decreasing and len(worst) == 3
    assert worst.iloc[0].calibration_loss == results.calibration_loss.max()
    assert f"| mfcc-stats | {worst.iloc[0].cell} |" in section
    assert "bayes_error" in section and (out / "report_figures" / "bayes_error.png").is_file()
    curves = bayes_curves(ScoredRun(cal_run.run_dir), results)["mfcc-stats"]
    assert [c for c, _, _ in curves] == results.cell.tolist() and len(curves[0][1]) == len(PRIOR_LOG_ODDS)
    # at θ = logit(0.01) the actual curve is the results' act_dcf, the minimum curve its min_dcf
    run = ScoredRun(cal_run.run_dir)
    slope, offset = (json.loads((cal_run.run_dir / "run.json").read_text())["calibration"]["models"]["mfcc-stats"][k]
                     for k in ("slope", "offset"))  # fmt: skip
    for row in results.itertuples():
        cs = run.cell("mfcc-stats", row.cell)
        act, low = bayes_error_curve(cs.scores, slope * cs.scores + offset, cs.labels, np.array([np.log(0.01 / 0.99)]))
        assert act[0] == pytest.approx(row.act_dcf) and low[0] == pytest.approx(row.min_dcf)


def test_fairness_groups_carry_act_dcf_at_the_shared_calibration(cal_run) -> None:
    run_dir = cal_run.run_dir
    groups = pd.read_csv(run_dir / "fairness_groups.csv")
    model = json.loads((run_dir / "calibration.json").read_text())["models"]["mfcc-stats"]
    trials = pd.read_parquet(run_dir / "trials.parquet").set_index("trial_id")
    attrs = pd.read_parquet(run_dir / "attributes.parquet").set_index("id")
    for cond in ("clean", "n10"):
        frames = [_frame(run_dir, f"gender={g},noise={cond}") for g in ("female", "male")]
        ev = pd.concat(frames)
        ev = ev[(ev.split == "eval") & ~ev.dropped]
        sides = trials.loc[ev.trial_id]
        g_enrol = attrs.gender.reindex(sides.enrol).to_numpy()
        g_test = attrs.gender.reindex(sides.test).to_numpy()
        for group in ("female", "male"):
            m = (g_enrol == group) & (g_test == group)
            s, lab = ev.score.to_numpy()[m], ev.label.to_numpy()[m]
            act = act_dcf(model["slope"] * s + model["offset"], lab, CostPoint(0.01))
            row = groups[
                (groups.condition == f"noise={cond}") & (groups.group_by == "gender") & (groups.group == group)
            ]
            assert row.act_dcf.iloc[0] == pytest.approx(act)
            assert row.calibration_loss.iloc[0] == pytest.approx(act - metrics.min_dcf(s, lab))


def test_false_alarm_step_is_the_cost_of_one_false_alarm() -> None:
    from interbias.analysis.calibration import false_alarm_step

    results = pd.DataFrame({"n_nontarget": [500, 300]})
    record = {"operating_points": [{"p_target": 0.01, "c_miss": 1, "c_fa": 1}]}
    assert false_alarm_step(results, record["operating_points"]) == pytest.approx(0.99 / 300 / 0.01)
    lab = np.r_[np.ones(10), np.zeros(300)].astype(int)
    llr = np.r_[np.full(10, 9.0), np.full(299, -9.0), 9.0]  # every target accepted, one false alarm
    assert act_dcf(llr, lab, CostPoint(0.01)) == pytest.approx(false_alarm_step(results, record["operating_points"]))
    assert false_alarm_step(results, []) is None


def test_operator_draws_pool_the_fit_and_average_every_draw(tmp_path: Path, tiny_corpus, session_cache) -> None:
    from interbias.analysis.suite import Options, analyse
    from interbias.run.calibrate import DRAW_CALIBRATION_COLUMNS

    noise = {  # every level random, the reference too: the fit pools the reference cells' draws
        "name": "noise", "type": "acoustic", "apply_to": "test", "reference": "n20",
        "levels": {"n20": [{"op": "noise", "kind": "gaussian", "snr_db": 20}],
                   "n5": [{"op": "noise", "kind": "gaussian", "snr_db": 5}]},
    }  # fmt: skip
    gender = gender_factor()
    out = _run(tmp_path, session_cache, "T29", trials={**SPLIT, "operator_draws": 3}, factors=[gender, noise])
    run_dir = out.run_dir
    res = pd.read_csv(run_dir / "results.csv").set_index("cell")
    assert list(res.columns)[-2:] == DRAW_CALIBRATION_COLUMNS
    draws = ("score", "score_d1", "score_d2")
    refs = [_frame(run_dir, f"gender={g},noise=n20") for g in ("female", "male")]
    dev = [(f.loc[f.split == "dev", c], f.loc[f.split == "dev", "label"]) for f in refs for c in draws]
    s_dev, lab_dev = np.concatenate([d[0] for d in dev]), np.concatenate([d[1] for d in dev])
    cal = fit_linear(s_dev, lab_dev)
    record = json.loads((run_dir / "calibration.json").read_text())
    model = record["models"]["mfcc-stats"]
    assert model["slope"] == pytest.approx(cal.slope) and model["offset"] == pytest.approx(cal.offset)
    assert model["n_target"] == int(lab_dev.sum())  # three draws' dev trials, pooled
    for cell in res.index:
        f = _frame(run_dir, cell)
        ev = f[(f.split == "eval") & ~f.dropped]
        lab = ev.label.to_numpy()
        acts = [act_dcf(cal.slope * ev[c].to_numpy() + cal.offset, lab, CostPoint(0.01)) for c in draws]
        losses = [a - metrics.min_dcf(ev[c].to_numpy(), lab) for a, c in zip(acts, draws, strict=True)]
        row = res.loc[cell]
        assert not np.array_equal(ev["score"], ev["score_d1"])  # the draws differ
        assert row.act_dcf == pytest.approx(np.mean(acts), abs=1e-12)
        assert row.calibration_loss == pytest.approx(np.mean(losses), abs=1e-12)
        assert row.act_dcf_draw_sd == pytest.approx(np.std(acts, ddof=1), abs=1e-12)
        assert row.calibration_loss_draw_sd == pytest.approx(np.std(losses, ddof=1), abs=1e-12)
        assert record["models"]["mfcc-stats"]["per_draw"][cell]["act_dcf"] == pytest.approx(acts)
    # fairness at the dev threshold uses draw 0's scores, and every group row says so
    groups = pd.read_csv(run_dir / "fairness_groups.csv")
    assert set(groups["draw"]) == {0} and set(groups["n_draws"]) == {3}
    n5 = pd.concat([_frame(run_dir, f"gender={g},noise=n5") for g in ("female", "male")])
    n5 = n5[(n5.split == "eval") & ~n5.dropped]
    everyone = groups[(groups.condition == "noise=n5") & (groups.group == "all")].iloc[0]
    want = act_dcf(cal.slope * n5["score"].to_numpy() + cal.offset, n5.label.to_numpy(), CostPoint(0.01))
    assert everyone.act_dcf == pytest.approx(want, abs=1e-12)
    # the analysis recomputes the draw-mean from the scores (check_against) and accepts it
    a = analyse(run_dir / "results.csv", Options(metric="act_dcf", n_boot=5))
    assert len(a.gaps.gaps) == 2
