"""``geometry --encoders`` (r(Λ, D̄) across encoders with a voice bootstrap) and ``--layers``:
``analysis.geometry.across`` and ``analysis.geometry.sweep``."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from interbias.analysis import geometry as geo
from interbias.analysis.geometry.across import leakage_and_disparity, pearson, resample_voices
from interbias.audits import geometry_sweep as sweep
from interbias.audits.geometry import GeometryOptions, run_geometry
from interbias.audits.source import grid_to_table
from interbias.cli import app
from interbias.utils.seeding import derive_rng

runner = CliRunner()


def leaky_grid(mix: float) -> geo.EmbeddingGrid:
    """5 texts × 8 voices × 3 styles in d = 6; voices in two accent groups; the voice effect
    leaks into the text dimensions in proportion to ``mix``."""
    rng = derive_rng("test-across")  # the same draws for every mix: only the leakage differs
    texts, voices, styles = rng.normal(size=(5, 2)), rng.normal(size=(8, 2)), rng.normal(size=(3, 2))
    rows, x = [], []
    for t in range(5):
        for v in range(8):
            for s in range(3):
                voice = voices[v] + 1.5 * (v % 2)
                z = np.concatenate([texts[t] + mix * voice, voice, styles[s]]) + 0.3 * rng.normal(size=6)
                rows.append((t, v, s))
                x.append(z)
    t, v, s = (np.asarray(c) for c in zip(*rows, strict=True))
    return geo.EmbeddingGrid.build(np.asarray(x), t, [f"v{i}" for i in v], s, {"accent": [f"a{i % 2}" for i in v]})


def test_pearson_matches_numpy_and_is_nan_for_a_constant_column() -> None:
    x, y = [0.1, 0.4, 0.2, 0.9], [1.0, 2.5, 1.1, 3.0]
    assert pearson(x, y) == pytest.approx(np.corrcoef(x, y)[0, 1])
    assert np.isnan(pearson([1, 1, 1], [1, 2, 3]))


def test_resampled_voices_stay_a_balanced_grid_with_distinct_labels() -> None:
    grid = leaky_grid(0.5)
    out = resample_voices(grid, ["v0", "v0", "v3"])
    assert len(set(out.voice)) == 3 and out.x.shape[0] == 3 * 15
    assert geo.check_balance(out.text, out.voice, out.style) == 1
    np.testing.assert_array_equal(out.x[:15], out.x[15:30])


def test_leakage_and_disparity_agree_with_the_audit() -> None:
    grid = leaky_grid(0.8)
    res = geo.audit(grid, attributes=["accent"], m=2, n_perm=3, jackknife=False, seed=0)
    lam, dbar = leakage_and_disparity(grid, 2, "accent")
    assert lam == pytest.approx(res.values[("Lambda", "sem", "voice")])
    assert dbar == pytest.approx(res.values[("Dbar", "accent", "sem")])


def _fake_run(tables: dict[str, Path]):
    """run_geometry on an --embeddings table named after the encoder (no encoder is loaded)."""

    def run(options: GeometryOptions, reporter=None):
        label = options.encoder
        return run_geometry(dataclasses.replace(options, encoder=None, embeddings=tables[label], label=label), reporter)

    return run


def test_encoders_table_r_and_interval(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tables = {}
    for name, mix in (("low", 0.0), ("mid", 0.6), ("high", 1.5)):
        tables[name] = tmp_path / f"{name}.csv"
        grid_to_table(leaky_grid(mix)).to_csv(tables[name], index=False)
    monkeypatch.setattr(sweep, "run_geometry", _fake_run(tables))
    out = tmp_path / "geo"
    args = ["audit", "geometry", "--encoders", "low,mid,high", "--groups", "accent", "--out", str(out)]
    res = runner.invoke(app, [*args, "--permutations", "3", "--bootstrap", "40", "-q"])
    assert res.exit_code == 0, res.output
    across = pd.read_csv(out / "across.csv")
    enc = across[across["metric"] == "encoder"].set_index("encoder")
    geometry = geo.read_geometry(out)
    for name in tables:
        rows = geometry[
            (geometry["encoder"] == name) & (geometry["attribute"] == "accent") & (geometry["axis"] == "sem")
        ]
        assert enc.loc[name, "Dbar"] == pytest.approx(rows[rows["metric"] == "Dbar"]["value"].iloc[0])
    assert enc.loc["low", "Lambda"] < enc.loc["high", "Lambda"]
    r = across[across["metric"] == "pearson_r"].iloc[0]
    assert r["r"] == pytest.approx(np.corrcoef(enc["Lambda"], enc["Dbar"])[0, 1])
    assert -1 <= r["ci_low"] <= r["ci_high"] <= 1 and 30 <= r["n_defined"] <= r["n_boot"] == 40
    assert (out / "across.png").is_file() and "r(Λ, D̄) = " in res.output


def test_encoders_and_layers_refusals_are_one_line(tmp_path: Path) -> None:
    res = runner.invoke(app, ["audit", "geometry", "--encoders", "CAM++", "--out", str(tmp_path)])
    assert res.exit_code == 1
    assert res.output == (
        "error: --encoders needs at least 3 encoders for r(Λ, D̄) (got 1: CAM++); audit one encoder with --encoder\n"
    )
    res = runner.invoke(
        app, ["audit", "geometry", "--encoder", "mfcc-stats", "--layers", "1:3", "--out", str(tmp_path)]
    )
    assert res.exit_code == 1
    assert res.output == "error: --layers sweeps SSL layers; mfcc-stats has no selectable layers\n"
    res = runner.invoke(
        app, ["audit", "geometry", "--encoder", "mfcc-stats", "--layers", "3-1", "--out", str(tmp_path)]
    )
    assert res.exit_code == 1 and res.output.count("\n") == 1 and "give a range a:b" in res.output


def test_layer_sweep_runs_one_audit_per_layer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = []
    monkeypatch.setattr(sweep, "encoder_options", lambda label, layer: {"layer": layer})
    monkeypatch.setattr(sweep, "run_geometry", lambda options, reporter=None: seen.append(options.layer) or options)
    got = sweep.run_layers(GeometryOptions(encoder="WavLM-Base", out=tmp_path), sweep.parse_layers("2:4"))
    assert seen == [2, 3, 4] and [o.encoder for o in got] == ["WavLM-Base"] * 3


@pytest.mark.slow
def test_layer_sweep_on_a_tiny_ssl_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--layers 1:2 audits a tiny WavLM snapshot (the real loader) at both hidden layers."""
    pytest.importorskip("transformers")
    import json

    import soundfile as sf
    from encoder_fixtures import make_transformers

    from interbias.encoders import ENCODERS

    folder = make_transformers(tmp_path / "wavlm", "wavlm")
    card = dataclasses.replace(
        ENCODERS.get("WavLM-Base"), embedding_dim=32, expect={**ENCODERS.get("WavLM-Base").expect, "layers": 2}
    )
    real_get = ENCODERS.get
    monkeypatch.setattr(ENCODERS, "get", lambda label: card if label == "WavLM-Base" else real_get(label))
    monkeypatch.setenv("INTERBIAS_MODEL_WAVLM_BASE", str(folder))
    rows, tt = [], np.arange(20000) / 16000
    for v, (gender, f0) in enumerate((("female", 210), ("female", 240), ("male", 100), ("male", 125))):
        for style, vib in (("neutral", 0.0), ("sad", 0.04)):
            for si in range(1, 4):
                phase = 2 * np.pi * f0 * (tt + vib * np.sin(2 * np.pi * 5 * tt) / (2 * np.pi * 5))
                rel = f"v{v}/{style}/s{si}.flac"
                (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
                wave = sum(np.sin(k * phase) / k ** (0.4 * si) for k in range(1, 8))
                sf.write(tmp_path / rel, (0.1 * wave).astype(np.float32), 16000, subtype="PCM_16")
                rows.append(
                    {
                        "id": rel[:-5],
                        "path": rel,
                        "speaker": f"v{v}",
                        "gender": gender,
                        "style": style,
                        "text": f"s{si}",
                    }
                )
    (tmp_path / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "geo"
    args = [
        "audit",
        "geometry",
        "--encoder",
        "WavLM-Base",
        "--manifest",
        str(tmp_path / "manifest.jsonl"),
        "--groups",
        "gender",
    ]
    args += [
        "--layers",
        "1:2",
        "--permutations",
        "2",
        "--no-jackknife",
        "--out",
        str(out),
        "--cache-dir",
        str(tmp_path / "c"),
    ]
    res = runner.invoke(app, [*args, "-q"])
    assert res.exit_code == 0, res.output
    frame = geo.read_geometry(out)
    assert sorted(set(frame["layer"])) == ["1", "2"]
    f_voice = frame[(frame["metric"] == "F") & (frame["axis"] == "voice")].set_index("layer")["value"]
    assert f_voice["1"] != f_voice["2"]  # another layer, another embedding
