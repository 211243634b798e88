"""A user's own corpus through the CLI, as the README's "Your own data" walks it: a folder of
WAV recordings and a ``path,speaker,gender`` CSV (no style, no accent) → ``validate`` →
``run E16 --manifest … --data-root …`` → ``report``. The catalogue's E16 is run in a copy that
asks for fewer speakers (the fix its refusal names), keeping its noise grid: the
environmental levels need recorded noise nobody gave, so they are left out, visibly."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import write_calls
from typer.testing import CliRunner

from interbias.cli import app
from interbias.utils.paths import conditions_dir

runner = CliRunner(env={"COLUMNS": "1000"})  # whole lines: the messages are matched as written


@pytest.fixture(scope="module")
def calls(tiny_corpus, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``calls/calls.csv`` with relative paths to WAV copies of the tiny corpus's recordings."""
    folder = tmp_path_factory.mktemp("calls")
    return write_calls(tiny_corpus, folder, folder / "calls.csv")


def e16_copy(folder: Path) -> Path:
    """conditions/E16.yaml as a user copies it for a small corpus: fewer speakers and trials."""
    data = yaml.safe_load((conditions_dir() / "E16.yaml").read_text())
    data["trials"] = {"targets": 40, "min_speakers": 2, "dev_share": 0.3}
    path = folder / "E16.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_too_few_speakers_names_the_totals_per_gender(calls: Path, tmp_path: Path) -> None:
    args = ["run", "E16", "--manifest", str(calls), "--data-root", str(calls.parent), "--encoders", "mfcc-stats"]
    res = runner.invoke(app, [*args, "--out", str(tmp_path), "-q"])
    assert res.exit_code == 1
    assert (
        "error: E16 needs ≥ 22 speakers per gender (15 evaluation + 7 dev); calls.csv has 6 female, 6 male"
        in res.output
    )
    assert "Common Voice" not in res.output
    assert not list(tmp_path.iterdir())  # refused before any run directory


def test_validate_on_a_manifest_says_what_it_lacks_without_common_voice(calls: Path) -> None:
    res = runner.invoke(app, ["validate", str(conditions_dir() / "E14.yaml"), "--manifest", str(calls)])
    assert res.exit_code == 1
    assert "E14 selects by style (" in res.output
    assert "calls.csv has no style column: add a style column to the manifest" in res.output
    assert "Common Voice" not in res.output and "RAVDESS" not in res.output


def test_own_corpus_from_folder_to_report(calls: Path, tmp_path: Path) -> None:
    exp = e16_copy(tmp_path)
    data = ["--manifest", str(calls), "--data-root", str(calls.parent)]
    valid = runner.invoke(app, ["validate", str(exp), *data, "--encoders", "mfcc-stats"])
    assert valid.exit_code == 0, valid.output
    assert "environmental_25/15/5 left out: they need recorded noise: --noise-dir DIR" in valid.output
    out = tmp_path / "results"
    res = runner.invoke(app, ["run", str(exp), *data, "--encoders", "mfcc-stats", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "E16: environmental_25/15/5 left out: they need recorded noise: --noise-dir DIR" in res.output
    (run_dir,) = out.iterdir()
    rj = json.loads((run_dir / "run.json").read_text())
    sha = hashlib.sha256(calls.read_bytes()).hexdigest()
    assert rj["corpus"]["manifest_file_sha256"] == sha
    assert rj["corpus"]["strata"] == {
        "gender=female": {"speakers": 6, "utterances": 30},
        "gender=male": {"speakers": 6, "utterances": 30},
    }
    assert [r["levels"] for r in rj["experiment"]["left_out"]] == [
        ["environmental_25", "environmental_15", "environmental_5"]
    ]
    cells = set(pd.read_csv(run_dir / "results.csv")["cell"])
    assert len(cells) == 14 and not [c for c in cells if "environmental" in c]  # left out, not substituted
    rep = runner.invoke(app, ["report", str(run_dir)])
    assert rep.exit_code == 0, rep.output
    text = (run_dir / "report.md").read_text()
    assert f"Corpus: manifest calls.csv ({calls}, sha256 {sha}), 60 utterances." in text
    assert "gender=female 6 speakers, 30 utterances; gender=male 6 speakers, 30 utterances" in text
    assert "environmental_25/15/5 left out: they need recorded noise: --noise-dir DIR." in text
    assert f"Corpus: manifest calls.csv, file sha256 {sha}; records sha256 {rj['corpus']['manifest_sha256']}." in text
    assert "synthetic corpus" not in text and "Common Voice" not in text
