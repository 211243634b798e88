"""``interbias encoders list`` and ``interbias encoders embed`` through typer's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from typer.testing import CliRunner

from interbias.audio import frontend as audio
from interbias.cli import app
from interbias.encoders import load_encoder, probe_wave
from interbias.encoders.registered import PAPER_LABELS

runner = CliRunner()


def test_encoders_json_lists_every_paper_label_and_the_defaults(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("INTERBIAS_MODELS", str(tmp_path))
    res = runner.invoke(app, ["encoders", "list", "--json"])
    assert res.exit_code == 0, res.output
    entries = {e["label"]: e for e in json.loads(res.output)}
    assert set(PAPER_LABELS) | {"GE2E", "mfcc-stats"} <= set(entries)
    for e in entries.values():
        assert set(e) >= {"family", "backend", "embedding_dim", "sample_rate_hz", "features", "status", "source"}
        assert e["status"] == "available" or e["status"].startswith("missing: ")
    assert entries["CAM++"]["status"] == "available" and entries["CAM++"]["source"].endswith("campplus_cn_en_common.pt")
    assert entries["GE2E"]["status"] == "available" and entries["GE2E"]["source"].endswith("pretrained.pt")
    assert (entries["mfcc-stats"]["status"], entries["mfcc-stats"]["source"]) == ("available", "builtin")
    wavlm = entries["WavLM-Base+"]
    assert (wavlm["family"], wavlm["backend"], wavlm["embedding_dim"]) == ("ssl", "transformers", 768)
    assert wavlm["status"] == (
        f"missing: WavLM-Base+: model folder {tmp_path / 'WavLM-Base+'} does not exist (expected [config.json + "
        "preprocessor_config.json + model.safetensors or pytorch_model.bin]; place the files there, or set "
        "INTERBIAS_MODEL_WAVLM_BASE_PLUS or INTERBIAS_MODELS)"
    )
    assert wavlm["folder"] == str(tmp_path / "WavLM-Base+") and wavlm["checkpoint"] == "microsoft/wavlm-base-plus"
    text = runner.invoke(app, ["encoders", "list"]).output
    assert "WavLM-Base+" in text and "missing:" in text and "available" in text


@pytest.fixture()
def wavs(tmp_path: Path) -> list[Path]:
    paths = []
    for i, (scale, n) in enumerate(((1.0, 20000), (0.5, 18000), (1.0, 24000))):
        w = probe_wave(2.0)[:n] * scale
        if i == 2:
            w = w[::-1]
        p = tmp_path / f"u{i}.wav"
        sf.write(p, w, 16000, subtype="FLOAT")
        paths.append(p)
    return paths


def test_embed_prints_dimension_and_cosine_matrix(wavs: list[Path]) -> None:
    res = runner.invoke(app, ["encoders", "embed", *map(str, wavs), "--encoder", "mfcc-stats", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    enc = load_encoder("mfcc-stats")
    X = enc.embed([audio.load(p).samples for p in wavs])
    assert out["dimension"] == 40 and out["encoder"]["label"] == "mfcc-stats"
    np.testing.assert_allclose(np.array(out["cosine"]), X @ X.T, atol=2e-6)
    np.testing.assert_allclose(np.diag(out["cosine"]), 1.0, atol=1e-6)
    assert out["truncated"] == [False, False, False]
    text = runner.invoke(app, ["encoders", "embed", *map(str, wavs), "-e", "mfcc-stats"]).output
    assert text.startswith("mfcc-stats: 40-d embeddings, checkpoint sha256 none\n")
    assert "u2.wav" in text and f"{(X @ X.T)[0, 1]:9.4f}" in text


def test_embed_errors_are_one_line(wavs: list[Path], tmp_path: Path) -> None:
    res = runner.invoke(app, ["encoders", "embed", str(wavs[0]), "--encoder", "WavLM"])
    assert res.exit_code == 1 and res.output.startswith(
        "error: unavailable encoder(s): unknown encoder 'WavLM'; valid: "
    )
    res = runner.invoke(
        app, ["encoders", "embed", str(wavs[0]), "-e", "RawNet3", "--model-dir", str(tmp_path / "nope")]
    )
    assert res.exit_code == 1
    assert res.output.strip() == (
        f"error: unavailable encoder(s): RawNet3: model folder {tmp_path / 'nope'} does not exist (expected "
        "[model.pt] or [model.onnx]; place the files there, or set INTERBIAS_MODEL_RAWNET3 or INTERBIAS_MODELS); "
        "see docs/guide/encoders.md"
    )
    res = runner.invoke(app, ["encoders", "embed", str(wavs[0]), "-e", "mfcc-stats", "--layer", "3"])
    assert res.exit_code == 1
    assert (
        res.output
        == "error: unavailable encoder(s): mfcc-stats: unknown option(s) layer; valid: (none); see docs/guide/encoders.md\n"
    )
    res = runner.invoke(app, ["encoders", "embed", str(wavs[0]), "-e", "CAM++", "--model-dir", str(tmp_path)])
    assert (
        res.output
        == "error: unavailable encoder(s): CAM++: unknown option(s) path; valid: checkpoint; see docs/guide/encoders.md\n"
    )


def test_embed_refuses_a_click_in_digital_silence_in_one_line(tmp_path: Path) -> None:
    x = np.zeros(32000, dtype=np.float32)
    x[16000:16016] = 0.5
    sf.write(tmp_path / "click.wav", x, 16000, subtype="FLOAT")
    res = runner.invoke(app, ["encoders", "embed", str(tmp_path / "click.wav"), "-e", "mfcc-stats"])
    assert res.exit_code == 1
    assert res.output == (
        f"error: {tmp_path / 'click.wav'}: only 0.020 s of its 2.000 s holds signal above -90 dBFS (the rest is "
        "digital silence), shorter than the minimum 1 s; nothing to embed\n"
    )
