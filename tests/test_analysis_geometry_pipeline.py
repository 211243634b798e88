"""``interbias audit geometry`` end to end: embeddings tables, an encoder on a tiny grid, errors."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from interbias.analysis import geometry as geo
from interbias.audits.source import grid_to_table
from interbias.cli import app
from interbias.utils.paths import slug

runner = CliRunner()


@pytest.fixture(scope="module")
def tone_grid(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 4-voice × 2-style × 3-sentence grid of 1.2 s harmonic tones (voice: f0, style: vibrato,
    sentence: spectral tilt) with a JSONL manifest like the synthetic corpus's: 24 utterances."""
    import soundfile as sf

    root = tmp_path_factory.mktemp("tones")
    rows = []
    tt = np.arange(int(1.2 * 16000)) / 16000
    for vi, (gender, f0) in enumerate((("female", 210), ("female", 240), ("male", 100), ("male", 125))):
        for style, vib in (("neutral", 0.0), ("sad", 0.04)):
            for si, tilt in enumerate((0.5, 0.8, 1.2), 1):
                phase = 2 * np.pi * f0 * (tt + vib * np.sin(2 * np.pi * 5 * tt) / (2 * np.pi * 5))
                wave = sum(np.sin(k * phase) / k**tilt for k in range(1, 12))
                rel = f"v{vi}/{style}/s{si:02d}.flac"
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                sf.write(root / rel, (0.1 * wave).astype(np.float32), 16000, subtype="PCM_16")
                row = {"id": rel[:-5], "path": rel, "speaker": f"v{vi}", "gender": gender, "style": style}
                rows.append({**row, "text": f"sentence {si}", "sentence": f"s{si:02d}"})
    (root / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def table(tmp_path: Path, name: str = "emb.csv", *, seed: int = 0) -> Path:
    rng = np.random.Generator(np.random.PCG64(seed))
    t, v, s = np.meshgrid(np.arange(4), np.arange(6), np.arange(3), indexing="ij")
    t, v, s = t.ravel(), v.ravel(), s.ravel()
    x = rng.normal(size=(len(t), 5)) + 2 * rng.normal(size=(4, 5))[t]
    grid = geo.EmbeddingGrid.build(
        x, [f"t{i}" for i in t], [f"v{i}" for i in v], [f"s{i}" for i in s], {"gender": np.where(v < 3, "f", "m")}
    )
    frame = grid_to_table(grid)
    path = tmp_path / name
    if path.suffix == ".parquet":
        frame.to_parquet(path)
    else:
        frame.to_csv(path, index=False)
    return path


def invoke(*args: str) -> object:
    return runner.invoke(app, ["audit", "geometry", *args])


def test_embeddings_table_writes_csv_json_png_and_merges(tmp_path: Path) -> None:
    out = tmp_path / "geo"
    csv_in = table(tmp_path)
    res = invoke("--embeddings", str(csv_in), "--groups", "gender", "--out", str(out), "--permutations", "5")
    assert res.exit_code == 0, res.output
    frame = pd.read_csv(out / "geometry.csv")
    assert set(frame["encoder"]) == {"emb"} and list(frame.columns) == list(geo.COLUMNS)
    assert set(frame["metric"]) == {
        "F",
        "Lambda",
        "ell",
        "F_group",
        "Gamma",
        "decomposition_residual",
        "variance_share",
        "delta",
        "Dbar",
        "Dbar_model",
        "floor",
        "active_margin",
    }
    assert frame.loc[frame["metric"] == "decomposition_residual", "value"].iloc[0] < 1e-8
    assert frame.loc[frame["metric"] == "F", "value"].between(0, 1).all()
    assert (out / "geometry.png").read_bytes()[:4] == b"\x89PNG"
    prov = json.loads((out / "geometry.json").read_text())
    entry = prov["emb||emb.csv|full"]
    assert entry["seed"] == int(frame["seed"].iloc[0]) and entry["n_perm"] == 5
    assert "F sem" in res.output and "balanced: 1 row(s)" in res.output
    first = (out / "geometry.csv").read_bytes()

    # same audit again: its rows are replaced, byte for byte the same
    assert (
        invoke(
            "--embeddings", str(csv_in), "--groups", "gender", "--out", str(out), "--permutations", "5", "-q"
        ).exit_code
        == 0
    )
    assert (out / "geometry.csv").read_bytes() == first
    # a second table (parquet) under another label joins the same geometry.csv
    pq = table(tmp_path, "other.parquet", seed=1)
    res = invoke(
        "--embeddings", str(pq), "--groups", "gender", "--out", str(out), "--permutations", "5", "--label", "B", "-q"
    )
    assert res.exit_code == 0, res.output
    merged = geo.read_geometry(out)
    assert sorted(set(merged["encoder"])) == ["B", "emb"]
    assert len(merged) == 2 * len(frame)
    assert len(geo.summary(merged)) == 2
    section = geo.report_section(out)
    assert section is not None and section.figure == out / "geometry.png"
    main = [ln for ln in section.markdown.splitlines() if " (p " in ln]  # the summary table (Γ has p)
    body = [ln for ln in main if ln.startswith("| B |") or ln.startswith("| emb |")]
    assert len(body) == 2
    f_sem = merged[(merged["encoder"] == "emb") & (merged["metric"] == "F") & (merged["axis"] == "sem")].iloc[0]
    assert f"{f_sem['value']:.3f} ± {f_sem['ci_half_width']:.3f}" in body[1]
    assert geo.report_section(tmp_path) is None


def test_table_errors_are_one_line(tmp_path: Path) -> None:
    csv_in = table(tmp_path)
    res = invoke("--embeddings", str(csv_in), "--out", str(tmp_path / "o"))
    assert res.exit_code == 1
    assert res.output.strip().startswith(f"error: {csv_in}: missing column(s) age_band, accent; found: text, voice")
    frame = pd.read_csv(csv_in).drop(columns=["e2"])
    frame.to_csv(tmp_path / "gap.csv", index=False)
    res = invoke("--embeddings", str(tmp_path / "gap.csv"), "--groups", "gender")
    assert res.output.strip() == f"error: {tmp_path / 'gap.csv'}: embedding columns must be e0..e3 without gaps"
    res = invoke("--groups", "gender")
    assert res.output.strip() == "error: give exactly one of --encoder LABEL or --embeddings FILE"
    res = invoke("--embeddings", str(csv_in), "--groups", "gender", "--sentences", "2")
    assert res.output.strip() == "error: --layer and --sentences apply to --encoder runs, not to --embeddings tables"
    res = invoke("--encoder", "CAM++", "--layer", "3")
    assert res.output.strip() == "error: CAM++: takes no --layer option (only encoders with selectable layers do)"
    res = invoke("--encoder", "nope")
    assert res.exit_code == 1 and res.output.startswith("error: unknown encoder 'nope'; valid: ")


def test_encoder_on_a_tiny_grid_uses_the_cache_and_is_deterministic(tone_grid: Path, tmp_path: Path) -> None:
    manifest = tone_grid / "manifest.jsonl"
    out = tmp_path / "geo"
    args = ["--encoder", "mfcc-stats", "--manifest", str(manifest), "--groups", "gender", "--out", str(out)]
    args += ["--cache-dir", str(tmp_path / "cache")]
    res = invoke(*args, "--permutations", "10", "--save-embeddings")
    assert res.exit_code == 0, res.output
    assert "embedded 24, from cache 0" in res.output
    first = (out / "geometry.csv").read_bytes()
    frame = geo.read_geometry(out)
    assert set(frame["encoder"]) == {"mfcc-stats"} and (frame["n_rows"] == 24).all()
    assert (frame["n_texts"] == 3).all() and (frame["n_voices"] == 4).all() and (frame["n_styles"] == 2).all()
    assert set(frame["source"]) == {"manifest.jsonl"} and set(frame["subset"]) == {"full"}
    gamma = frame[frame["metric"] == "Gamma"]
    assert (gamma["p_method"] == "exact").all() and (gamma["n_perm"] == 6).all()  # 4 voices, 2 + 2: 6 splits
    # the saved table reproduces the audit through --embeddings
    saved = out / f"embeddings-{slug('mfcc-stats-full')}.parquet"  # one slug for every file name
    assert pd.read_parquet(saved).shape == (24, 3 + 1 + 40)
    res = invoke("--embeddings", str(saved), "--groups", "gender", "--out", str(tmp_path / "again"), "-q")
    assert res.exit_code == 0, res.output
    again = geo.read_geometry(tmp_path / "again")
    cols = ["metric", "axis", "axis_b", "attribute", "group", "value", "ci_half_width", "p_value"]
    pd.testing.assert_frame_equal(again[cols], frame[cols])  # exact permutations: no draw differs
    res = invoke(*args, "--permutations", "10")
    assert res.exit_code == 0 and "embedded 0, from cache 24" in res.output
    assert (out / "geometry.csv").read_bytes() == first

    res = invoke(*args, "--permutations", "10", "--sentences", "2", "-q")
    assert res.exit_code == 0, res.output
    sub = geo.read_geometry(out)
    sub = sub[sub["subset"] == "sentences=2"]
    assert (sub["n_rows"] == 16).all() and len(sub) > 0


def test_a_failed_utterance_is_counted_and_refuses_the_decomposition(tone_grid: Path, tmp_path: Path) -> None:
    rows = [json.loads(line) for line in (tone_grid / "manifest.jsonl").read_text().splitlines()]
    broken = tmp_path / "broken.flac"  # readable, not decodable (an empty file is refused up front)
    broken.write_bytes(b"not audio at all")
    rows[0]["path"] = str(broken)
    for r in rows[1:]:
        r["path"] = str(tone_grid / r["path"])
    manifest = tmp_path / "broken.jsonl"
    manifest.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "geo"
    res = invoke(
        "--encoder",
        "mfcc-stats",
        "--manifest",
        str(manifest),
        "--groups",
        "gender",
        "--out",
        str(out),
        "--permutations",
        "3",
        "--cache-dir",
        str(tmp_path / "cache"),
    )
    assert res.exit_code == 0, res.output
    assert "warning: 1 utterance(s) failed and were left out (see geometry.json)" in res.output
    frame = geo.read_geometry(out)
    assert (frame["n_failed"] == 1).all() and (frame["n_rows"] == 23).all()
    row = frame[frame["metric"] == "decomposition_residual"].iloc[0]
    assert math.isnan(row["value"])
    assert row["note"].startswith("unbalanced grid: 1 of 24 (text, voice, style) cells missing")
    prov = json.loads((out / "geometry.json").read_text())
    (entry,) = prov.values()
    assert entry["failures"] == {
        rows[0]["id"]: f"{broken}: cannot decode audio (Error opening {str(broken)!r}: Format not recognised.)"
    }
