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
from interbias.analysis.fusion.compare import NoDev, dev_share_for, no_dev_advice
from interbias.cli import app
from interbias.metrics import verification as metrics
from interbias.run.conductor import RunOptions, run
from interbias.utils.paths import slug

MODELS = ["CAM++", "mfcc-stats"]
REFS = ("gender=female,noise=clean", "gender=male,noise=clean")


def _run(tmp: Path, session_cache: Path, name: str, **overrides) -> Path:
    """A run of the tiny experiment ``name`` (``overrides``: its YAML keys), recording in run.json
    the command line that makes it, as ``interbias run`` does."""
    tmp.mkdir(parents=True, exist_ok=True)
    exp, cache = tiny_experiment(tmp, name=name, **overrides), isolated_cache(tmp, session_cache)
    command = ["interbias", "run", str(exp), "--encoders", ",".join(MODELS), "--out", str(tmp / "r"),
               "--cache-dir", str(cache), "--quiet"]  # fmt: skip
    opts = RunOptions(
        experiment=str(exp), encoders=MODELS, out=tmp / "r", quiet=True, command=command, cache_dir=cache,
        after_run=run_analyses,
    )  # fmt: skip
    return run(opts).run_dir


@pytest.fixture(scope="module")
def two_models(tmp_path_factory, tiny_corpus, session_cache) -> Path:
    return _run(tmp_path_factory.mktemp("fuse"), session_cache, "T52", trials=SPLIT)


@pytest.fixture(scope="module")
def no_dev(tmp_path_factory, tiny_corpus, session_cache) -> Path:
    return _run(tmp_path_factory.mktemp("nodev"), session_cache, "T52n", trials={"targets": 30, "min_speakers": 3})


def _scores(run_dir: Path, model: str, cell: str) -> pd.DataFrame:
    return pd.read_parquet(run_dir / "scores" / slug(model) / f"{slug(cell)}.parquet")


def _fuse(run_dir: Path, out: Path, models: str = "CAM++,mfcc-stats"):
    args = ["fuse", str(run_dir), "--models", models, "--out", str(out), "--bootstrap", "200"]
    return CliRunner().invoke(app, args, env={"COLUMNS": "80"})


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
    assert (out / "findings.csv").read_text() != "stale\n"  # the copy's own, fresh (checked below)
    assert "stale" not in (out / "report.html").read_text()
    flat = " ".join(res.output.split())
    assert "not copied from" in flat and "findings.csv, report.html" in flat
    flat = "\n".join(" ".join(x.split()) for x in res.output.replace("\n  ", " ").splitlines())
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
    # a fresh analysis and report of the copy, which open with the fused model against each component
    assert label in set(pd.read_csv(out / "findings.csv").model)
    report = (out / "report.md").read_text()
    assert report.index("What the fusion does") < report.index("## Findings") and label in report
    assert "What the fusion does" in (out / "report.html").read_text()
    compared = pd.read_csv(out / "fusion_comparison.csv")
    assert set(compared.fused) == {label} and len(compared) == 10  # per component: macro, then 4 cells
    for m, part in compared.groupby("component"):
        macro, cells = part[part.cell == "macro"].iloc[0], part[part.cell != "macro"]
        own = results[results.model == m].set_index("cell").eer
        assert np.allclose(cells.eer, own[cells.cell]) and np.allclose(cells.fused_eer, fused.eer[cells.cell])
        assert np.allclose(part.change, part.fused_eer - part.eer)
        assert macro.eer == pytest.approx(own.mean()) and macro.fused_eer == pytest.approx(fused.eer.mean())
        assert (cells.status == "too few speakers").all() and (cells.speakers == 3).all()  # 3 eval speakers a cell
        word = "fusion helped" if macro.change < 0 and macro.status == "resolved" else "fusion did not"
        line = f"{label} vs {m}: macro EER {macro.fused_eer:.3f} vs {macro.eer:.3f}, change {macro.change:+.3f} ("
        assert line in flat and line in report
        assert flat[flat.index(line) :].split("\n")[0].split("): ", 1)[1].startswith(word)
        lower = int((cells.change < 0).sum())
        assert f"lower in {lower} of 4 cells (0 resolved), higher in {int((cells.change > 0).sum())}" in flat


