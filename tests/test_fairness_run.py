"""Speaker-disjoint dev/eval splits and the fairness report of a run (threshold from dev, applied on eval)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import tiny_experiment
from run_helpers import isolated_cache
from typer.testing import CliRunner

from interbias.analysis.after_run import run_analyses
from interbias.analysis.groups.fairness import fairness_for_run
from interbias.analysis.reporting.document import format_value
from interbias.cli import app
from interbias.experiments.decision_spec import DEFAULT_POINT
from interbias.experiments.schema import load_experiment
from interbias.metrics.verification import eer_from_sweep, threshold_sweep
from interbias.run.calibrate import calibration_columns
from interbias.run.conductor import RunOptions, run
from interbias.run.results import COLUMNS
from interbias.trials.sampler import COLUMNS as TRIAL_COLUMNS
from interbias.trials.sampler import draw_trials
from interbias.utils.errors import ConfigError, TrialError
from interbias.utils.paths import slug

SPLIT = {"targets": 30, "min_speakers": 3, "dev_share": 0.5}


def test_split_is_speaker_disjoint_stratified_recorded_and_deterministic(tmp_path: Path, tiny_corpus) -> None:
    exp = load_experiment(tiny_experiment(tmp_path, trials=SPLIT))
    tl = draw_trials(exp, tiny_corpus)
    assert tl.sha256 == draw_trials(exp, tiny_corpus).sha256
    f = tl.frame
    assert list(f.columns) == [*TRIAL_COLUMNS, "split"]
    dev, ev = f[f.split == "dev"], f[f.split == "eval"]
    dev_spk = set(dev.enrol_speaker) | set(dev.test_speaker)
    eval_spk = set(ev.enrol_speaker) | set(ev.test_speaker)
    assert dev_spk and eval_spk and not dev_spk & eval_spk
    info = tl.info["split"]
    assert info["dev_share"] == 0.5 and info["split_by"] == ["gender"] and isinstance(info["seed"], int)
    assert info["groups"] == {"gender=female": {"dev": 3, "eval": 3}, "gender=male": {"dev": 3, "eval": 3}}
    assert set(info["dev_speakers"]) == dev_spk
    # both splits are matched across strata; eval stats are the strata, dev stats are recorded apart
    assert dev.groupby(["stratum", "label"]).size().nunique() == 1
    assert ev.groupby(["stratum", "label"]).size().nunique() == 1
    assert set(tl.info["dev_strata"]) == {"gender=female", "gender=male"}
    # another seed splits differently
    other = draw_trials(load_experiment(tiny_experiment(tmp_path, trials=SPLIT, seed=3)), tiny_corpus)
    assert other.info["split"]["dev_speakers"] != info["dev_speakers"]


def test_split_errors(tmp_path: Path, tiny_corpus) -> None:
    exp = load_experiment(tiny_experiment(tmp_path, trials={**SPLIT, "min_speakers": 4}))
    with pytest.raises(TrialError) as exc:
        draw_trials(exp, tiny_corpus)
    assert str(exc.value) == (
        "T01: stratum gender=female (dev split) has 3 speaker(s) with usable enrol and test utterances "
        "(enrol side 3, test side 3); at least 4 are needed"
    )
    for trials, msg in (
        ({"dev_share": 1.0}, "T01.yaml: trials.dev_share: must be a number strictly between 0 and 1, got 1.0"),
        ({"split_by": "gender"}, "T01.yaml: trials.split_by: only meaningful with trials.dev_share"),
    ):
        with pytest.raises(ConfigError) as exc:
            load_experiment(tiny_experiment(tmp_path, trials=trials))
        assert str(exc.value) == msg
    with pytest.raises(ConfigError) as exc:
        load_experiment(tiny_experiment(tmp_path, fairness={"threshold": "median"}))
    assert str(exc.value) == "T01.yaml: fairness.threshold: threshold rule 'median': valid: eer, fixed:X, far:X"
    with pytest.raises(ConfigError) as exc:
        load_experiment(tiny_experiment(tmp_path, spoofing={"attacks": 3}))
    assert "spoofing.attacks: an attack manifest file (CSV/JSONL) or {builder: NAME" in str(exc.value)


@pytest.fixture(scope="module")
def split_run(tmp_path_factory, tiny_corpus, session_cache):
    tmp = tmp_path_factory.mktemp("split")
    exp = tiny_experiment(tmp, name="T07", trials=SPLIT, fairness={"groups": ["gender", "accent", "gender x accent"]})
    opts = RunOptions(
        experiment=str(exp),
        encoders=["mfcc-stats"],
        out=tmp / "r",
        quiet=True,
        command=["test"],
        cache_dir=isolated_cache(tmp, session_cache),
        after_run=run_analyses,
    )
    return run(opts)


def _scores(run_dir: Path, model: str, cell: str) -> pd.DataFrame:
    trials = pd.read_parquet(run_dir / "trials.parquet")
    sc = pd.read_parquet(run_dir / "scores" / slug(model) / f"{slug(cell)}.parquet")
    return sc.drop(columns="split").merge(trials, on=["trial_id", "label"])


def test_results_use_eval_trials_only(split_run) -> None:
    res = pd.read_csv(split_run.run_dir / "results.csv")
    assert list(res.columns) == COLUMNS + calibration_columns([DEFAULT_POINT])  # no spoofing columns
    for row in res.itertuples():
        sc = _scores(split_run.run_dir, row.model, row.cell)
        ev = sc[sc.split == "eval"]
        assert row.n_target == (ev.label == 1).sum() and row.n_nontarget == (ev.label == 0).sum()
        assert row.eer == pytest.approx(eer_from_sweep(threshold_sweep(ev.score, ev.label))[0])
        assert row.n_speakers == len(set(ev.enrol_speaker) | set(ev.test_speaker))


def test_dev_threshold_is_applied_unchanged_to_every_eval_condition(split_run) -> None:
    run_dir = split_run.run_dir
    groups = pd.read_csv(run_dir / "fairness_groups.csv")
    comps = pd.read_csv(run_dir / "fairness.csv")
    info = json.loads((run_dir / "run.json").read_text())
    assert info["analyses"]["fairness"] == ["fairness.csv", "fairness_groups.csv"]
    # the threshold: the EER threshold of the dev trials of the reference (clean) cells, both strata
    dev = pd.concat(
        [_scores(run_dir, "mfcc-stats", c) for c in ("gender=female,noise=clean", "gender=male,noise=clean")]
    )
    dev = dev[dev.split == "dev"]
    thr = eer_from_sweep(threshold_sweep(dev.score, dev.label))[1]
    assert set(groups.condition) == {"noise=clean", "noise=n10"}
    assert groups.threshold.unique().tolist() == [pytest.approx(thr)]
    assert comps.threshold.unique().tolist() == [pytest.approx(thr)]
    assert groups.threshold_rule.unique().tolist() == ["eer"]
    assert groups.threshold_source.iloc[0].startswith("dev split of gender=female,noise=clean;gender=male,noise=clean:")
    manifest = pd.read_parquet(run_dir / "attributes.parquet").set_index("id").to_dict(orient="index")
    for cond in ("clean", "n10"):
        ev = pd.concat([_scores(run_dir, "mfcc-stats", f"gender={g},noise={cond}") for g in ("female", "male")])
        ev = ev[ev.split == "eval"]
        for attr in ("gender", "accent"):
            e_val = ev.enrol.map(lambda u, a=attr: manifest[u][a])
            t_val = ev.test.map(lambda u, a=attr: manifest[u][a])
            for value in sorted(set(e_val)):
                sub = ev[(e_val == value) & (t_val == value)]
                row = groups[
                    (groups.condition == f"noise={cond}") & (groups.group_by == attr) & (groups.group == value)
                ]
                assert len(row) == 1
                row = row.iloc[0]
                assert row.n == len(sub)
                assert row.far == pytest.approx((sub[sub.label == 0].score >= thr).mean())
                assert row.frr == pytest.approx((sub[sub.label == 1].score < thr).mean())
            mixed = groups[(groups.condition == f"noise={cond}") & (groups.group_by == attr) & (groups.kind == "mixed")]
            n_mixed = int((e_val != t_val).sum())
            assert (len(mixed) == 0 and n_mixed == 0) or mixed.n.iloc[0] == n_mixed
    # the noisy condition is not re-thresholded: its own dev EER threshold would differ
    noisy = pd.concat([_scores(run_dir, "mfcc-stats", f"gender={g},noise=n10") for g in ("female", "male")])
    noisy = noisy[noisy.split == "dev"]
    assert eer_from_sweep(threshold_sweep(noisy.score, noisy.label))[1] != pytest.approx(thr)
    p = comps.p_value.dropna().to_numpy()
    from statsmodels.stats.multitest import multipletests

    assert comps.p_holm.dropna().to_numpy() == pytest.approx(multipletests(p, method="holm")[1])


def test_fairness_cli_on_a_run_directory_and_other_rules(split_run, tmp_path: Path) -> None:
    res = CliRunner().invoke(
        app,
        ["scores", "fairness", str(split_run.run_dir), "--group", "accent", "--threshold-rule", "far:0.1", "--json"],
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert {g["group_by"] for g in data["groups"]} == {"accent"}
    assert {g["threshold_rule"] for g in data["groups"]} == {"far:0.1"}
    report = fairness_for_run(split_run.run_dir, rule="far:0.1")
    dev = pd.concat(
        [_scores(split_run.run_dir, "mfcc-stats", c) for c in ("gender=female,noise=clean", "gender=male,noise=clean")]
    )
    dev = dev[dev.split == "dev"]
    thr = report.groups.threshold.iloc[0]
    neg = dev[dev.label == 0].score.to_numpy()
    assert (neg >= thr).mean() <= 0.1  # the dev FAR target is met ...
    lower = np.sort(dev.score.unique())
    below = lower[lower < thr]
    assert not len(below) or (neg >= below[-1]).mean() > 0.1  # ... by the lowest such threshold


def test_runs_without_dev_trials_have_no_fairness(tmp_path: Path, tiny_corpus, session_cache) -> None:
    exp = tiny_experiment(tmp_path, name="T08", trials={"targets": 10, "min_speakers": 4})
    cache = isolated_cache(tmp_path, session_cache)
    out = run(RunOptions(experiment=str(exp), encoders=["mfcc-stats"], out=tmp_path / "r", quiet=True, cache_dir=cache))
    assert fairness_for_run(out.run_dir) is None
    assert not (out.run_dir / "fairness.csv").exists() and not (out.run_dir / "attributes.parquet").exists()
    assert list(
        pd.read_parquet(
            out.run_dir / "scores" / slug("mfcc-stats") / f"{slug('gender=female,noise=clean')}.parquet"
        ).columns
    ) == ["trial_id", "label", "score", "dropped"]
    res = CliRunner().invoke(app, ["scores", "fairness", str(out.run_dir)])
    assert res.exit_code == 1
    assert (
        res.stderr.strip()
        == f"error: {out.run_dir}: the run has no dev trials (set trials.dev_share in the experiment)"
    )


def test_report_shows_fairness_at_the_dev_threshold(split_run, tmp_path: Path) -> None:
    out = tmp_path / "rep"
    res = CliRunner().invoke(app, ["report", str(split_run.run_dir), "--out", str(out), "--bootstrap", "0"])
    assert res.exit_code == 0, res.output
    md = (out / "report.md").read_text()
    assert "## Fairness at the deployment threshold" in md
    groups = pd.read_csv(split_run.run_dir / "fairness_groups.csv")
    comparisons = pd.read_csv(split_run.run_dir / "fairness.csv")
    n_sig = int((comparisons["significant"].astype(str).str.lower() == "true").sum())
    n = len(comparisons)
    assert f"Family and test: the {n} group comparisons of fairness.csv" in md
    assert f"Holm-adjusted over those {n}; {n_sig} significant. This family is separate from the findings" in md
    # every per-group row of fairness_groups.csv is in the report's table, with its threshold
    section = md.split("## Fairness at the deployment threshold")[1]
    table_rows = [line for line in section.splitlines() if line.startswith("| mfcc-stats")]
    assert len(table_rows) >= len(groups)
    assert format_value(float(groups["threshold"].iloc[0])) in section


def test_a_yaml_crossing_is_reported_by_the_run_and_by_analyze(split_run, tmp_path: Path) -> None:
    """``fairness.groups: [gender x accent]``: the run's fairness tables hold the crossed cells,
    each with the eval speakers counted here from trials.parquet and attributes.parquet; the
    comparisons of cells under 5 speakers are never tested; analyze prints the crossing."""
    run_dir = split_run.run_dir
    groups = pd.read_csv(run_dir / "fairness_groups.csv", keep_default_na=False)
    crossed = groups[(groups.group_by == "gender×accent") & (groups.kind == "group")]
    trials = pd.read_parquet(run_dir / "trials.parquet")
    attrs = pd.read_parquet(run_dir / "attributes.parquet").drop_duplicates("speaker").set_index("speaker")
    ev = trials[trials.split == "eval"]
    spk = set(ev.enrol_speaker) | set(ev.test_speaker)
    cell = {s: f"{attrs.loc[s, 'gender']}×{attrs.loc[s, 'accent']}" for s in spk}
    want = pd.Series(cell).value_counts()
    got = pd.to_numeric(crossed["speakers"]).groupby(crossed["group"]).min().astype(int)
    assert got.to_dict() == want.to_dict()
    comparisons = pd.read_csv(run_dir / "fairness.csv", keep_default_na=False)
    c = comparisons[comparisons.group_by == "gender×accent"]
    small = c.group_a.map(want).lt(5) | c.group_b.map(want).lt(5)
    assert len(c) and (pd.to_numeric(c.loc[small, "p_value"], errors="coerce").isna()).all()
    res = CliRunner().invoke(app, ["analyze", str(run_dir), "--bootstrap", "0", "--out", str(tmp_path / "a"), "-q"])
    assert res.exit_code == 0, res.output
    flat = " ".join(res.output.split())
    assert f"fairness gender×accent: {len(want)} crossed cells, speakers " in flat
    assert f"{len(c)} comparisons: 0 tested, {int(small.sum())} not tested: a cell under 5 speakers" in flat
