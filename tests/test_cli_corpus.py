"""``interbias data prepare`` and ``interbias data info``."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import fake_corpora
from typer.testing import CliRunner

from interbias.cli import app
from interbias.corpora.manifest import Manifest
from interbias.corpora.torgo import prepare_torgo

runner = CliRunner()


def test_prepare_writes_a_self_contained_manifest(tmp_path: Path) -> None:
    root = fake_corpora.torgo(tmp_path / "torgo")
    out = tmp_path / "m" / "torgo.csv"
    res = runner.invoke(
        app, ["data", "prepare", "torgo", "--root", str(root), "--out", str(out), "--cache-dir", str(tmp_path / "c")]
    )
    assert res.exit_code == 0, res.output
    assert res.output.strip() == f"wrote {out}: 32 utterances, 4 speakers"
    written = Manifest.read(out)
    direct = prepare_torgo(root)
    assert [u.id for u in written] == [u.id for u in direct]
    assert all(Path(u.path).is_absolute() and Path(u.path).is_file() for u in written)
    assert [u.get("pathology") for u in written] == [u.get("pathology") for u in direct]


def test_prepare_voxceleb1_names_trial_lists_and_errors_are_one_line(tmp_path: Path) -> None:
    root = fake_corpora.voxceleb1(tmp_path / "vox")
    res = runner.invoke(app, ["data", "prepare", "voxceleb1", "--root", str(root), "--out", str(tmp_path / "v.jsonl")])
    assert res.exit_code == 0, res.output
    assert res.output.splitlines()[-1] == f"official trial lists: {root / 'veri_test2.txt'}"
    res = runner.invoke(app, ["data", "prepare", "ears", "--root", str(root)])
    assert res.exit_code == 1 and len(res.output.strip().splitlines()) == 1
    assert res.output.startswith(f"error: ears: {root} does not look like ears: expected speaker_statistics.json")
    res = runner.invoke(app, ["data", "prepare", "nope", "--root", str(root)])
    assert res.output.strip().startswith(
        "error: unknown corpus 'nope'; valid: add2023, asvspoof5, commonvoice, ears, l2arctic, ravdess"
    )
    res = runner.invoke(app, ["data", "prepare", "synthetic", "--root", str(root)])
    assert res.output.strip() == "error: 'synthetic' is built, not prepared: interbias data build synthetic"


def test_info_counts_speakers_and_utterances_per_attribute(tmp_path: Path) -> None:
    root = fake_corpora.commonvoice(tmp_path / "cv")
    out = tmp_path / "cv.jsonl"
    assert runner.invoke(app, ["data", "prepare", "commonvoice", "--root", str(root), "--out", str(out)]).exit_code == 0
    res = runner.invoke(app, ["data", "info", str(out), "--json"])
    assert res.exit_code == 0, res.output
    info = json.loads(res.output)
    rows = fake_corpora.CV_ROWS
    assert info["n_utterances"] == len(rows) and info["n_speakers"] == len({r[0] for r in rows})
    assert info["total_duration_s"] == sum(1.0 + 0.25 * k for k in range(len(rows)))
    ages = info["attributes"]["age_band"]
    assert ages["values"] == {
        "adult": {"speakers": 1, "utterances": 1},
        "elderly": {"speakers": 1, "utterances": 2},
        "young": {"speakers": 1, "utterances": 2},
    }
    assert ages["n_missing_utterances"] == 1
    genders = Counter(u.gender for u in Manifest.read(out) if u.gender)
    assert {k: v["utterances"] for k, v in info["attributes"]["gender"]["values"].items()} == dict(genders)
    text = runner.invoke(app, ["data", "info", str(out)]).output
    assert text.splitlines()[0] == "cv: 6 utterances, 4 speakers, 0.00 h"
    assert "  age_band (3 values, 1 utterances without):" in text
    res = runner.invoke(app, ["data", "info", str(tmp_path / "missing.jsonl")])
    assert res.output.strip() == f"error: manifest {tmp_path / 'missing.jsonl'} does not exist"
