"""fusion_comparison.csv's intervals (:mod:`interbias.analysis.fusion.paired`) recomputed here on a
written run of clustered scores: per replicate each model's EER on the trials repeated by their
bootstrap multiplicities (np.repeat), the change fused − component per cell and its mean over
cells (macro), SE² = a·V_S − c·V_N, the Student-t interval and p at the Satterthwaite df, Holm
over the macro rows and apart over the cell rows; and the verdict lines say it in words."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from synthetic_runs import ScoreModel, clustered_scores, clustered_trials, write_run

from interbias.analysis.effect_rule import Resamplers
from interbias.analysis.fusion.compare import verdicts
from interbias.analysis.fusion.paired import paired_comparison
from interbias.analysis.stats.bootstrap import TrialDesign
from interbias.metrics import verification as metrics
from interbias.run.rundir import RunDir
from interbias.utils.seeding import derive_rng

LABEL, MODELS, B = "A+B fused", ["A", "B"], 200
STRATA = {"gender=female": 12, "gender=male": 12}


def _run(folder: Path, strata: dict[str, int] = STRATA) -> Path:
    """Two models and a fusion of them (0.8·A + 0.5·B, so the changes are paired), per gender."""
    trials = clustered_trials(strata, 6, 6)
    rng = derive_rng("test-fusion-paired")
    cells = {}
    for st, (mu_a, mu_b) in zip(strata, ((2.0, 1.6), (2.4, 1.2)), strict=True):
        part = trials[trials.stratum == st]
        ids, lv = part.trial_id.to_numpy(), st.split("=")[1]
        a = clustered_scores(part, ScoreModel(), mu_a, rng)
        b = clustered_scores(part, ScoreModel(), mu_b, rng)
        cells |= {("A", (lv,)): (ids, a), ("B", (lv,)): (ids, b), (LABEL, (lv,)): (ids, 0.8 * a + 0.5 * b)}
    return write_run(folder, trials, cells, [("gender", "population", "female")])


def _eers(scores: np.ndarray, labels: np.ndarray, weights: np.ndarray) -> np.ndarray:
    out = []
    for w in weights.astype(int):
        s, lab = np.repeat(scores, w), np.repeat(labels, w)
        out.append(metrics.eer(s, lab) if 0 < lab.sum() < len(lab) else np.nan)
    return np.array(out)


def _expected(est: float, reps_s: np.ndarray, reps_n: np.ndarray, corr) -> tuple[float, float, float, float, float]:
    v_s, v_n = np.var(reps_s[np.isfinite(reps_s)], ddof=1), np.nanvar(reps_n, ddof=1)
    a, c = corr.factors
    se = float(np.sqrt(a * v_s - c * v_n))
    df = float(corr.df(np.array([v_s]), np.array([v_n]), B)[0])
    q = stats.t.ppf(0.975, df)
    return se, df, est - q * se, est + q * se, float(2 * stats.t.sf(abs(est) / se, df))


def _holm(p: list[float]) -> list[float]:
    order = np.argsort(p)
    out, running = np.empty(len(p)), 0.0
    for i, k in enumerate(order):
        running = max(running, min(1.0, (len(p) - i) * p[k]))
        out[k] = running
    return out.tolist()


def test_changes_and_intervals_by_hand(tmp_path: Path) -> None:
    run = RunDir(_run(tmp_path / "run"))
    table = paired_comparison(run, LABEL, MODELS, n_boot=B)
    assert list(table.component) == ["A"] * 3 + ["B"] * 3 and set(table.fused) == {LABEL}
    assert list(table.cell) == ["macro", "gender=female", "gender=male"] * 2
    boot = Resamplers.of(TrialDesign.from_frame(pd.read_parquet(run.path / "trials.parquet")), B, 0)
    results = pd.read_csv(run.path / "results.csv").set_index(["model", "cell"])
    cells = ["gender=female", "gender=male"]
    expect: dict[tuple[str, str], tuple] = {}
    for m in MODELS:
        changes, reps = [], {"s": [], "n": []}
        for cell in cells:
            f, own = run.read_scores(LABEL, cell), run.read_scores(m, cell)
            rows, lab = boot.design.rows(f.trial_id.to_numpy()), f.label.to_numpy(bool)
            per = {}
            for unit, resampler in (("s", boot.speaker), ("n", boot.pairs)):
                w = resampler.weights(rows)
                per[unit] = _eers(f.score.to_numpy(), lab, w) - _eers(own.score.to_numpy(), lab, w)
                reps[unit].append(per[unit])
            change = results.loc[(LABEL, cell), "eer"] - results.loc[(m, cell), "eer"]
            changes.append(change)
            expect[(m, cell)] = _expected(change, per["s"], per["n"], boot.correction([rows]))
        rows_all = [boot.design.rows(run.read_scores(LABEL, c).trial_id.to_numpy()) for c in cells]
        mean_s, mean_n = np.mean(reps["s"], axis=0), np.mean(reps["n"], axis=0)
        expect[(m, "macro")] = _expected(float(np.mean(changes)), mean_s, mean_n, boot.correction(rows_all))
    got = table.set_index(["component", "cell"])
    for key, (se, df, lo, hi, p) in expect.items():
        r = got.loc[key]
        assert r.eer == pytest.approx(results.loc[(key[0], key[1]), "eer"] if key[1] != "macro" else
                                      results.loc[key[0]].eer.mean())  # fmt: skip
        assert r.change == pytest.approx(r.fused_eer - r.eer)
        assert (r.se, r.df, r.lo, r.hi, r.p) == pytest.approx((se, df, lo, hi, p), rel=1e-9)
        assert r.speakers == (24 if key[1] == "macro" else 12)
    for family in (["macro"], cells):  # Holm over the macro rows, and apart over the cell rows
        keys = [(m, c) for m in MODELS for c in family]
        holm = _holm([expect[k][4] for k in keys])
        for k, h in zip(keys, holm, strict=True):
            assert got.loc[k].p_holm == pytest.approx(h, rel=1e-9)
            assert got.loc[k].status == ("resolved" if h < 0.05 else "not resolved")
    lines = verdicts(table, LABEL)
    for m, line in zip(MODELS, lines, strict=True):
        r = got.loc[(m, "macro")]
        assert line.startswith(
            f"{LABEL} vs {m}: macro EER {r.fused_eer:.3f} vs {r.eer:.3f}, change {r.change:+.3f} "
            f"(95 % CI {r.lo:+.3f} to {r.hi:+.3f}, {r.status}): "
        )
        word = {(True, True): "fusion helped", (False, True): "fusion did not help: the fused model is worse",
                (True, False): "fusion did not clearly help"}.get((r.change < 0, r.resolved), "fusion did not help")  # fmt: skip
        assert word in line


def test_too_few_speakers_is_never_resolved(tmp_path: Path) -> None:
    """Cells of 4 speakers (fewer than 5): "too few speakers", no interval, never resolved."""
    table = paired_comparison(RunDir(_run(tmp_path / "run", dict.fromkeys(STRATA, 4))), LABEL, MODELS, n_boot=B)
    cells = table[table.cell != "macro"]
    assert (cells.status == "too few speakers").all() and not cells.resolved.any() and cells.lo.isna().all()
    assert (table[table.cell == "macro"].speakers == 8).all()
