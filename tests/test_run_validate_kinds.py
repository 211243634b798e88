"""``interbias validate`` on countermeasure and tracks experiments counts what their run scores
(CM scorings per cell and model, track scorings per cell) from the manifest, not embeddings or
trials, and says when a CM checkpoint is missing without loading one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cm_fixtures import SPEAKERS, TRACK_FACTORS, cm_manifest
from test_cm_experiment import YAML as CM_YAML  # the tiny CM experiment: two CMs, a 2 × 2 test-side grid
from typer.testing import CliRunner

from interbias.cli import app

runner = CliRunner(env={"COLUMNS": "1000"})  # whole lines to match (80 columns: test_terminal_output)

TRACKS_YAML = """name: V92
title: tiny tracks experiment
use: descriptive
corpus: {{name: tiny-had, manifest: {manifest}}}
tracks:
  - track: 2
    model: LCNN-LFCC-frames
    train: {{config: small}}
  - track: 3
    unknown: [A01]
{factors}"""

PER_CLASS = 3


def _split_sizes() -> dict[str, int]:
    """Utterances per split of the fixture manifest (bona fide + spoof per speaker)."""
    out: dict[str, int] = {}
    for _, split in SPEAKERS.values():
        out[split] = out.get(split, 0) + 2 * PER_CLASS
    return out


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("vk")
    cm_manifest(root / "data", per_class=PER_CLASS)
    (root / "cm.yaml").write_text(CM_YAML.format(manifest=root / "data" / "manifest.csv"))
    (root / "tracks.yaml").write_text(
        TRACKS_YAML.format(manifest=root / "data" / "manifest.csv", factors=TRACK_FACTORS)
    )
    return root


def _validate(path: Path, *extra: str) -> tuple[dict, str]:
    res = runner.invoke(app, ["validate", str(path), *extra])
    js = runner.invoke(app, ["validate", str(path), "--json", *extra])
    assert res.exit_code == 0, res.output
    (entry,) = json.loads(js.output)
    assert entry["errors"] == []
    (est,) = entry["estimates"]
    return est, res.output


def test_a_cm_experiment_counts_cm_scorings_per_cell_and_model(data, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("INTERBIAS_MODELS", str(tmp_path / "models"))
    n = _split_sizes()
    est, text = _validate(data / "cm.yaml")
    # reference cell: dev + eval; the three other cells: eval; two CMs
    per_cm = n["dev"] + n["eval"] + 3 * n["eval"]
    assert est["kind"] == "countermeasure" and est["n_scorings"] == 2 * per_cm
    assert est["n_embeddings"] is None and est["trials_per_stratum"] is None and est["n_rows"] == 4 * 2
    assert f"= {per_cm} scorings × 2 CM(s) = {2 * per_cm} CM scorings" in text
    assert "embeddings," not in text and "trials per stratum" not in text
    assert "does not run here (2 CM checkpoints are missing; first: ResNet18-logspec: no checkpoint" in text


def test_cm_checkpoints_are_looked_up_not_loaded_and_encoders_choose_the_cms(data, monkeypatch, tmp_path) -> None:
    """An empty checkpoint.pt is not loadable: validate only checks that the file is there."""
    monkeypatch.setenv("INTERBIAS_MODELS", str(tmp_path / "models"))
    for label in ("ResNet18-logspec", "ResNet18-cqt"):
        (tmp_path / "models" / "cm" / label).mkdir(parents=True)
        (tmp_path / "models" / "cm" / label / "checkpoint.pt").write_bytes(b"")
    est, _ = _validate(data / "cm.yaml")
    assert est["runs_here"] == "runs here"
    one, _ = _validate(data / "cm.yaml", "--encoders", "ResNet18-cqt")
    assert one["n_scorings"] == est["n_scorings"] // 2 and one["n_rows"] == 4
    refused = runner.invoke(app, ["validate", str(data / "cm.yaml"), "--encoders", "CAM++"])
    assert refused.exit_code == 1 and "--encoders must name CM models" in refused.output
    assert "Traceback" not in refused.output


def test_a_tracks_experiment_counts_eval_scorings_per_track_and_cell(data) -> None:
    n = _split_sizes()
    est, text = _validate(data / "tracks.yaml")
    assert est["kind"] == "tracks" and est["n_scorings"] == 2 * 4 * n["eval"]
    assert est["n_embeddings"] is None and est["trials_per_stratum"] is None
    for track in (2, 3):
        assert (
            f"  track {track} " in text
            and f"trains on {n['train']} train + {n['dev']} dev utterances" in text
            and f"{n['eval']} eval utterances in each of 4 cells = {4 * n['eval']} scorings" in text
        )


def test_track3_on_a_manifest_without_algorithm_labels_is_refused_as_run_refuses_it(data, tmp_path) -> None:
    rows = (data / "data" / "manifest.csv").read_text().replace(",A01", ",")
    (data / "data" / "no_algorithms.csv").write_text(rows)  # beside the audio its paths name
    path = tmp_path / "t.yaml"
    path.write_text(TRACKS_YAML.format(manifest=data / "data" / "no_algorithms.csv", factors=TRACK_FACTORS))
    res = runner.invoke(app, ["validate", str(path)])
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert "track 3: manifest" in res.output and "has no algorithm labels" in res.output


def test_an_offline_cm_corpus_not_built_is_priced_by_its_rule(tmp_path) -> None:
    """E19's synthetic variant in an empty cache: nothing is built, the rule is stated."""
    from interbias.utils.paths import conditions_dir

    res = runner.invoke(
        app, ["validate", str(conditions_dir() / "E19.yaml"), "--corpus", "synthetic", "--cache-dir", str(tmp_path)]
    )
    assert res.exit_code == 0, res.output
    assert "cost: unknown (the synthetic-cm corpus is built at run time); each CM scores the dev and eval" in res.output
    assert list(tmp_path.iterdir()) == []


def test_a_spoofing_run_with_cms_names_their_work_and_a_missing_checkpoint(tmp_path: Path, monkeypatch) -> None:
    from conftest import tiny_experiment

    monkeypatch.setenv("INTERBIAS_MODELS", str(tmp_path / "models"))
    (tmp_path / "attacks.csv").write_text("path,target_speaker,generator\nx.flac,s1,copy\n")
    exp = tiny_experiment(
        tmp_path, name="V93", trials={"targets": 24, "min_speakers": 3, "dev_share": 0.5},
        spoofing={"attacks": str(tmp_path / "attacks.csv"), "countermeasures": ["GMM-lfcc"]},
    )  # fmt: skip
    res = runner.invoke(app, ["validate", str(exp), "--encoders", "mfcc-stats"])
    assert res.exit_code == 0, res.output
    assert "does not run here (GMM-lfcc: no checkpoint in" in res.output
    assert "note: countermeasures GMM-lfcc also score each cell's distinct eval test utterances" in res.output
    assert "in the 2 reference cell(s)" in res.output  # gender × noise: the two clean cells
    ckpt = tmp_path / "models" / "cm" / "GMM-lfcc" / "checkpoint.pt"
    ckpt.parent.mkdir(parents=True)
    ckpt.write_bytes(b"looked up, never loaded")
    res = runner.invoke(app, ["validate", str(exp), "--encoders", "mfcc-stats"])
    assert "no checkpoint" not in res.output and "countermeasures GMM-lfcc" in res.output
