"""``interbias cm score``: per-file logits and posterior through the model's own input policy,
a degraded version with --op (one operator, or several as a chain), and one line for each bad input."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import soundfile as sf
import torch
from cm_fixtures import cm_manifest
from scipy.signal import resample_poly
from test_cm_models import PUBLISHED, _randomise, authors_pad
from typer.testing import CliRunner

from interbias.cli import app
from interbias.cm import models as cm_models
from interbias.cm.aasist import AASIST, AASIST_L
from interbias.cm.models import CM_MODELS
from interbias.utils.seeding import derive_rng


@pytest.fixture(scope="module")
def aasist_l(tmp_path_factory):
    """A published-layout AASIST-L checkpoint (random weights), its sha256 pinned for the test."""
    tmp = tmp_path_factory.mktemp("aasist-l")
    model = AASIST(AASIST_L)
    _randomise(model, 11)
    model.eval()
    torch.save({k: model.state_dict()[k] for k in PUBLISHED["AASIST-L"]}, tmp / "AASIST-L.pth")
    sha = cm_models.sha256_file(tmp / "AASIST-L.pth")
    mp = pytest.MonkeyPatch()
    mp.setitem(CM_MODELS._entries, "AASIST-L", dataclasses.replace(CM_MODELS.get("AASIST-L"), pinned_sha256=sha))
    yield tmp, model
    mp.undo()


def _wav(path: Path, seconds: float, rate: int, key: str) -> np.ndarray:
    x = (0.1 * derive_rng("cm-score", key).standard_normal(int(seconds * rate))).astype(np.float32)
    sf.write(str(path), x, rate, subtype="FLOAT")
    return x


def _cli(*args: str):
    return CliRunner().invoke(app, ["cm", "score", *args])


def test_logits_and_posterior_match_the_network_on_the_authors_input(aasist_l, tmp_path):
    folder, model = aasist_l
    a = _wav(tmp_path / "a.wav", 1.0, 16000, "a")  # shorter than 64 600 samples: tiled
    b = _wav(tmp_path / "b.wav", 5.0, 16000, "b")  # longer: cut
    res = _cli("AASIST-L", str(tmp_path / "a.wav"), str(tmp_path / "b.wav"), "--checkpoint", str(folder), "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["model"]["input"]["pad"] == "tile" and doc["model"]["input"]["n_samples"] == 64600
    assert "softmax(logits)[1]" in doc["score_convention"] and doc["failed"] == []
    with torch.no_grad():
        want = model(torch.from_numpy(np.stack([authors_pad(a), authors_pad(b)]))).double().numpy()
    got = np.array([[r["logit_spoof"], r["logit_bonafide"]] for r in doc["scores"]])
    assert np.abs(got - want).max() < 1e-5
    post = np.exp(want[:, 1]) / np.exp(want).sum(1)
    assert np.allclose([r["score"] for r in doc["scores"]], post, atol=1e-9)
    assert [r["id"] for r in doc["scores"]] == ["a", "b"] and doc["scores"][0]["duration_s"] == 1.0


def test_other_rates_are_resampled_and_op_scores_a_degraded_version(aasist_l, tmp_path):
    folder, model = aasist_l
    x = _wav(tmp_path / "c.wav", 1.0, 32000, "c")
    base = ["AASIST-L", str(tmp_path / "c.wav"), "--checkpoint", str(folder), "--json"]
    clean = json.loads(_cli(*base).stdout)["scores"][0]
    with torch.no_grad():
        want = model(torch.from_numpy(authors_pad(resample_poly(x, 1, 2).astype(np.float32))[None])).numpy()[0]
    assert abs(clean["logit_bonafide"] - want[1]) < 1e-3  # polyphase filters differ slightly from scipy's default
    noisy = ["--op", "noise", "--set", "kind=gaussian", "--set", "snr_db=0"]
    r1, r2 = (json.loads(_cli(*base, *noisy).stdout) for _ in range(2))
    assert r1["scores"] == r2["scores"]  # seeded: the same degraded file twice
    assert r1["operator"] == {"op": "noise", "params": {"kind": "gaussian", "snr_db": "0"}, "seed": 0}


@pytest.mark.slow  # 14 s
def test_a_chain_of_one_operator_scores_as_op_and_two_operators_differ_from_each_alone(aasist_l, tmp_path):
    folder, _ = aasist_l
    _wav(tmp_path / "e.wav", 1.0, 16000, "e")
    _wav(tmp_path / "f.wav", 2.0, 16000, "f")
    base = ["AASIST-L", str(tmp_path / "e.wav"), str(tmp_path / "f.wav"), "--checkpoint", str(folder), "--json"]

    def run(*extra: str) -> dict:
        res = _cli(*base, *extra)
        assert res.exit_code == 0, res.output
        return json.loads(res.stdout)

    logits = lambda doc: np.array([[r["logit_spoof"], r["logit_bonafide"]] for r in doc["scores"]])  # noqa: E731
    op = run("--op", "noise", "--set", "kind=gaussian", "--set", "snr_db=0")
    assert run("--op", "noise:kind=gaussian,snr_db=0")["operator"] == op["operator"]  # one spec: one operator
    noise = run("--chain", "noise:kind=gaussian,snr_db=0")
    assert noise["scores"] == op["scores"]  # same operator, same fingerprint, same draws
    assert noise["operator"] is None and op["chain"] is None
    assert noise["chain"] == {"specs": ["noise:kind=gaussian,snr_db=0"], "label": noise["chain"]["label"], "seed": 0}
    assert noise["chain"]["label"].startswith("noise(") and "snr_db=0" in noise["chain"]["label"]
    clip = run("--chain", "clip:threshold=0.3")
    both = run("--op", "noise:kind=gaussian,snr_db=0", "--op", "clip:threshold=0.3")
    assert both["chain"]["label"].startswith("noise(") and "+clip(" in both["chain"]["label"]
    for alone in (noise, clip, run()):  # the random-weight model moves little; the audio test below measures it
        assert not np.array_equal(logits(both), logits(alone)), alone.get("chain")  # one logit may tie in float32
    older = _cli(*base, "--chain", "noise:kind=gaussian,snr_db=0", "--chain", "clip:threshold=0.3")
    assert older.stdout == json.dumps(both, indent=2) + "\n"  # the older spelling: same bytes, and its new name
    assert older.stderr.splitlines()[0] == "note: --chain is now --op"


def test_a_chain_degrades_in_the_order_given(tmp_path):
    """Noise then clip differs from each alone; clip then noise leaves no flat top; noise then clip
    ends on the clip's ceiling."""
    from interbias.audio.frontend import FrontEnd
    from interbias.cm.score_files import chain_for, load_one

    _wav(tmp_path / "g.wav", 1.0, 16000, "g")
    fe = FrontEnd(16000, 0.0, None)
    last = load_one(
        tmp_path / "g.wav", fe, chain_for(None, {}, ["noise:kind=gaussian,snr_db=0", "clip:threshold=0.3"]), 0
    )
    first = load_one(
        tmp_path / "g.wav", fe, chain_for(None, {}, ["clip:threshold=0.3", "noise:kind=gaussian,snr_db=0"]), 0
    )
    assert np.sum(np.abs(last) >= np.abs(last).max() - 1e-7) > 50  # many samples at the ceiling
    assert np.sum(np.abs(first) >= np.abs(first).max() - 1e-7) < 3
    for spec in ("noise:kind=gaussian,snr_db=0", "clip:threshold=0.3"):
        alone = load_one(tmp_path / "g.wav", fe, chain_for(None, {}, [spec]), 0)
        assert np.abs(last - alone).max() > 0.05, spec


