"""ADD 2023 Track 3 end to end on a tiny three-algorithm corpus: training deterministic and
resumable, the label files in cm-eval's format, the scores recomputed from the written logits,
bad input one line each."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from recognition_fixtures import three_class_manifest
from typer.testing import CliRunner

from interbias.analysis.security.cm_eval import recognition_of_files
from interbias.cli import app
from interbias.cm.openset import UNKNOWN
from interbias.cm.recognition import known_classes, load_recogniser, run_track3, train_recogniser, with_algorithms
from interbias.corpora.manifest import Manifest, Utterance
from interbias.utils.errors import ConfigError, EncoderError

TINY = {"duration_s": "0.5", "width": "8", "max_epochs": "3", "batch_size": "4", "lr": "0.003"}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return three_class_manifest(tmp_path_factory.mktemp("rec") / "data")


def test_training_is_deterministic_and_resumes(corpus, tmp_path):
    quiet = {"log": lambda s: None, "settings": dict(TINY)}
    info = train_recogniser(corpus, ["A02"], tmp_path / "a", **quiet)
    first = train_recogniser(corpus, ["A02"], tmp_path / "c", stop_after=1, **quiet)
    assert first["stopped"] == "stopped" and not (tmp_path / "c" / "train_activations.npz").exists()
    train_recogniser(corpus, ["A02"], tmp_path / "c", **quiet)
    # a second run from scratch, stopped and resumed, ends with the same bytes
    assert (tmp_path / "a" / "checkpoint.pt").read_bytes() == (tmp_path / "c" / "checkpoint.pt").read_bytes()
    assert info["classes"] == ["A01", "bonafide"] and info["unknown"] == ["A02"]
    assert info["counts"]["train"] == {"A01": 12, "bonafide": 12} and len(info["class_weights"]) == 2
    acts = [np.load(tmp_path / x / "train_activations.npz") for x in "ac"]
    np.testing.assert_array_equal(acts[0]["av"], acts[1]["av"])


def test_run_track3_writes_cm_eval_files_that_score_as_reported(corpus, tmp_path):
    s = run_track3(
        corpus, ["A02"], tmp_path / "t3", settings=dict(TINY), tail_size=5, threshold=0.9, log=lambda m: None
    )
    out = tmp_path / "t3"
    ref = dict(line.split() for line in (out / "reference.txt").read_text().splitlines())
    assert sum(v == UNKNOWN for v in ref.values()) == 6 and len(ref) == 18  # eval: 2 speakers × 3 × 3 algorithms
    for key in ("softmax", "openmax"):
        res, classes = recognition_of_files(out / "reference.txt", out / f"{key}.txt", unknown=UNKNOWN)
        assert classes == ["A01", "bonafide"] and res.f1 == pytest.approx(s[key]["f1"], rel=1e-12)
    # the written labels follow from the written logits
    table = pd.read_csv(out / "recognition_scores.csv")
    rec = load_recogniser(out / "model", threshold=0.9, tail_size=5)
    av = table[["logit:A01", "logit:bonafide"]].to_numpy()
    assert rec.softmax.predict(av) == table["softmax"].tolist() and rec.openmax.predict(av) == table["openmax"].tolist()
    assert json.loads((out / "track3.json").read_text())["openmax"]["f1"] == s["openmax"]["f1"]


def test_bad_input_one_line_each(corpus, tmp_path):
    with pytest.raises(
        ConfigError, match=r"^open-set recognition: the unknown class 'A02' has 12 utterance\(s\) in the training data"
    ):
        known_classes(corpus, ["A02"], ["A01", "A02", "bonafide"])
    with pytest.raises(ConfigError, match=r"needs at least two known classes; got 1 \(bonafide\)"):
        known_classes(corpus, ["A01", "A02"])
    with pytest.raises(ConfigError, match="class 'A09' is not in the manifest"):
        known_classes(corpus, ["A09"])
    # spoofs without an algorithm label: said so, not "class 'A01' is not in the manifest"
    stripped = [
        Utterance.from_dict({**u.to_dict(), "attack": None}) if u.get("label") == "spoof" else u for u in corpus
    ]
    n_spoofs = sum(u.get("label") == "spoof" for u in corpus)
    with pytest.raises(
        ConfigError,
        match=rf"^recognition: {n_spoofs} of {n_spoofs} spoof utterance\(s\) of manifest .* carry no algorithm label",
    ):
        known_classes(Manifest(corpus.name, corpus.root, tuple(stripped)), ["A01"])
    ids = [u.id for u in corpus][:4]  # f1/bonafide0-2, f1/A010
    sub = with_algorithms(corpus, [(ids[0], "bonafide"), (ids[3], "B07")])
    assert [u.get("attack") for u in sub] == ["bonafide", "B07"] and len(sub) == 2
    with pytest.raises(ConfigError, match=r"utterance 'f1/bonafide0' is bonafide but labelled 'A01'"):
        with_algorithms(corpus, [(ids[0], "A01")])
    with pytest.raises(ConfigError, match=r"utterance 'f1/bonafide0' is listed twice"):
        with_algorithms(corpus, [(ids[0], "bonafide"), (ids[0], "bonafide")])
    with pytest.raises(EncoderError, match=r"no train_activations\.npz"):
        load_recogniser(tmp_path)
    args = [
        "cm",
        "train",
        "--model",
        "ResNet18-lfcc",
        "--manifest",
        str(corpus.root / "manifest.csv"),
        "--task",
        "recognition",
    ]
    for extra, msg in (
        ([], "give the held-out algorithm with --unknown"),
        (["--unknown", "A01", "--unknown", "A02"], "needs at least two known classes"),
    ):
        res = CliRunner().invoke(app, [*args, *extra, "--out", str(tmp_path / "o")])
        assert res.exit_code == 1 and msg in res.output and len(res.output.strip().splitlines()) == 1, res.output


def test_cli_trains_a_recogniser(corpus, tmp_path):
    sets = [x for k, v in {**TINY, "max_epochs": "1"}.items() for x in ("--set", f"{k}={v}")]
    args = ["cm", "train", "--model", "ResNet18-lfcc", "--manifest", str(corpus.root / "manifest.csv")]
    res = CliRunner().invoke(
        app, [*args, "--task", "recognition", "--unknown", "A01", *sets, "--out", str(tmp_path / "o"), "-q"]
    )
    assert res.exit_code == 0, res.output
    assert "ResNet18-lfcc recognition: known A02, bonafide; unknown A01; 1 epoch(s)" in res.output
    from interbias.cm.models import load_cm

    with pytest.raises(EncoderError, match="is a recognition checkpoint, not a bona fide/spoof detector"):
        load_cm("ResNet18-lfcc", path=tmp_path / "o")
