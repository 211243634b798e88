"""Track 3 in a ``tracks:`` experiment: a tiny three-algorithm run whose results.csv rows equal
``interbias scores cm-eval recognition`` on the written label files (pooled and by gender), and the
refusals in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from cm_fixtures import TRACK_FACTORS
from recognition_fixtures import three_class_manifest
from typer.testing import CliRunner

from interbias.cli import app
from interbias.cm.track_base import safe
from interbias.corpora.manifest import Manifest, Utterance
from interbias.experiments.schema import load_experiment
from interbias.run.inputs import RunOptions
from interbias.run.tasks.tracks import run_tracks_experiment
from interbias.utils.errors import ConfigError

YAML = """name: E98
title: tiny track 3
question: "Does Track 3 run in the tracks conductor?"
use: descriptive
corpus: {{name: tiny-cm3, manifest: {manifest}}}
tracks:
  - track: 3
{item}{factors}"""
ITEM = """    unknown: [A02]
    train: {config: small, set: {duration_s: 0.5, width: 8, max_epochs: 3, batch_size: 4, lr: 0.003}}
    threshold: 0.9
    tail_size: 5
"""


def _run(tmp_path: Path, manifest: Path, item: str = ITEM):
    path = tmp_path / "E98.yaml"
    path.write_text(YAML.format(manifest=manifest, item=item, factors=TRACK_FACTORS))
    options = RunOptions(experiment="E98", corpus=None, corpus_root=None, cache_dir=str(tmp_path / "cache"),
                              out=str(tmp_path / "runs"), quiet=True, command=["interbias", "run"])  # fmt: skip
    return run_tracks_experiment(options, exp=load_experiment(path))


def _cm_eval(ref: Path, pred: Path) -> dict:
    res = CliRunner().invoke(
        app, ["scores", "cm-eval", "recognition", str(ref), str(pred), "--known", "A01,bonafide", "--json"]
    )
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def _subset(src: Path, ids: set[str], dst: Path) -> Path:
    dst.write_text("".join(x + "\n" for x in src.read_text().splitlines() if x.split()[0] in ids))
    return dst


def test_track3_rows_equal_cm_eval_on_the_written_files(tmp_path):
    corpus = three_class_manifest(tmp_path / "data")
    out = _run(tmp_path, tmp_path / "data" / "manifest.csv")
    res = pd.read_csv(out.run_dir / "results.csv")
    assert (res["track"] == 3).all() and len(res) == 4 * 2 * 3  # cells × recognisers × (all, female, male)
    assert set(res["group"]) == {"all", "gender=female", "gender=male"} and (res["score"] == res["macro_f1"]).all()
    evals = {u.id: u for u in corpus if u.get("split") == "eval"}
    for (cell, key), rows in res.groupby(["cell", "recogniser"]):
        folder = out.run_dir / "track3" / safe(cell)
        ref, pred = folder / "reference.txt", folder / f"{key}.txt"
        assert {x.split()[0] for x in ref.read_text().splitlines()} == set(evals)
        for group in ("all", "gender=female", "gender=male"):
            ids = {i for i, u in evals.items() if group == "all" or f"gender={u.gender}" == group}
            want = _cm_eval(_subset(ref, ids, tmp_path / "r.txt"), _subset(pred, ids, tmp_path / "p.txt"))
            row = rows[rows["group"] == group].iloc[0]
            assert row["macro_f1"] == pytest.approx(want["f1"], rel=1e-12, abs=1e-15)
            assert row["macro_precision"] == pytest.approx(want["precision"], rel=1e-12, abs=1e-15)
            assert row["n_utterances"] == want["n_samples"] == len(ids) and row["n_unknown"] == want["n_unknown"]
    assert res.loc[res["group"] == "all", "n_unknown"].eq(6).all()  # eval: 2 speakers × 3 clips of A02
    report = (out.run_dir / "tracks_report.md").read_text()
    assert "## Track 3" in report and "not findings" in report
    record = json.loads((out.run_dir / "run.json").read_text())["tracks"]["3"]
    assert record["known"] == ["A01", "bonafide"] and record["unknown"] == ["A02"]


def test_track3_refusals_are_one_line(tmp_path):
    corpus = three_class_manifest(tmp_path / "data", per_class=1)
    plain = [Utterance.from_dict({**u.to_dict(), "attack": ""}) for u in corpus]
    Manifest("no-alg", corpus.root, tuple(plain)).write(tmp_path / "data" / "plain.csv")
    with pytest.raises(ConfigError, match=r"^tracks: track 3: manifest 'plain' has no algorithm labels"):
        _run(tmp_path, tmp_path / "data" / "plain.csv")
    with pytest.raises(ConfigError, match=r"track 3: unknown: needs a list of held-out algorithms"):
        _run(tmp_path, tmp_path / "data" / "manifest.csv", item="    threshold: 0.5\n")
    with pytest.raises(ConfigError, match=r"track 3: unknown key 'window'; valid: track, unknown, model"):
        _run(tmp_path, tmp_path / "data" / "manifest.csv", item=ITEM + "    window: 3\n")


def test_cm_eval_recognition_says_when_unknown_leaves_no_known_class(tmp_path):
    ref = tmp_path / "reference.txt"
    ref.write_text("u1 A01\nu2 unknown\n")
    res = CliRunner().invoke(app, ["scores", "cm-eval", "recognition", str(ref), str(ref), "--unknown", "A01,unknown"])
    assert res.exit_code == 1
    assert res.output == "error: --unknown A01,unknown leaves no known class: the reference's labels are A01, unknown\n"
