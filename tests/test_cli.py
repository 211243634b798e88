from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
from typer.testing import CliRunner

from interbias.cli import BROKEN_PIPE_EXIT, app
from interbias.metrics.registry import results_columns

runner = CliRunner()


def test_metrics_json_keys_whitespace_and_csv(tmp_path: Path) -> None:
    ws = tmp_path / "s.txt"
    ws.write_text("e1 t1 0.9 target\ne1 t2 0.1 nontarget\ne2 t3 0.4 target\ne2 t4 0.5 nontarget\n")
    res = runner.invoke(app, ["scores", "metrics", str(ws), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert list(out) == [*results_columns(), "n_target", "n_nontarget"]
    assert out["n_target"] == 2 and out["auc"] == 0.75
    csv = tmp_path / "s.csv"
    csv.write_text("score,label\n0.9,1\n0.1,0\n0.4,1\n0.5,0\n")
    assert json.loads(runner.invoke(app, ["scores", "metrics", str(csv), "--json"]).output) == out


def test_metrics_bad_label_one_line(tmp_path: Path) -> None:
    ws = tmp_path / "s.txt"
    ws.write_text("e1 t1 0.9 maybe\n")
    res = runner.invoke(app, ["scores", "metrics", str(ws)])
    assert res.exit_code == 1
    assert (
        res.output.strip()
        == f"error: {ws}: line 1: label 'maybe' is not one of 1/0, true/false, target/nontarget, bonafide/spoof (also genuine/real, fake)"
    )


def test_analyze_foreign_csv(tmp_path: Path) -> None:
    rows = []
    for la, lb, e in (("a0", "b0", 0.1), ("a1", "b0", 0.2), ("a0", "b1", 0.3), ("a1", "b1", 0.5)):
        rows.append(
            {
                "experiment": "X",
                "model": "m",
                "family": "sv",
                "factor_a": "A",
                "level_a": la,
                "ref_a": "a0",
                "factor_b": "B",
                "level_b": lb,
                "ref_b": "b0",
                "eer": e,
            }
        )
    p = tmp_path / "r.csv"
    pd.DataFrame(rows).to_csv(p, index=False)
    res = runner.invoke(app, ["analyze", str(p), "--quiet"])
    assert res.exit_code == 0, res.output
    c = pd.read_csv(tmp_path / "contrasts.csv")
    assert c.ie.iloc[0] == 0.1 or abs(c.ie.iloc[0] - 0.1) < 1e-12
    s = pd.read_csv(tmp_path / "summary.csv")
    assert s.n.iloc[0] == 1


def test_analyze_missing_columns_and_non_numeric(tmp_path: Path) -> None:
    p = tmp_path / "r.csv"
    p.write_text("experiment,model\nX,m\n")
    res = runner.invoke(app, ["analyze", str(p)])
    assert res.exit_code == 1
    assert res.output.startswith(f"error: {p}: missing required column(s) factor_a, level_a, ref_a")
    p.write_text("experiment,model,factor_a,level_a,ref_a,factor_b,level_b,ref_b,eer\nX,m,A,a,a,B,b,b,oops\n")
    res = runner.invoke(app, ["analyze", str(p)])
    assert res.output.strip() == f"error: {p}: column 'eer' has 1 non-numeric value(s); first at line(s) 2"


def test_run_unknown_experiment_one_line(tmp_path: Path) -> None:
    res = runner.invoke(app, ["run", "E99", "--quiet"])
    assert res.exit_code == 1
    assert res.output.startswith("error: unknown experiment 'E99' in ")
    assert len(res.output.strip().splitlines()) == 1


def test_run_unknown_encoder_before_work(tmp_path: Path) -> None:
    res = runner.invoke(app, ["run", "E01", "--corpus", "synthetic", "--encoders", "Nope", "--out", str(tmp_path)])
    assert res.exit_code == 1
    assert "unavailable encoder(s): unknown encoder 'Nope'; valid:" in res.output
    assert not any(tmp_path.iterdir())


def test_list_json() -> None:
    res = runner.invoke(app, ["list", "--json"])
    assert res.exit_code == 0
    names = [e["name"] for e in json.loads(res.output)]
    assert "E16" in names


def test_missing_operator_resources_refuse_before_work(tmp_path: Path, tiny_corpus) -> None:
    from conftest import tiny_experiment

    missing = tmp_path / "no-noise-here"
    factors = [
        {"name": "noise", "type": "acoustic", "apply_to": "test", "reference": "clean",
         "levels": {"clean": [], "env5": [{"op": "noise", "kind": "environmental", "snr_db": 5,
                                           "noise_dir": str(missing)}]}},
    ]  # fmt: skip
    exp = tiny_experiment(tmp_path, name="T09", factors=factors)
    res = runner.invoke(app, ["run", str(exp), "--encoders", "mfcc-stats", "--out", str(tmp_path / "out"), "-q"])
    assert res.exit_code == 1
    assert res.output == (
        f"error: T09 cannot run here: noise kind=environmental: noise_dir {missing} does not exist or is not a "
        "folder (levels noise=env5). See docs/guide/operators.md\n"
    )
    assert not (tmp_path / "out").exists()


def test_a_closed_pipe_ends_a_command_quietly_with_141(tmp_path: Path) -> None:
    """`interbias list | head -1`: the reader is gone before the first write (its end of the pipe
    is closed before the command starts, so the broken pipe is certain, not a race)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    try:
        proc = subprocess.run(
            [sys.executable, "-c", "from interbias.cli import main; main()", "list"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            env=env,
            cwd=tmp_path,
            timeout=120,
        )
    finally:
        os.close(write_end)
    assert proc.returncode == BROKEN_PIPE_EXIT == 141
    assert proc.stderr == b""


def test_interbias_run_reads_the_experiment_yaml_once(tmp_path: Path, tiny_corpus, monkeypatch) -> None:
    """One preflight: `interbias run` parses the experiment file once and hands it to the conductor."""
    from conftest import tiny_experiment

    from interbias.experiments import yamlfile

    exp = tiny_experiment(tmp_path, name="T10")
    reads: list[Path] = []
    real = yamlfile.load

    def counting(path, *args, **kwargs):
        reads.append(Path(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(yamlfile, "load", counting)
    res = runner.invoke(app, ["run", str(exp), "--encoders", "mfcc-stats", "--out", str(tmp_path / "out"), "-q"])
    assert res.exit_code == 0, res.output
    assert reads.count(exp) == 1 and len(reads) == 1, reads