@pytest.mark.parametrize("seed", [0, 1])
def test_op_degrades_each_file_as_interbias_degrade_does(tmp_path, seed):
    """At 16 kHz, the audio ``cm score --op`` scores is what ``interbias data degrade`` writes (to 16-bit PCM)."""
    from interbias.audio.frontend import FrontEnd
    from interbias.cm.score_files import chain_for, load_one
    from interbias.operators.degrade import degrade_file

    x = _wav(tmp_path / "d.wav", 1.0, 16000, "d")
    params = {"kind": "gaussian", "snr_db": "0"}
    fe = FrontEnd(16000, 0.0, None)
    got = load_one(tmp_path / "d.wav", fe, chain_for("noise", params), seed)
    degrade_file(tmp_path / "d.wav", tmp_path / "out.wav", "noise", params, seed=seed)
    want, rate = sf.read(str(tmp_path / "out.wav"), dtype="float32")
    assert rate == 16000 and np.abs(got - want).max() <= 1.0 / 32768 + 1e-7
    assert np.abs(got - x).max() > 0.05  # the noise is there
    other = load_one(tmp_path / "d.wav", fe, chain_for("noise", params), seed + 7)
    assert np.abs(got - other).max() > 0.05  # and drawn from the seed


def test_bad_files_get_one_line_each_and_the_rest_are_written(aasist_l, tmp_path):
    folder, _ = aasist_l
    _wav(tmp_path / "ok.wav", 0.5, 16000, "ok")
    (tmp_path / "empty.wav").write_bytes(b"")
    (tmp_path / "text.wav").write_text("not audio\n")
    files = [str(tmp_path / n) for n in ("ok.wav", "empty.wav", "text.wav")]
    res = _cli("AASIST-L", *files, "--checkpoint", str(folder), "--out", str(tmp_path / "s.csv"), "-q")
    assert res.exit_code == 1 and "Traceback" not in res.output
    lines = res.stderr.strip().splitlines()
    assert lines[1] == f"{tmp_path / 'empty.wav'}: file is empty (0 bytes)"
    assert lines[2].startswith(f"{tmp_path / 'text.wav'}: cannot decode audio") and len(lines) == 3
    table = pd.read_csv(tmp_path / "s.csv")
    assert list(table["id"]) == ["ok"]