def _refused(run_dir: Path, tmp_path: Path, models: str, pattern: str) -> str:
    """fuse refused in one line containing ``pattern``, nothing written; the line."""
    out = tmp_path / "never"
    res = _fuse(run_dir, out, models)
    assert res.exit_code == 1
    line = res.output.strip()
    assert "\n" not in line and line.startswith("error: ")
    assert pattern in line, line
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".never")]
    return line


def test_bad_requests_are_one_line_and_write_nothing(two_models: Path, tmp_path: Path) -> None:
    def refused(run_dir: Path, models: str, pattern: str) -> None:
        _refused(run_dir, tmp_path, models, pattern)

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


def test_no_dev_split_refusal_prints_a_command_that_runs(no_dev: Path, tmp_path: Path) -> None:
    """The refusal's command (the run's own, with --dev-share) runs as printed and gives a dev split:
    6 speakers per gender, min_speakers 3 on each side, so the share is 0.45 (0.3 would leave 2 dev)."""
    line = _refused(no_dev, tmp_path, "CAM++,mfcc-stats", "has no dev split")
    command = json.loads((no_dev / "run.json").read_text())["command"]
    printed = line.split("run it again with a dev split: ", 1)[1].removesuffix(", then fuse the new run")
    assert printed == shlex.join([*command, "--dev-share", "0.45"])
    args = shlex.split(printed)
    assert args[:2] == ["interbias", "run"]
    done = CliRunner().invoke(app, args[1:])
    assert done.exit_code == 0, done.output
    new = Path(next(x for x in done.output.splitlines() if x.startswith("results: ")).split(": ", 1)[1]).parent
    trials = pd.read_parquet(new / "trials.parquet")
    assert set(trials.split) == {"dev", "eval"}
    assert json.loads((new / "experiment.resolved.json").read_text())["trials"]["dev_share"] == 0.45
    # what fuse fits on: dev trials in the reference cells, for both models
    for model in MODELS:
        assert (_scores(new, model, REFS[0]).split == "dev").sum() > 0


def test_dev_share_advice_keeps_min_speakers_on_each_side(tmp_path: Path) -> None:
    """The share nearest 0.3 that leaves min_speakers in dev and eval of every stratum; none
    (and no command) when a stratum is too small; none for a trial list."""
    assert dev_share_for([24, 24], 7) == 0.3  # 7 dev, 17 eval (the demo)
    # round(0.45·6) = 3 dev of 6 (0.3 to 0.4 leave 2); round(0.35·10) = 4 dev of 10 (0.3 leaves 3)
    assert dev_share_for([6, 6], 3) == 0.45 and dev_share_for([10, 20], 4) == 0.35
    assert dev_share_for([6, 7], 4) is None
    small = no_dev_advice(tmp_path, NoDev("T", ["interbias", "run", "T"], [6, 7], 4))
    assert "run it again" not in small and "smallest stratum has 6" in small and "at least 8 speakers" in small
    listed = no_dev_advice(tmp_path, NoDev("T", ["interbias", "run", "T", "--trials", "l.txt"], [30], 3))
    assert "trial list" in listed and "run it again" not in listed
    spaced = no_dev_advice(tmp_path, NoDev("T", ["interbias", "run", "my exp.yaml"], [], 3))
    assert "interbias run 'my exp.yaml' --dev-share 0.3, then" in spaced


def test_run_dev_share_is_checked_before_any_work(tmp_path: Path) -> None:
    """run --dev-share: a share in (0, 1), never with a --trials list (scored whole), in one line."""
    exp = str(tiny_experiment(tmp_path, name="T52d"))
    for extra, said in (
        (["--dev-share", "1.5"], "error: --dev-share must be a finite number in (0, 1), got 1.5"),
        (["--dev-share", "0.3", "--trials", str(tmp_path / "l.txt")], "error: --dev-share splits sampled trials"),
    ):
        res = CliRunner().invoke(app, ["run", exp, "--out", str(tmp_path / "r"), *extra])
        assert res.exit_code == 1 and res.output.startswith(said), res.output
        assert not (tmp_path / "r").exists()
