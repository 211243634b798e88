"""ASV + CM fusion inside a run (interbias/analysis/security/sasv_run.py): a small spoofing run with a dev
split is built here; once cm_trials.parquet sits beside its score files, a rerun's after-run
analyses write sasv_fusion.csv, whose numbers equal the library function (sasv_table) applied
by hand on the run's files, and every file the run had before stays byte-identical."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from cm_fixtures import copy_attacks
from conftest import tiny_experiment

from interbias.analysis.after_run import run_analyses
from interbias.analysis.groups.fairness_stats import pair_groups
from interbias.analysis.reporting.document import Report, to_markdown
from interbias.analysis.security.sasv_run import cm_llr, read_cm_trials, sasv_answer, sasv_section
from interbias.metrics.logistic import fit_logistic
from interbias.metrics.sasv import a_dcf
from interbias.metrics.sasv_fusion import COLUMNS, sasv_table
from interbias.run.conductor import RunOptions, run
from interbias.run.rundir import CM_TRIALS, SASV_FUSION, RunDir
from interbias.utils.errors import AnalysisError

#: A CM's score per trial class: calibrated LLRs drawn around these means (unit SD).
MEANS = {"target": 2.0, "nontarget": 1.5, "spoof": -2.0}


def _options(tmp: Path, cache: Path, corpus) -> RunOptions:
    """A gender × noise run with a dev split whose attacks are other speakers' files, quietened."""
    exp = tiny_experiment(
        tmp, name="F52", trials={"targets": 24, "min_speakers": 3, "dev_share": 0.5},
        spoofing={"attacks": str(copy_attacks(tmp, corpus))}, fairness={"groups": ["gender"], "threshold": "eer"},
    )  # fmt: skip
    return RunOptions(
        experiment=str(exp), encoders=["mfcc-stats"], out=tmp / "r", quiet=True, command=["t"],
        cache_dir=cache, after_run=run_analyses,
    )  # fmt: skip


def _cm_trials(run_dir: Path, calibrated: bool) -> pd.DataFrame:
    """One CM's score of every trial in every cell (drawn per class; scaled when not calibrated)."""
    trials = pd.read_parquet(run_dir / "trials.parquet")
    cells = sorted(set(pd.read_csv(run_dir / "results.csv")["cell"]))
    rng = np.random.default_rng(52)
    parts = []
    for cell in cells:
        llr = rng.normal(trials["trial_type"].map(MEANS).to_numpy(), 1.0)
        parts.append(pd.DataFrame({"cm": "cm-a", "cell": cell, "trial_id": trials["trial_id"].to_numpy(),
                                   "cm_score": llr if calibrated else 3.0 * llr - 1.0, "calibrated": calibrated}))  # fmt: skip
    return pd.concat(parts, ignore_index=True)


