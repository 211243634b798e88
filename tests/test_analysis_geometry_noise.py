"""The noise floor (``analysis.geometry.noise``) and the replicate cells it reads
(``corpora.replicates``)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from interbias.analysis import geometry as geo
from interbias.analysis.geometry.noise import noise_frame, noise_grid
from interbias.corpora.manifest import Manifest, Utterance
from interbias.utils.seeding import derive_rng


def _manifests(noise_scale: float) -> tuple[Manifest, Manifest, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """4 texts × 6 voices × 3 styles; every cell replicated with Gaussian rendering noise."""
    rng = derive_rng("test-noise", noise_scale)
    d = 6
    effects = {k: rng.normal(size=(n, d)) for k, n in (("t", 4), ("v", 6), ("s", 3))}
    orig, reps, vo, vr = [], [], {}, {}
    for t in range(4):
        for v in range(6):
            for s in range(3):
                uid = f"v{v}/s{s}/t{t}"
                row = {"speaker": f"v{v}", "style": f"s{s}", "text": f"t{t}", "gender": "fm"[v % 2], "path": "x.flac"}
                orig.append(Utterance.from_dict({"id": uid, **row}))
                reps.append(Utterance.from_dict({"id": uid + "#r1", **row, "replicate": "1", "replicate_of": uid}))
                vo[uid] = effects["t"][t] + effects["v"][v] + effects["s"][s]
                vr[uid + "#r1"] = vo[uid] + noise_scale * rng.normal(size=d)
    return Manifest("o", Path("."), tuple(orig)), Manifest("r", Path("."), tuple(reps)), vo, vr


def test_noise_rows_are_replicate_differences_with_their_cell_labels() -> None:
    _, reps, vo, vr = _manifests(0.1)
    grid = noise_grid(reps, vo, vr, ["gender"])
    uid = "v2/s1/t3"
    row = np.flatnonzero((grid.voice == "v2") & (grid.style == "s1") & (grid.text == "t3"))
    np.testing.assert_allclose(grid.x[row[0]], (vr[uid + "#r1"] - vo[uid]) / math.sqrt(2))
    assert grid.shape["n_rows"] == 72 and set(grid.groups["gender"]) == {"f", "m"}


def test_noise_floor_is_the_audit_of_the_noise_rows_and_sits_below_the_signal() -> None:
    orig, reps, vo, vr = _manifests(0.05)
    from interbias.audits.source import grid_from_manifest

    grid = grid_from_manifest(orig, vo, ("gender",))
    rng = derive_rng("test-noise-within")
    grid = geo.EmbeddingGrid(
        grid.x + 0.05 * rng.normal(size=grid.x.shape), grid.text, grid.voice, grid.style, grid.groups
    )
    result = geo.audit(grid, attributes=["gender"], m=2, n_perm=3, jackknife=False, seed=0)
    base = geo.to_frame(result, {"encoder": "toy"})
    noise = noise_grid(reps, vo, vr, ["gender"])
    frame = noise_frame(noise, 2, base)
    direct, _ = geo.statistics(noise, ["gender"], 2)
    f = frame.set_index(["metric", "axis", "axis_b"])
    for a in geo.AXES:
        assert f.loc[("F_noise", a, ""), "value"] == pytest.approx(direct[("F", a)])
        assert f.loc[("F_noise", a, ""), "value"] < result.values[("F", a)]
    assert f.loc[("Lambda_noise", "sem", "voice"), "value"] == pytest.approx(direct[("Lambda", "sem", "voice")])
    assert f.loc[("Dbar_noise", "sem", "voice"), "value"] == pytest.approx(direct[("Dbar", "gender", "sem")])
    assert list(frame.columns) == list(geo.COLUMNS) and set(frame["encoder"]) == {"toy"}
    too_big = noise_frame(noise, 3, base)  # 3 styles: m = 3 exceeds C_style − 1
    assert too_big[too_big["metric"] == "Lambda_noise"]["value"].isna().all()


@pytest.mark.slow
def test_replicates_rerender_the_same_cells_and_leave_the_corpus_alone(tmp_path: Path) -> None:
    import soundfile as sf

    from interbias.corpora.replicates import build_replicates
    from interbias.corpora.synthetic import SyntheticSpec, build

    spec = SyntheticSpec(accents=("us", "gb"), age_bands=("adult",), styles=("neutral", "sad"), n_sentences=2)
    corpus, _ = build(spec, tmp_path)
    before = (
        tmp_path / "corpora" / next(p.name for p in (tmp_path / "corpora").iterdir()) / "manifest.jsonl"
    ).read_bytes()
    corpus2, reps = build_replicates(spec, tmp_path, voices=["us-f-adult-1", "gb-m-adult-2"])
    assert [u.id for u in corpus2] == [u.id for u in corpus]
    assert len(reps) == 2 * 2 * 2 and all(u.get("replicate") == "1" for u in reps)
    by_id = {u.id: u for u in corpus}
    for u in reps:
        o = by_id[u.get("replicate_of")]
        assert u.id == o.id + "#r1" and (u.speaker, u.style, u.text) == (o.speaker, o.style, o.text)
        assert u.sha256 != o.sha256
        a, _ = sf.read(corpus.resolve(o))
        b, _ = sf.read(reps.resolve(u))
        n = min(len(a), len(b))
        assert np.sqrt(np.mean((a[:n] - b[:n]) ** 2)) < 0.2 * np.sqrt(np.mean(a**2))  # the same cell, re-rendered
    again = (tmp_path / "corpora" / next(p.name for p in sorted((tmp_path / "corpora").iterdir()))).joinpath(
        "manifest.jsonl"
    )
    assert again.read_bytes() == before
