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
from interbias.analysis.geometry import sweep
from interbias.analysis.geometry.across import leakage_and_disparity, pearson, resample_voices
from interbias.analysis.geometry.pipeline import GeometryOptions, grid_to_table, run_geometry
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
    args = ["geometry", "--encoders", "low,mid,high", "--groups", "accent", "--out", str(out)]
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
    res = runner.invoke(app, ["geometry", "--encoders", "CAM++", "--out", str(tmp_path)])
    assert res.exit_code == 1
    assert res.output == (
        "error: --encoders needs at least 3 encoders for r(Λ, D̄) (got 1: CAM++); audit one encoder with --encoder\n"
    )
    res = runner.invoke(app, ["geometry", "--encoder", "mfcc-stats", "--layers", "1:3", "--out", str(tmp_path)])
    assert res.exit_code == 1
    assert res.output == "error: --layers sweeps SSL layers; mfcc-stats has no selectable layers\n"
    res = runner.invoke(app, ["geometry", "--encoder", "mfcc-stats", "--layers", "3-1", "--out", str(tmp_path)])
    assert res.exit_code == 1 and res.output.count("\n") == 1 and "give a range a:b" in res.output


def test_layer_sweep_runs_one_audit_per_layer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = []
    monkeypatch.setattr(sweep, "encoder_options", lambda label, layer: {"layer": layer})
    monkeypatch.setattr(sweep, "run_geometry", lambda options, reporter=None: seen.append(options.layer) or options)
    got = sweep.run_layers(GeometryOptions(encoder="WavLM-Base", out=tmp_path), sweep.parse_layers("2:4"))
    assert seen == [2, 3, 4] and [o.encoder for o in got] == ["WavLM-Base"] * 3
