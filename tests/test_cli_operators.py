"""``interbias data degrade`` and ``interbias data operators`` through typer's CliRunner; seeds."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from test_operators import speechlike
from typer.testing import CliRunner

from interbias.cli import app
from interbias.operators import OPERATORS, OpContext, parse_chain

runner = CliRunner()
RATE = 16000
#: What the older ``--op NAME --set KEY=VALUE`` says on stderr.
SET_NOTE = "note: --op NAME --set KEY=VALUE is now --op NAME:KEY=VALUE\n"


@pytest.fixture
def wav(tmp_path: Path) -> Path:
    path = tmp_path / "in.wav"
    sf.write(path, speechlike("cli", 2 * RATE), RATE, subtype="PCM_16")
    return path


def test_degrade_codec_writes_same_length_and_rate(wav: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.wav"
    res = runner.invoke(app, ["data", "degrade", str(wav), str(out), "--op", "codec:codec=gsm", "--json"])
    assert res.exit_code == 0, res.output
    info = json.loads(res.output)
    assert info["label"] == "codec(codec=gsm,bitrate=13000)" and info["realised"][0]["codec_rate_hz"] == 8000
    y, sample_rate_hz = sf.read(out, dtype="float32")
    x, _ = sf.read(wav, dtype="float32")
    assert sample_rate_hz == RATE and len(y) == len(x) and not np.array_equal(x, y)


def test_degrade_seed_changes_the_draw(wav: Path, tmp_path: Path) -> None:
    outs = []
    for seed, name in ((1, "a"), (1, "b"), (2, "c")):
        out = tmp_path / f"{name}.wav"
        args = ["data", "degrade", str(wav), str(out), "--op", "noise:kind=pink,snr_db=10"]
        assert runner.invoke(app, [*args, "--seed", str(seed)]).exit_code == 0
        outs.append(out.read_bytes())
    assert outs[0] == outs[1] and outs[0] != outs[2]


def _valid_params(name: str) -> str:
    """The parameters of operator ``name``, as the registry's class declares them."""
    return ", ".join(f.name for f in dataclasses.fields(OPERATORS.get(name)))


@pytest.mark.parametrize(
    ("args", "meaning"),
    [
        (["--op", "codec", "--set", "codec"], "--set 'codec': expected KEY=VALUE"),
        (["--op", "codec:codec"], "--op 'codec:codec': 'codec': expected KEY=VALUE"),
        (["--op", "codec:codec=gsm", "--set", "codec=amr"], "--op 'codec:codec=gsm' and --set both give 'codec'"),
        (["--op", "codec:nope=1"], f"unknown parameter 'nope' for operator 'codec'; valid: {_valid_params('codec')}"),
        (["--op", "warp"], f"unknown operator 'warp'; valid: {', '.join(OPERATORS.names())}"),
        (["--op", "packet_loss", "--set", "rate=-0.2"], "packet_loss.rate: -0.2 is outside [0, 1)"),
        (["--op", "time_scale:factor=fast"], "time_scale.factor: 'fast' is not a number"),
    ],
)
def test_degrade_errors_are_one_line(wav: Path, tmp_path: Path, args: list[str], meaning: str) -> None:
    """One error line that says what is wrong (the valid names are the registry's); the older
    ``--op NAME --set`` spelling first says its new form."""
    res = runner.invoke(app, ["data", "degrade", str(wav), str(tmp_path / "o.wav"), *args])
    assert res.exit_code == 1
    lines = res.output.splitlines()
    if "--set" in args:
        assert lines[0] + "\n" == SET_NOTE
        lines = lines[1:]
    assert len(lines) == 1 and lines[0].startswith("error: ") and lines[0].endswith(meaning), res.output


def test_operators_lists_every_operator_and_codec_availability() -> None:
    res = runner.invoke(app, ["data", "operators", "--json"])
    assert res.exit_code == 0
    entries = {e["name"]: e for e in json.loads(res.output)}
    assert set(entries) == set(OPERATORS.names())
    assert {p["name"] for p in entries["noise"]["parameters"]} == {"kind", "snr_db", "noise_dir", "n_talkers"}
    codecs = {c["codec"]: c for c in entries["codec"]["codecs"]}
    assert len(codecs) == 15 and codecs["gsm"]["available"] and codecs["gsm"]["backend"] == "soundfile"
    for c in codecs.values():
        assert c["available"] or c["why_not"]
    text = runner.invoke(app, ["data", "operators"])
    assert text.exit_code == 0 and "codec=speex" in text.output and "time_scale" in text.output


SEEDED = [
    [{"op": "noise", "kind": "gaussian", "snr_db": 5}],
    [{"op": "noise", "kind": "brown", "snr_db": 5}],
    [{"op": "packet_loss", "rate": 0.2, "model": "gilbert_elliott"}],
    [{"op": "reverb", "rt60_s": 0.2, "bank_size": 4}],
    [{"op": "codec", "codec": "amr_nb"}, {"op": "noise", "kind": "pink", "snr_db": 10}],
]


@pytest.mark.parametrize("items", SEEDED, ids=lambda items: "+".join(i["op"] for i in items))
def test_same_seed_same_bytes_other_utterance_or_cell_other_draw(items: list[dict], tmp_path: Path) -> None:
    chain = parse_chain(items, where="t")
    x = speechlike("seed", 2 * RATE)

    def apply(sha: str, key: str | None = None) -> bytes:
        y, _ = chain.apply(
            x, utterance_sha256=sha, key=key, make_ctx=lambda rng: OpContext(RATE, "u", "s", rng, cache_dir=tmp_path)
        )
        return y.tobytes()

    first = apply("u1")
    assert apply("u1") == first
    assert apply("u2") != first  # another utterance
    assert apply("u1", key=chain.fingerprint + "~other-cell") != first  # another cell's chain key


def test_the_older_spellings_write_the_same_bytes_and_name_the_spec_form(wav: Path, tmp_path: Path) -> None:
    """``--op NAME --set K=V`` and ``--param`` still parse (hidden from --help: ``--set`` is a
    command's own settings) and say ``--op NAME:K=V`` on stderr; all three are one operator."""
    outs = {}
    for name, opts in (
        ("spec", ["--op", "noise:kind=pink,snr_db=10"]),
        ("set", ["--op", "noise", "--set", "kind=pink", "--set", "snr_db=10"]),
        ("param", ["--op", "noise", "--param", "kind=pink", "--param", "snr_db=10"]),
    ):
        out = tmp_path / name / "out.wav"
        out.parent.mkdir()
        res = runner.invoke(app, ["data", "degrade", str(wav), str(out), *opts])
        assert res.exit_code == 0, res.output
        outs[name] = (out.read_bytes(), res.stdout.replace(str(out.parent), "DIR"), res.stderr)
    assert outs["spec"][:2] == outs["set"][:2] == outs["param"][:2] and outs["spec"][2] == ""
    assert outs["set"][2] == SET_NOTE and outs["param"][2] == "note: --param is now --op NAME:KEY=VALUE\n"
    shown = runner.invoke(app, ["data", "degrade", "--help"], terminal_width=200).output
    assert "--param" not in shown and "--set" not in shown
