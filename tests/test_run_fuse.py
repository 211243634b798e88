"""``interbias fuse``: the fused model's weights equal scikit-learn's prior-weighted logistic
regression on the reference cells' dev trials, its scores and rows are recomputed by hand, analyze
and report read it like any other model; bad requests are refused in one line, nothing written."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import tiny_experiment
from run_helpers import isolated_cache
from test_fairness_run import SPLIT
from test_metrics_logistic import sklearn_fit
from typer.testing import CliRunner

from interbias.analysis.after_run import run_analyses
from interbias.cli import app
from interbias.metrics import verification as metrics
from interbias.run.conductor import RunOptions, run
from interbias.utils.paths import slug

MODELS = ["CAM++", "mfcc-stats"]
REFS = ("gender=female,noise=clean", "gender=male,noise=clean")


def _run(tmp: Path, session_cache: Path, name: str, **overrides) -> Path:
    tmp.mkdir(parents=True, exist_ok=True)
    exp = tiny_experiment(tmp, name=name, **overrides)
    opts = RunOptions(
        experiment=str(exp), encoders=MODELS, out=tmp / "r", quiet=True, command=["test"],
        cache_dir=isolated_cache(tmp, session_cache), after_run=run_analyses,
    )  # fmt: skip
    return run(opts).run_dir


@pytest.fixture(scope="module")
def two_models(tmp_path_factory, tiny_corpus, session_cache) -> Path:
    return _run(tmp_path_factory.mktemp("fuse"), session_cache, "T52", trials=SPLIT)


def _scores(run_dir: Path, model: str, cell: str) -> pd.DataFrame:
    return pd.read_parquet(run_dir / "scores" / slug(model) / f"{slug(cell)}.parquet")


def _fuse(run_dir: Path, out: Path, models: str = "CAM++,mfcc-stats"):
    return CliRunner().invoke(app, ["fuse", str(run_dir), "--models", models, "--out", str(out)], env={"COLUMNS": "80"})


def test_fused_model_equals_sklearn_and_is_read_like_any_model(two_models: Path, tmp_path: Path) -> None:
    source = tmp_path / "source"
    shutil.copytree(two_models, source)
    (source / "findings.csv").write_text("stale\n")  # the source run's analysis: never copied
    (source / "report.html").write_text("<p>stale</p>")
    two_models = source
    out = tmp_path / "fused"
    res = _fuse(two_models, out)
    assert res.exit_code == 0, res.output
    wide = [ln for ln in res.output.splitlines() if len(ln) > 80 and str(tmp_path) not in ln]  # paths stay whole
    assert not wide, res.output  # an 80-column console
    assert not (out / "findings.csv").exists() and not (out / "report.html").exists()
    flat = " ".join(res.output.split())
    assert "not copied from" in flat and "findings.csv, report.html" in flat
    label = "CAM++ +mfcc-stats fused".replace(" +", "+")
    assert label in res.output
    # reference: sklearn on the reference cells' dev trials, Platt labels as two weighted copies
    parts = [(_scores(two_models, MODELS[0], c), _scores(two_models, MODELS[1], c)) for c in REFS]
    dev = [(a.split == "dev") & ~a.dropped & ~b.dropped for a, b in parts]
    x = np.vstack([np.column_stack([a.score[m], b.score[m]]) for (a, b), m in zip(parts, dev, strict=True)])
    lab = np.concatenate([a.label[m].to_numpy().astype(bool) for (a, _), m in zip(parts, dev, strict=True)])
    coef, intercept = sklearn_fit(x, lab, 0.5, True)
    record = json.loads((out / "run.json").read_text())["fusions"][label]
    assert np.max(np.abs(np.array(record["weights"]) - coef)) <= 1e-6
    assert abs(record["offset"] - intercept) <= 1e-6
    results = pd.read_csv(out / "results.csv")
    original = (two_models / "results.csv").read_text()
    assert (out / "results.csv").read_text().startswith(original)  # the run's rows byte for byte
    fused = results[results.model == label].set_index("cell")
    assert len(fused) == 4 and fused.act_dcf.notna().all()
    for cell, row in fused.iterrows():
        a, b, f = _scores(two_models, MODELS[0], cell), _scores(two_models, MODELS[1], cell), _scores(out, label, cell)
        llr = record["weights"][0] * a.score + record["weights"][1] * b.score + record["offset"]
        keep = ~f.dropped
        assert np.allclose(f.score[keep], llr[keep], atol=1e-9)
        ev = keep & (f.split == "eval")
        assert row.eer == pytest.approx(metrics.eer(f.score[ev], f.label[ev]))
    cal = json.loads((out / "calibration.json").read_text())["models"]
    assert set(cal) == {*MODELS, label}
    groups = pd.read_csv(out / "fairness_groups.csv")
    assert label in set(groups.model)
    for command in (["analyze", str(out)], ["report", str(out), "--out", str(tmp_path / "rep")]):
        done = CliRunner().invoke(app, command)
        assert done.exit_code == 0, done.output
    assert label in (tmp_path / "rep" / "report.md").read_text()
    compared = pd.read_csv(out / "fusion_comparison.csv")
    assert set(compared.component) == set(MODELS) and len(compared) == 8
    for m, part in compared.groupby("component"):
        own = results[results.model == m].set_index("cell").eer
        assert np.allclose(part.eer, own[part.cell]) and np.allclose(part.fused_eer, fused.eer[part.cell])
        assert np.allclose(part.change, part.fused_eer - part.eer)
        macro_f, macro_m = part.fused_eer.mean(), part.eer.mean()
        word = "fusion helped" if macro_f < macro_m else "fusion did not help"
        line = f"{label} vs {m}: macro EER {macro_f:.3f} vs {macro_m:.3f} ({macro_f - macro_m:+.3f}): {word}"
        assert line in flat
        assert f"lower in {int((part.change < 0).sum())} of 4 cells" in flat


def test_bad_requests_are_one_line_and_write_nothing(
    two_models: Path, tmp_path: Path, tiny_corpus, session_cache: Path
) -> None:
    no_dev = _run(tmp_path / "nodev", session_cache, "T52n")

    def refused(run_dir: Path, models: str, pattern: str) -> None:
        out = tmp_path / "never"
        res = _fuse(run_dir, out, models)
        assert res.exit_code == 1
        line = res.output.strip()
        assert "\n" not in line and line.startswith("error: ")
        assert pattern in line, line
        assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".never")]

    refused(two_models, "CAM++,CAM++", "cannot fuse CAM++ with itself")
    refused(two_models, "CAM++,GE2E", "model GE2E is not in")
    tampered = tmp_path / "tampered"
    shutil.copytree(two_models, tampered)
    path = tampered / "scores" / slug("mfcc-stats") / f"{slug(REFS[1])}.parquet"
    frame = pd.read_parquet(path)
    frame.iloc[:-1].to_parquet(path)
    refused(tampered, "CAM++,mfcc-stats", "were scored on different trial lists")
    flat = tmp_path / "flat"
    shutil.copytree(two_models, flat)
    for cell in REFS:
        path = flat / "scores" / slug("mfcc-stats") / f"{slug(cell)}.parquet"
        frame = pd.read_parquet(path)
        frame["score"] = 0.25
        frame.to_parquet(path)
    refused(flat, "CAM++,mfcc-stats", "mfcc-stats is the same on every fitting trial")
    refused(no_dev, "CAM++,mfcc-stats", "has no dev split")
    command = json.loads((no_dev / "run.json").read_text())["command"]
    refused(
        no_dev,
        "CAM++,mfcc-stats",
        f"add `dev_share: 0.3` under `trials:` in T52n's experiment file, run it again with `{shlex.join(command)}`",
    )