def _files(run_dir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run_dir)): p.read_bytes() for p in sorted(run_dir.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def fused(tmp_path_factory, tiny_corpus, session_cache) -> dict:
    tmp = tmp_path_factory.mktemp("sasv")
    opts = _options(tmp, session_cache, tiny_corpus)
    run_dir = run(opts).run_dir
    before = _files(run_dir)
    assert SASV_FUSION not in before  # a run without CM scores writes none
    _cm_trials(run_dir, calibrated=False).to_parquet(run_dir / CM_TRIALS)
    refused = run(opts)
    refused_files = _files(run_dir)
    _cm_trials(run_dir, calibrated=True).to_parquet(run_dir / CM_TRIALS)
    outcome = run(opts)
    assert outcome.run_dir == run_dir and SASV_FUSION in _files(run_dir)
    return {"run": run_dir, "before": before, "refused": refused, "refused_files": refused_files}


def test_existing_outputs_stay_byte_identical(fused: dict) -> None:
    after = _files(fused["run"])
    changed = [name for name, data in fused["before"].items() if name != "run.json" and after[name] != data]
    assert changed == []
    assert sorted(set(after) - set(fused["before"])) == [CM_TRIALS, SASV_FUSION]
    record = json.loads((fused["run"] / "run.json").read_text())
    assert record["analyses"]["sasv_fusion"] == SASV_FUSION


def test_fusion_equals_the_library_function_by_hand(fused: dict) -> None:
    run_dir = fused["run"]
    cal = json.loads((run_dir / "calibration.json").read_text())["models"]["mfcc-stats"]
    trials = pd.read_parquet(run_dir / "trials.parquet").set_index("trial_id")
    attrs = pd.read_parquet(run_dir / "attributes.parquet").set_index("id")["gender"]
    cm = pd.read_parquet(run_dir / CM_TRIALS)
    frames = []
    for cell in sorted(set(cm["cell"])):
        sc = pd.read_parquet(RunDir(run_dir).scores_path("mfcc-stats", cell)).set_index("trial_id")
        sc = sc[["score", "dropped"]].join(trials)
        sc = sc[(sc["split"] == "eval") & ~sc["dropped"].astype(bool)]
        side = cm[cm["cell"] == cell].set_index("trial_id")["cm_score"]
        groups = pair_groups(attrs.reindex(sc["enrol"]).tolist(), attrs.reindex(sc["test"]).tolist())
        frames.append(pd.DataFrame({"cell": cell, "gender": groups, "key": sc["trial_type"].to_numpy(),
                                    "asv_llr": cal["slope"] * sc["score"].to_numpy() + cal["offset"],
                                    "cm_llr": side.reindex(sc.index).to_numpy()}))  # fmt: skip
    frame = pd.concat(frames, ignore_index=True)
    assert set(frame["key"]) == {"target", "nontarget", "spoof"}
    got = pd.read_csv(run_dir / SASV_FUSION, keep_default_na=False)
    assert set(got["cm_calibration"]) == {"calibrated"} and set(got["model"]) == {"mfcc-stats"}
    pooled = sasv_table(frame, ["cell"])
    mine = got[got["group"] == "all"].reset_index(drop=True)
    assert list(mine["cell"]) == list(pooled["cell"])
    np.testing.assert_allclose(mine[COLUMNS].to_numpy(float), pooled[COLUMNS].to_numpy(float), rtol=1e-12)
    full = [g for g, p in frame.groupby("gender") if set(p["key"]) == {"target", "nontarget", "spoof"}]
    assert full, "no gender group holds all three trial classes"
    by_group = sasv_table(frame[frame["gender"].isin(full)], ["cell", "gender"])
    mine = got[got["group"].isin(full) & (got["group_by"] == "gender")].sort_values(["cell", "group"])
    np.testing.assert_allclose(mine[COLUMNS].to_numpy(float), by_group[COLUMNS].to_numpy(float), rtol=1e-12)


def test_uncalibrated_cm_without_dev_spoofs_is_refused_in_one_line(fused: dict) -> None:
    # spoof trials are drawn in the eval split only, so the dev split cannot calibrate the CM
    errors = [e for e in fused["refused"].errored_cells if e.startswith("analysis:")]
    assert len(errors) == 1 and "CM cm-a is not calibrated" in errors[0] and "\n" not in errors[0]
    assert SASV_FUSION not in fused["refused_files"]


def test_uncalibrated_cm_gets_the_logistic_dev_calibration() -> None:
    rng = np.random.default_rng(7)
    kinds = np.array(["target", "nontarget", "spoof"] * 40)
    trials = pd.DataFrame({"split": np.where(np.arange(120) < 60, "dev", "eval"), "trial_type": kinds},
                          index=pd.Index(np.arange(120), name="trial_id"))  # fmt: skip
    score = rng.normal(np.where(kinds == "spoof", -1.0, 1.0), 1.0) * 4 + 3
    part = pd.DataFrame({"cm": "x", "cell": np.where(np.arange(120) % 2, "ref", "other"), "trial_id": np.arange(120),
                         "cm_score": score, "calibrated": False})  # fmt: skip
    llr, how = cm_llr(part, trials, {"ref"})
    dev = (trials["split"].to_numpy() == "dev") & (part["cell"].to_numpy() == "ref")
    fit = fit_logistic(score[dev][:, None], kinds[dev] != "spoof", ("cm_score",), prior=0.5)
    assert how == "logistic-dev"
    np.testing.assert_allclose(llr, fit.weights[0] * score + fit.offset, rtol=1e-12)


def test_asv_alone_column_is_the_a_dcf_of_the_asv_llr(fused: dict) -> None:
    run_dir = fused["run"]
    cal = json.loads((run_dir / "calibration.json").read_text())["models"]["mfcc-stats"]
    trials = pd.read_parquet(run_dir / "trials.parquet").set_index("trial_id")
    got = pd.read_csv(run_dir / SASV_FUSION, keep_default_na=False)
    for row in got[got["group"] == "all"].itertuples(index=False):
        sc = pd.read_parquet(RunDir(run_dir).scores_path("mfcc-stats", row.cell)).set_index("trial_id")
        sc = sc[["score", "dropped"]].join(trials)
        sc = sc[(sc["split"] == "eval") & ~sc["dropped"].astype(bool)]
        llr = cal["slope"] * sc["score"] + cal["offset"]
        want = a_dcf(*(llr[sc["trial_type"] == k].to_numpy() for k in ("target", "nontarget", "spoof")))[0]
        assert row.a_dcf_asv == pytest.approx(want, rel=1e-12)


def test_a_dcf_change_interval_is_the_findings_corrected_t_interval(fused: dict, monkeypatch) -> None:
    """a_dcf_change's interval is the findings' rule, recomputed here from the replicates as repeated
    trials: SE² = a·V_S − c·V_N over the speaker and non-target-pair resamples, Student t at the
    Satterthwaite df; resolved only after Holm over the table's rows. The tiny run's cells hold 3
    speakers each: every row is "too few speakers" (never resolved); with the minimum lowered to 2
    for this check, the interval is the one computed here."""
    from scipy.stats import t as student_t

    from interbias.analysis.effects import Correction
    from interbias.analysis.security.sasv_run import N_BOOT, SEED
    from interbias.analysis.stats.bootstrap import Resampler, TrialDesign
    from interbias.analysis.stats.multiplicity import adjust
    from interbias.analysis.suite import design_constants

    run_dir = fused["run"]
    cal = json.loads((run_dir / "calibration.json").read_text())["models"]["mfcc-stats"]
    trials = pd.read_parquet(run_dir / "trials.parquet")
    cm = pd.read_parquet(run_dir / CM_TRIALS)
    got = pd.read_csv(run_dir / SASV_FUSION, keep_default_na=False)
    sc = pd.read_parquet(RunDir(run_dir).scores_path("mfcc-stats", got["cell"].iloc[0])).set_index("trial_id")
    sc = sc[["score", "dropped"]].join(trials.set_index("trial_id"))
    sc = sc[(sc["split"] == "eval") & ~sc["dropped"].astype(bool)]
    speakers = len(set(sc["enrol_speaker"]) | set(sc["test_speaker"]))
    assert int(got["a_dcf_change_speakers"].iloc[0]) == speakers < 5
    assert (got["a_dcf_change_status"] == "too few speakers").all() and not got["a_dcf_change_resolved"].astype(
        bool
    ).any()
    assert (got["a_dcf_change_lo"] == "").all()  # no interval is printed for too few speakers
    import interbias.analysis.effect_rule as rule
    from interbias.analysis.security.sasv_run import sasv_fusion_for_run

    monkeypatch.setattr(rule, "MIN_SPEAKERS", 2)
    got = sasv_fusion_for_run(RunDir(run_dir))
    row = got[got["group"] == "all"].iloc[0]
    asv = cal["slope"] * sc["score"].to_numpy() + cal["offset"]
    fused_llr = asv + cm[cm["cell"] == row["cell"]].set_index("trial_id")["cm_score"].reindex(sc.index).to_numpy()
    key = sc["trial_type"].to_numpy()
    design = TrialDesign.from_frame(trials)
    at = design.rows(sc.index.to_numpy())

    def diffs(unit: str) -> np.ndarray:
        out = []
        for w in Resampler(design, n_boot=N_BOOT, seed=SEED, unit=unit).weights(at).astype(int):
            rep = {k: (np.repeat(asv[key == k], w[key == k]), np.repeat(fused_llr[key == k], w[key == k])) for k in
                   ("target", "nontarget", "spoof")}  # fmt: skip
            if min(len(v[0]) for v in rep.values()) == 0:
                continue
            out.append(a_dcf(*(v[1] for v in rep.values()))[0] - a_dcf(*(v[0] for v in rep.values()))[0])
        return np.asarray(out)

    v_s, v_n = np.var(diffs("speaker"), ddof=1), np.var(diffs("nontarget"), ddof=1)
    corr = Correction(None, *design_constants(design, [at]))  # type: ignore[arg-type]
    a, c = corr.factors
    se, df = np.sqrt(a * v_s - c * v_n), float(corr.df(np.array([v_s]), np.array([v_n]), N_BOOT)[0])
    est = float(row["a_dcf_change"])
    q = student_t.ppf(0.975, df)
    assert float(row["a_dcf_change_se"]) == pytest.approx(se, rel=1e-9)
    assert float(row["a_dcf_change_lo"]) == pytest.approx(est - q * se, abs=1e-9)
    assert float(row["a_dcf_change_hi"]) == pytest.approx(est + q * se, abs=1e-9)
    assert float(row["a_dcf_change"]) == pytest.approx(float(row["a_dcf_sum"]) - float(row["a_dcf_asv"]), abs=1e-15)
    tested = got["a_dcf_change_status"].isin(["resolved", "not resolved"]).to_numpy()
    assert tested.sum() >= len(got) // 2, got["a_dcf_change_status"].value_counts()
    holm = adjust(got.loc[tested, "a_dcf_change_p"].to_numpy(float), "holm")
    assert np.allclose(got.loc[tested, "a_dcf_change_p_holm"].to_numpy(float), holm)
    assert ((got.loc[tested, "a_dcf_change_status"] == "resolved").to_numpy() == (holm < 0.05)).all()
    assert (got["a_dcf_change_resolved"] == (got["a_dcf_change_status"] == "resolved")).all()


def test_report_leads_with_the_cell_means_with_and_without_the_cm(fused: dict) -> None:
    rep = Report("t")
    sasv_section(fused["run"], rep)
    text = to_markdown(rep, "fig")
    assert "## ASV + CM fusion" in text and SASV_FUSION in text
    got = pd.read_csv(fused["run"] / SASV_FUSION, keep_default_na=False)
    pooled = got[got["group"] == "all"]
    first = text.index("| model | cm | a_dcf_asv | a_dcf_sum | a_dcf_product | t_eer |")
    row = text[first:].splitlines()[2].split(" | ")
    means = [f"{pooled[c].astype(float).mean():.3f}" for c in ("a_dcf_asv", "a_dcf_sum", "a_dcf_product")]
    assert row[2:5] == means, row
    empty = Report("t")
    sasv_section(fused["run"] / "nowhere", empty)
    assert empty.blocks == []


def test_answer_names_the_cm_change_per_group_with_its_direction(fused: dict, tmp_path: Path) -> None:
    """The answer: the CM's EER and t-EER and a-DCF alone and with the CM (cell means); per gender
    the change as a verb (lowers/raises, negative a_dcf_change = lower = better) and its size; the
    worst group with its trial counts. An old table with ``cm_gain`` columns reads the same."""
    got = pd.read_csv(fused["run"] / SASV_FUSION, keep_default_na=False)
    num = got.replace("", np.nan)
    pooled, groups = num[num["group"] == "all"], num[num["group"] != "all"]
    lines = sasv_answer(fused["run"])
    cm_eer, t_eer = pooled["cm_eer"].astype(float).mean(), pooled["t_eer"].astype(float).mean()
    assert lines[0] == (
        f"cm-a with mfcc-stats: CM EER {cm_eer:.3f}, t-EER {t_eer:.3f}; a-DCF "
        f"{pooled['a_dcf_asv'].astype(float).mean():.3f} alone, {pooled['a_dcf_sum'].astype(float).mean():.3f} "
        f"with the CM (means over {len(pooled)} cells; resolved in none of {len(pooled)} cells)."
    )
    for g, part in groups.groupby("group"):
        ch = part["a_dcf_change"].astype(float).mean()
        verb = "lowers" if ch < 0 else "raises"
        assert f"{verb} {g}'s a-DCF by {abs(ch):.3f} (" in lines[1], lines[1]
    assert lines[1].startswith("per gender: the CM ")
    worst = groups.loc[groups["a_dcf_sum"].astype(float).idxmax()]
    assert lines[2].startswith(
        f"worst group: gender={worst['group']} in {worst['cell']}, a-DCF {float(worst['a_dcf_sum']):.3f} with the CM "
        f"({int(worst['n_target'])} target, {int(worst['n_nontarget'])} non-target, {int(worst['n_spoof'])} spoof"
    )
    old = tmp_path / "old"
    old.mkdir()
    got.rename(columns=lambda c: c.replace("a_dcf_change", "cm_gain")).drop(columns="cm_eer").to_csv(
        old / SASV_FUSION, index=False
    )
    assert sasv_answer(old)[1:] == lines[1:] and "a-DCF" in sasv_answer(old)[0]
    assert sasv_answer(fused["run"] / "nowhere") == []


def test_cm_eer_is_the_cms_own_eer_on_its_llr(fused: dict) -> None:
    """cm_eer: bona fide (target and non-target trials) against spoof on the CM's llr, the EER
    recomputed here by brute force over thresholds (interpolated crossing)."""
    got = pd.read_csv(fused["run"] / SASV_FUSION, keep_default_na=False)
    cm = pd.read_parquet(fused["run"] / CM_TRIALS)
    trials = pd.read_parquet(fused["run"] / "trials.parquet").set_index("trial_id")
    row = got[got["group"] == "all"].iloc[0]
    sc = pd.read_parquet(RunDir(fused["run"]).scores_path("mfcc-stats", row["cell"])).set_index("trial_id")
    sc = sc.join(trials[[c for c in ("split", "trial_type") if c not in sc.columns]])
    sc = sc[(sc["split"] == "eval") & ~sc["dropped"].astype(bool)]
    side = cm[cm["cell"] == row["cell"]].set_index("trial_id")["cm_score"].reindex(sc.index).to_numpy()
    bona = (sc["trial_type"] != "spoof").to_numpy()
    # cm-a is calibrated: its score is its llr. EER: where miss (bona fide below) meets false alarm.
    best = min(
        (
            abs((side[bona] < t).mean() - (side[~bona] >= t).mean()),
            ((side[bona] < t).mean() + (side[~bona] >= t).mean()) / 2,
        )
        for t in np.unique(side)
    )
    assert float(row["cm_eer"]) == pytest.approx(best[1], abs=0.5 / min(bona.sum(), (~bona).sum()) + 1e-12)


def test_a_run_without_dev_trials_is_refused_in_one_line(tmp_path, tiny_corpus, session_cache) -> None:
    opts = _options(tmp_path, session_cache, tiny_corpus)
    exp = yaml.safe_load(Path(opts.experiment).read_text())
    exp["trials"].pop("dev_share")
    Path(opts.experiment).write_text(yaml.safe_dump(exp, sort_keys=False))
    run_dir = run(opts).run_dir
    _cm_trials(run_dir, calibrated=True).to_parquet(run_dir / CM_TRIALS)
    errors = [e for e in run(opts).errored_cells if e.startswith("analysis:")]
    assert len(errors) == 1 and "mfcc-stats has no ASV calibration" in errors[0]
    assert not (run_dir / SASV_FUSION).exists()


def test_a_bad_cm_trials_file_is_refused(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {"cm": ["a"], "cell": ["c"], "trial_id": [0], "cm_score": [float("nan")], "calibrated": [True]}
    )
    frame.to_parquet(tmp_path / CM_TRIALS)
    with pytest.raises(AnalysisError, match="cm_score 'nan' on row 1 is not a finite number"):
        read_cm_trials(RunDir(tmp_path))
    frame.drop(columns="calibrated").to_parquet(tmp_path / CM_TRIALS)
    with pytest.raises(AnalysisError, match=r"lacks column\(s\) calibrated"):
        read_cm_trials(RunDir(tmp_path))
    assert read_cm_trials(RunDir(tmp_path / "none")) is None


def test_analyze_ends_with_what_the_cm_does(fused: dict, monkeypatch) -> None:
    """analyze's last lines on a run with a CM: the question, then the CM's lines (its EER,
    a-DCF alone and with it, the change per gender in words, the worst group)."""
    from typer.testing import CliRunner

    from interbias.cli import app

    monkeypatch.setenv("COLUMNS", "80")
    out = CliRunner().invoke(app, ["analyze", str(fused["run"]), "--bootstrap", "0", "--out", str(fused["run"] / "a")])
    assert out.exit_code == 0, out.output
    tail = " ".join(x.strip() for x in out.stdout.splitlines()[-20:])
    want = sasv_answer(fused["run"])
    assert "answer: " in tail and "per gender: the CM " in tail
    for line in want:
        assert line in tail, (line, tail)


def test_report_answer_opens_with_what_the_cm_does(fused: dict, tmp_path: Path) -> None:
    """report.md's Answer: the question, then the CM's lines before anything else."""
    from typer.testing import CliRunner

    from interbias.cli import app

    out = CliRunner().invoke(app, ["report", str(fused["run"]), "--bootstrap", "0", "--out", str(tmp_path)])
    assert out.exit_code == 0, out.output
    md = (tmp_path / "report.md").read_text()
    answer = md.split("## Answer\n\n", 1)[1].split("\n## ", 1)[0]
    first = answer.split("\n\n")
    assert first[0].startswith("Question: ") and first[1].startswith("What the countermeasure does: ")
    assert all(f"- {line}" in first[2] for line in sasv_answer(fused["run"])), first[2]


def test_the_question_s_population_groups_come_before_other_groupings(fused: dict, tmp_path: Path) -> None:
    """E26 asks "for which gender?": its population factor's groups are answered first, a
    fairness grouping that sorts before it by name (``accent``) after them."""
    got = pd.read_csv(fused["run"] / SASV_FUSION, keep_default_na=False)
    gender = got[got["group_by"] == "gender"]
    accent = gender.assign(group_by="accent", group=gender["group"].map({"female": "gb", "male": "us"}))
    (tmp_path / SASV_FUSION).write_text(pd.concat([got, accent]).to_csv(index=False))
    heads = [line.split(":")[0] for line in sasv_answer(tmp_path) if line.startswith("per ")]
    assert heads == ["per accent", "per gender"]  # no experiment file: by name
    shutil.copy(fused["run"] / "experiment.resolved.json", tmp_path)  # gender: its population factor
    heads = [line.split(":")[0] for line in sasv_answer(tmp_path) if line.startswith("per ")]
    assert heads == ["per gender", "per accent"]
