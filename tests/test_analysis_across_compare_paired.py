"""``compare --paired``: paired speaker-bootstrap differences of two score sets on one trial
list — point values against the plain metrics, null pairs pass, a regression fails, and the
equivalence gate both ways."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from interbias.analysis.across.compare_paired import PairedRow, paired_test
from interbias.metrics import verification as metrics


def trial_list(rng: np.random.Generator, n_speakers: int = 30, per: int = 10) -> pd.DataFrame:
    """Targets (per speaker) and non-targets (each speaker against ``per`` others of its stratum)."""
    strata = np.where(np.arange(n_speakers) < n_speakers // 2, "f", "m")
    rows = []
    for s in range(n_speakers):
        rows += [(s, s, 1)] * per
        others = np.flatnonzero((strata == strata[s]) & (np.arange(n_speakers) != s))
        rows += [(s, int(t), 0) for t in rng.choice(others, per)]
    e, t, lab = map(np.array, zip(*rows, strict=True))
    return pd.DataFrame(
        {
            "trial_id": np.arange(len(e)),
            "enrol_speaker": [f"s{i}" for i in e],
            "test_speaker": [f"s{i}" for i in t],
            "stratum": strata[e],
            "label": lab,
        }
    )


def score_pair(rng: np.random.Generator, trials: pd.DataFrame, *, noise: float = 0.3, shift: float = 0.0):
    """Two score sets differing only by independent noise draws (a stochastic operator's draw);
    ``shift`` lowers the new run's target scores (a real regression)."""
    n = trials.enrol_speaker.str[1:].astype(int).max() + 1
    u = rng.normal(0, 0.7, n)
    e, t = trials.enrol_speaker.str[1:].astype(int), trials.test_speaker.str[1:].astype(int)
    lab = trials.label.to_numpy().astype(bool)
    signal = np.where(lab, 2.0 + u[e], 0.5 * (u[e] + u[t])) + rng.normal(0, 1, len(trials))
    base = signal + rng.normal(0, noise, len(trials))
    new = signal + rng.normal(0, noise, len(trials)) - shift * lab
    return base, new


def rows_for(trials: pd.DataFrame, pairs: list[tuple[np.ndarray, np.ndarray]]) -> list[PairedRow]:
    lab = trials.label.to_numpy().astype(bool)
    return [PairedRow(("E", f"cell{i}", "M"), np.arange(len(trials)), lab, b, n) for i, (b, n) in enumerate(pairs)]


def test_point_values_are_the_plain_metrics_and_a_regression_is_resolved() -> None:
    rng = np.random.default_rng(7)
    trials = trial_list(rng)
    pairs = [score_pair(rng, trials), score_pair(rng, trials, shift=1.0)]
    out = paired_test(trials, rows_for(trials, pairs), n_boot=400)
    lab = trials.label.to_numpy()
    for (b, n), cell in zip(pairs, ("cell0", "cell1"), strict=True):
        r = out[(out.cell == cell) & (out.metric == "eer")].iloc[0]
        assert r.base == pytest.approx(metrics.eer(b, lab), abs=1e-12)
        assert r.new == pytest.approx(metrics.eer(n, lab), abs=1e-12)
        assert r["diff"] == pytest.approx(r.new - r.base, abs=1e-15)
        d = out[(out.cell == cell) & (out.metric == "min_dcf")].iloc[0]
        assert d.base == pytest.approx(metrics.min_dcf(b, lab), abs=1e-12)
    null, shifted = out[out.cell == "cell0"], out[out.cell == "cell1"]
    assert not null.regression.any()
    reg = shifted[shifted.metric == "eer"].iloc[0]
    assert reg["diff"] > 0.05 and reg.regression and reg.p_holm < 0.05
    # Holm over the family: 300 non-targets x 0.01 = 3 < 10 leaves minDCF out (counted)
    from statsmodels.stats.multitest import multipletests

    from interbias.analysis.across.compare_paired import UNSUPPORTED

    fam = out[out.left_out == ""]
    assert set(fam.metric) == {"eer"} and (out[out.metric == "min_dcf"].left_out == UNSUPPORTED).all()
    assert out[out.metric == "min_dcf"].p_holm.isna().all()
    assert fam.p_holm.to_numpy() == pytest.approx(multipletests(fam.p_regression, method="holm")[1])
    # a margin larger than the regression: not a failing regression any more
    wide = paired_test(trials, rows_for(trials, pairs), n_boot=400, margin=0.5)
    assert not wide.regression.any()


def test_paired_se_is_smaller_than_the_unpaired_spread() -> None:
    """Speaker effects shared by both runs cancel: the paired SE of the EER difference is below
    the SE either run's EER has on its own (the same bootstrap, one run)."""
    rng = np.random.default_rng(3)
    trials = trial_list(rng)
    b, n = score_pair(rng, trials)
    paired = paired_test(trials, rows_for(trials, [(b, n)]), n_boot=400, metrics=("eer",)).iloc[0]
    alone = paired_test(
        trials,
        rows_for(trials, [(b, np.zeros_like(b) + (trials.label.to_numpy() * 5.0))]),
        n_boot=400,
        metrics=("eer",),
    ).iloc[0]
    assert paired.se < alone.se  # new = a perfect system: the difference's spread is base's own


def test_equivalence_both_ways() -> None:
    rng = np.random.default_rng(11)
    trials = trial_list(rng, n_speakers=40, per=12)
    pairs = [score_pair(rng, trials, noise=0.05) for _ in range(3)]
    ok = paired_test(trials, rows_for(trials, pairs), n_boot=400, equivalence=0.03, metrics=("eer",))
    assert ok.equivalent.all() and (ok.p_equivalence <= 0.05).all()
    pairs[1] = score_pair(rng, trials, noise=0.05, shift=0.8)
    bad = paired_test(trials, rows_for(trials, pairs), n_boot=400, equivalence=0.03, metrics=("eer",))
    assert bad.equivalent.tolist() == [True, False, True]


@pytest.mark.slow
def test_null_pairs_pass_the_gate_in_at_least_95_percent() -> None:
    """100 null pairs (three rows each, two metrics): two score sets on one trial list that
    differ only by independent noise draws; the gate (no Holm-resolved regression) passes."""
    passed = 0
    for i in range(100):
        rng = np.random.default_rng([37, i])
        trials = trial_list(rng, n_speakers=24, per=8)
        pairs = [score_pair(rng, trials) for _ in range(3)]
        out = paired_test(trials, rows_for(trials, pairs), n_boot=300)
        passed += not out.regression.any()
    print(f"null pairs passing the gate: {passed} of 100")
    assert passed >= 95, passed


def _run(tmp_path: Path, session_cache, name: str, snr_db: float, draws: int = 1) -> Path:
    from conftest import gender_factor, tiny_experiment
    from run_helpers import isolated_cache

    from interbias.run.conductor import RunOptions, run

    folder = tmp_path / name
    folder.mkdir()
    noise = {"clean": [], "noisy": [{"op": "noise", "kind": "gaussian", "snr_db": snr_db}]}
    factors = [
        gender_factor(),
        {"name": "noise", "type": "acoustic", "apply_to": "test", "reference": "clean", "levels": noise},
    ]  # fmt: skip
    exp = tiny_experiment(folder, factors=factors, trials={"targets": 40, "min_speakers": 4, "operator_draws": draws})
    opts = RunOptions(
        experiment=str(exp), encoders=["mfcc-stats"], out=folder / "r", quiet=True,
        cache_dir=isolated_cache(folder, session_cache),
    )  # fmt: skip
    return run(opts).run_dir


def test_real_runs_a_draw_pair_passes_and_a_noisier_chain_fails(tmp_path: Path, tiny_corpus, session_cache) -> None:
    """Two real runs on one trial list: draw 0 vs draw 1 of the same random noise (a null: exit
    0); the same experiment with its noisy chain at 0 dB instead of 30 dB (exit 1: the noisy cells
    regress; the tiny corpus's mfcc-stats is near chance by 10 dB, so a smaller step is not
    resolvable on 6 speakers per stratum)."""
    from typer.testing import CliRunner

    from interbias.cli import app

    base = _run(tmp_path, session_cache, "base", 30.0, draws=2)
    other = tmp_path / "draw1"
    shutil.copytree(base, other)
    for path in (other / "scores").rglob("*.parquet"):
        frame = pd.read_parquet(path)
        if "score_d1" in frame.columns:
            frame.assign(score=frame.score_d1).to_parquet(path, index=False)
    res = CliRunner().invoke(app, ["runs", "compare", str(base), str(other), "--paired", "--all", "--bootstrap", "300"])
    assert res.exit_code == 0, res.output
    # 6 speakers per stratum: a row whose Satterthwaite df falls below 2 is left out and counted
    tested = int(re.search(r"0 of (\d+) value\(s\) with a resolved regression", res.output).group(1))
    low = re.search(r"(\d+) Satterthwaite df below 2", res.output)
    assert tested + (int(low.group(1)) if low else 0) == 2, res.output
    assert res.output.count("(Satterthwaite df below 2") == (int(low.group(1)) if low else 0)
    assert "left out of the family: 4 identical scores in both runs (identical inputs)" in res.output
    noisy = _run(tmp_path, session_cache, "noisy", 0.0)
    res = CliRunner().invoke(app, ["runs", "compare", str(base), str(noisy), "--paired", "--bootstrap", "300"])
    assert res.exit_code == 1, res.output
    assert "regression: T01 / gender=" in res.output and ",noise=noisy / mfcc-stats: eer" in res.output
    assert "noise=clean" not in res.output.split("regression:")[1]  # clean cells are the same audio


def test_paired_refuses_runs_without_scores_or_on_other_trial_lists(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from interbias.cli import app

    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        pd.DataFrame({"experiment": ["E"], "cell": ["c"], "model": ["M"], "eer": [0.1]}).to_csv(
            tmp_path / name / "results.csv", index=False
        )
    a, b = tmp_path / "a" / "results.csv", tmp_path / "b" / "results.csv"
    res = CliRunner().invoke(app, ["runs", "compare", str(a), str(b), "--paired"])
    assert res.exit_code == 1
    assert res.output.strip() == (
        f"error: {a}: --paired needs a run directory with per-trial scores (scores/ and trials.parquet); "
        "compare results files without scores with --tolerance"
    )
    res = CliRunner().invoke(app, ["runs", "compare", str(a), str(b), "--paired", "--equivalence", "0"])
    assert res.exit_code == 1 and res.output.strip() == "error: --equivalence must be a finite number > 0, got 0.0"
    res = CliRunner().invoke(app, ["runs", "compare", str(a), str(b), "--margin", "0.01"])
    assert res.output.strip() == "error: --margin and --equivalence need --paired (without it, --tolerance is the gate)"
