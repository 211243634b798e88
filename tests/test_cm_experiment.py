"""A CM experiment end to end on a tiny CM manifest: scores, Tables I–V, interaction contrasts,
and the same fairness numbers as `interbias scores fairness` on the same score file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cm_fixtures import cm_manifest
from typer.testing import CliRunner

from interbias.analysis.after_run import after_run
from interbias.analysis.groups.fairness import METRICS
from interbias.cli import app
from interbias.cm.train import train_model
from interbias.run.conductor import RunOptions
from interbias.run.tasks.countermeasure import run_cm_experiment as run
from interbias.utils.errors import ConfigError

TINY = {"duration_s": "0.5", "width": "4", "max_epochs": "1", "batch_size": "4", "lr": "0.01"}
YAML = """name: E91
title: tiny CM experiment
use: contrast
corpus: {{name: manifest, manifest: {manifest}}}
countermeasures:
  models: [ResNet18-logspec, ResNet18-cqt]
  bootstrap: 30
factors:
  - name: codec
    type: acoustic
    apply_to: test
    reference: clean
    levels:
      clean: []
      mulaw: [{{op: codec, codec: pcm_mulaw}}]
  - name: noise
    type: acoustic
    apply_to: test
    reference: clean
    levels:
      clean: []
      white: [{{op: noise, kind: gaussian, snr_db: 5}}]