def test_a_checkpoint_that_is_not_the_pinned_one_is_one_line(tmp_path):
    _wav(tmp_path / "ok.wav", 0.5, 16000, "ok")
    model = AASIST(AASIST_L)
    torch.save(model.state_dict(), tmp_path / "AASIST-L.pth")
    res = _cli("AASIST-L", str(tmp_path / "ok.wav"), "--checkpoint", str(tmp_path))
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) == 1
    assert "has sha256" in res.output and "not the published checkpoint's" in res.output


def test_manifest_keeps_label_and_attack(aasist_l, tmp_path):
    folder, _ = aasist_l
    m = cm_manifest(tmp_path / "data", per_class=1, speakers={"f1": ("female", "eval"), "m1": ("male", "eval")})
    res = _cli("AASIST-L", "--manifest", str(tmp_path / "data" / "manifest.csv"), "--checkpoint", str(folder), "-q")
    assert res.exit_code == 0, res.output
    table = pd.read_csv(__import__("io").StringIO(res.stdout))
    assert list(table["id"]) == [u.id for u in m]
    assert list(table["label"]) == ["bonafide", "spoof"] * 2 and list(table["attack"]) == ["bonafide", "A01"] * 2


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ([], "give audio FILES or --manifest M"),
        (["x.wav", "--set", "snr_db=3"], "--set snr_db: no --op to apply it to"),
        (
            ["x.wav", "--op", "noise", "--op", "clip", "--set", "snr_db=3"],
            "give each operator's parameters as NAME:KEY=VALUE",
        ),
        (["x.wav", "--resampler", "cubic"], "'cubic' is not one of"),
        (["x.wav", "--op", ":snr_db=3"], "--op ':snr_db=3': expected NAME or NAME:KEY=VALUE"),
        (["x.wav", "--op", "noise:snr_db"], "--op 'noise:snr_db': 'snr_db': expected KEY=VALUE"),
        (["x.wav", "--op", "nois:snr_db=3", "--op", "clip"], "--op 'nois:snr_db=3': unknown operator 'nois'"),
        (
            ["x.wav", "--op", "noise:kind=gaussian,snr_db=3", "--op", "clip:thresh=1"],
            "--op 'clip:thresh=1': unknown parameter 'thresh'",
        ),
        (
            ["x.wav", "--op", "noise:snr_db=3", "--set", "snr_db=4"],
            "--op 'noise:snr_db=3' and --set both give 'snr_db'",
        ),
    ],
)
def test_usage_errors_are_one_line(args, match):
    res = _cli("AASIST-L", *args)
    lines = res.output.strip().splitlines()
    if "--set" in args:  # the older --op NAME --set spelling first says its new form
        assert lines.pop(0) == "note: --op NAME --set KEY=VALUE is now --op NAME:KEY=VALUE"
    assert res.exit_code == 1 and match in res.output and len(lines) == 1