"""


@pytest.fixture(scope="module")
def cm_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cmrun")
    m = cm_manifest(tmp / "data", per_class=3)
    mp = pytest.MonkeyPatch()
    mp.setenv("INTERBIAS_MODELS", str(tmp / "models"))
    for label in ("ResNet18-logspec", "ResNet18-cqt"):
        train_model(label, m, settings=dict(TINY), log=lambda s: None)
    (tmp / "E91.yaml").write_text(YAML.format(manifest=tmp / "data" / "manifest.csv"))
    outcome = run(
        RunOptions(
            experiment=str(tmp / "E91.yaml"),
            out=tmp / "results",
            cache_dir=tmp / "cache",
            quiet=True,
            after_run=after_run,
        )
    )
    yield tmp, outcome
    mp.undo()


def test_results_tables_and_interaction(cm_run):
    _, outcome = cm_run
    folder = outcome.run_dir
    res = pd.read_csv(folder / "results.csv")
    assert len(res) == 2 * 4 and set(res["family"]) == {"cm"}
    assert set(res["cell"]) == {
        "codec=clean,noise=clean",
        "codec=mulaw,noise=clean",
        "codec=clean,noise=white",
        "codec=mulaw,noise=white",
    }
    assert (res["n_bonafide"] == 6).all() and (res["n_spoof"] == 6).all() and (res["n_failed"] == 0).all()
    assert ((res["eer"] >= 0) & (res["eer"] <= 1)).all() and (res["eer_ci_low"] <= res["eer_ci_high"]).all()
    tables = pd.read_csv(folder / "cm_tables.csv")
    assert len(tables) == 5 * 2 * 4 and set(tables["metric"]) == set(METRICS)
    assert np.allclose(tables["difference"], tables["female"] - tables["male"], equal_nan=True)
    md = (folder / "cm_tables.md").read_text()
    assert "### Table I: statistical parity" in md and "### Table V: treatment equality" in md
    inter = pd.read_csv(folder / "cm_interaction.csv")
    assert len(inter) == 2 * 5
    for r in inter.itertuples():
        t = tables[(tables["model"] == r.model) & (tables["metric"] == r.metric)].set_index("cell")["difference"]
        want = (
            t["codec=mulaw,noise=white"]
            - t["codec=mulaw,noise=clean"]
            - t["codec=clean,noise=white"]
            + t["codec=clean,noise=clean"]
        )
        assert r.ic == pytest.approx(want, nan_ok=True)
    assert (folder / "cm_gap.png").stat().st_size > 1000
    assert "## Countermeasure fairness under compound conditions (E91)" in (folder / "cm_report.md").read_text()
    rec = json.loads((folder / "run.json").read_text())
    assert set(rec["models"]) == {"ResNet18-logspec", "ResNet18-cqt"} and len(rec["manifest_sha256"]) == 64


def test_same_numbers_as_interbias_fairness_on_the_score_file(cm_run):
    tmp, outcome = cm_run
    scores = pd.read_csv(outcome.run_dir / "cm_scores.csv")
    tables = pd.read_csv(outcome.run_dir / "cm_tables.csv")
    model, cell = "ResNet18-cqt", "codec=mulaw,noise=white"
    ev = scores[(scores["model"] == model) & (scores["cell"] == cell) & (scores["split"] == "eval")]
    dev = scores[
        (scores["model"] == model) & (scores["cell"] == "codec=clean,noise=clean") & (scores["split"] == "dev")
    ]
    ev.to_csv(tmp / "ev.csv", index=False)
    dev.to_csv(tmp / "dev.csv", index=False)
    res = CliRunner().invoke(
        app,
        [
            "scores",
            "fairness",
            str(tmp / "ev.csv"),
            "--group",
            "gender",
            "--dev",
            str(tmp / "dev.csv"),
            "--positive",
            "spoof",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    comps = {c["metric"]: c for c in json.loads(res.output)["comparisons"]}
    mine = tables[(tables["model"] == model) & (tables["cell"] == cell)].set_index("metric")
    for name in METRICS:
        for ours, theirs in (
            ("female", "value_a"),
            ("male", "value_b"),
            ("difference", "difference"),
            ("p_value", "p_value"),
        ):
            a, b = mine.loc[name, ours], comps[name][theirs]
            assert (b is None and np.isnan(a)) or a == pytest.approx(b, rel=1e-12), (name, ours)


def test_sv_encoders_are_refused_for_a_cm_experiment(cm_run):
    tmp, _ = cm_run
    with pytest.raises(ConfigError, match="countermeasure experiment: --encoders must name CM models"):
        run(
            RunOptions(
                experiment=str(tmp / "E91.yaml"),
                encoders=["CAM++"],
                out=tmp / "r2",
                cache_dir=tmp / "cache",
                quiet=True,
            )
        )


def test_e19_definition_parses_with_its_synthetic_variant():
    from interbias.experiments.schema import load_experiment
    from interbias.run.tasks.countermeasure import cm_spec

    root = Path(__file__).resolve().parents[1] / "conditions" / "E19.yaml"
    exp = load_experiment(root, corpus="synthetic")
    assert exp.corpus.name == "synthetic"
    assert cm_spec(exp)["models"] == ["ResNet18-logspec", "ResNet18-cqt"]
    assert [c.id for c in exp.cells()][0] == "codec=clean,noise=clean"
    assert cm_spec(load_experiment(root))["models"][-1] == "AASIST"


def _resampled_run(tmp: Path, name: str, frontend: str) -> Path:
    """The E91 run with one model on a 22.05 kHz copy of the tiny manifest, with ``frontend``."""
    import soundfile as sf
    from cm_fixtures import SPEAKERS, clip

    data = tmp / "data22k"
    if not (data / "manifest.csv").exists():
        m = cm_manifest(data, per_class=3, speakers={k: v for k, v in SPEAKERS.items() if v[1] != "train"})
        for u in m:  # the same clips, written at 22.05 kHz
            base = 200.0 if u.gender == "female" else 110.0
            i = int(u.id[-1])
            sf.write(str(data / u.path), clip(u.get("label") == "spoof", base + 7 * i, u.id, 0.5, 22050), 22050)
    yaml = YAML.format(manifest=data / "manifest.csv").replace("name: E91", f"name: {name}") + frontend
    (tmp / f"{name}.yaml").write_text(yaml)
    out = run(
        RunOptions(
            experiment=str(tmp / f"{name}.yaml"),
            encoders=["ResNet18-logspec"],
            out=tmp / "results",
            cache_dir=tmp / "cache",
            quiet=True,
        )
    )
    return out.run_dir


def test_frontend_resampler_is_honoured_and_recorded(cm_run):
    tmp, _ = cm_run
    poly = _resampled_run(tmp, "E92", "")
    sinc = _resampled_run(tmp, "E93", "frontend: {resampler: sinc}\n")
    a, b = (pd.read_csv(d / "cm_scores.csv") for d in (poly, sinc))
    assert list(a["id"]) == list(b["id"]) and len(a) == 24 + 3 * 12  # dev + eval, then eval
    assert (a["score"] != b["score"]).any()
    recs = [json.loads((d / "run.json").read_text()) for d in (poly, sinc)]
    assert [r["frontend"]["resampler"]["name"] for r in recs] == ["polyphase", "sinc"]
    assert recs[1]["frontend"]["sample_rate_hz"] == 16000 and recs[1]["frontend"]["max_duration_s"] is None
    inp = recs[1]["models"]["ResNet18-logspec"]["input"]
    assert inp["pad"] == "zero" and inp["n_samples"] == 8000 and inp["resampler"]["name"] == "sinc"


@pytest.mark.parametrize(
    ("frontend", "match"),
    [
        ("frontend: {max_duration_s: 3}\n", "frontend.max_duration_s: a countermeasure experiment cannot honour"),
        ("frontend: {sample_rate_hz: 8000}\n", "the CMs take 16000 Hz audio, not 8000"),
    ],
)
def test_frontend_keys_the_cm_path_cannot_honour_are_refused(cm_run, frontend, match):
    tmp, _ = cm_run
    (tmp / "E94.yaml").write_text(YAML.format(manifest=tmp / "data" / "manifest.csv") + frontend)
    with pytest.raises(ConfigError, match=match):
        run(RunOptions(experiment=str(tmp / "E94.yaml"), out=tmp / "r3", cache_dir=tmp / "cache", quiet=True))


def test_track1_table_per_attack_equals_cm_eval_track1_on_the_score_file(cm_run):
    """cm_track1.csv per model × cell equals `cm-eval track1 --score-column log_odds --by attack`
    on that slice of cm_scores.csv; log_odds is the posterior's log odds."""
    tmp, outcome = cm_run
    scores = pd.read_csv(outcome.run_dir / "cm_scores.csv")
    post = 1 / (1 + np.exp(-scores["log_odds"]))
    assert np.allclose(post, scores["score"], atol=1e-12)
    table = pd.read_csv(outcome.run_dir / "cm_track1.csv")
    assert len(table) == 2 * 4 * 2 and set(table["group"]) == {"all", "attack"}  # pooled + A01, per model × cell
    model, cell = "ResNet18-logspec", "codec=mulaw,noise=white"
    sl = scores[(scores.model == model) & (scores.cell == cell) & (scores.split == "eval")]
    sl.to_csv(tmp / "slice.csv", index=False)
    res = CliRunner().invoke(
        app,
        [
            "scores",
            "cm-eval",
            "track1",
            str(tmp / "slice.csv"),
            "--score-column",
            "log_odds",
            "--by",
            "attack",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    mine = table[(table.model == model) & (table.cell == cell)].set_index("group")
    for k in ("min_dcf", "act_dcf", "cllr", "eer"):
        assert mine.loc["all", k] == pytest.approx(doc["pooled"][k], abs=1e-12)
        assert mine.loc["attack", k] == pytest.approx(doc["tables"]["attack"][0][k], abs=1e-12)
