"""ORCA (``interbias audit repair``) and repaired encoders (``LABEL+orca:REF``)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from interbias.analysis import geometry as geo
from interbias.audits.source import grid_to_table
from interbias.cli import app
from interbias.encoders.adapter import TENSORS, AdapterWeights, load_adapter, save_adapter
from interbias.repair.orca import OrcaConfig, keep_scores, leakage_penalty, split_voices, train
from interbias.utils.errors import AnalysisError, EncoderError
from interbias.utils.seeding import derive_rng

runner = CliRunner()


def planted_grid(seed: int = 0, d: int = 16, n_text: int = 8, n_voice: int = 16, n_style: int = 4) -> geo.EmbeddingGrid:
    """Texts load on (q0, q2), voices on (q2, q3): one planted shared direction q2 that no
    whitening can separate, so the audit's sem–voice leakage Λ is far above chance. Styles on
    (q5, q6). Groups: gender (voice parity) × accent (voice // 2 parity)."""
    rng = derive_rng("planted", seed)
    q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    tc = rng.standard_normal((n_text, 2)) @ q[:, [0, 2]].T
    vc = rng.standard_normal((n_voice, 2)) @ q[:, [2, 3]].T
    sc = rng.standard_normal((n_style, 2)) @ q[:, [5, 6]].T
    t, v, s = (a.ravel() for a in np.meshgrid(np.arange(n_text), np.arange(n_voice), np.arange(n_style), indexing="ij"))
    x = tc[t] + vc[v] + sc[s] + 0.3 * rng.standard_normal((len(t), d))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    groups = {"gender": np.where(v % 2, "f", "m"), "accent": np.where(v % 4 < 2, "a", "b")}
    return geo.EmbeddingGrid.build(x, [f"t{i}" for i in t], [f"v{i:02d}" for i in v], [f"s{i}" for i in s], groups)


def voices_of(grid: geo.EmbeddingGrid) -> dict[str, str]:
    return {v: f"{g}|{a}" for v, g, a in zip(grid.voice, grid.groups["gender"], grid.groups["accent"], strict=True)}


def sem_voice_leakage(grid: geo.EmbeddingGrid, x: np.ndarray) -> float:
    bases = geo.axis_subspaces(x, {a: grid.labels(a) for a in geo.AXES}, 2)
    return geo.leakage(bases["sem"], bases["voice"]).aggregate


def fit(grid: geo.EmbeddingGrid, cfg: OrcaConfig, seed: int = 3) -> AdapterWeights:
    labels = {"sem": grid.text, "voice": grid.voice, "expr": grid.style}
    groups = [voices_of(grid)[v] for v in grid.voice]
    return AdapterWeights(train(grid.x, labels, groups, cfg, seed=seed).tensors, {})


SMALL = OrcaConfig(steps=150, batch=256, hidden=64, head_dim=8, keep_pairs=512)


def test_leakage_penalty_lowers_held_out_leakage_on_a_planted_grid() -> None:
    """Texts and voices share a planted direction; the full objective lowers the held-out
    leakage well below the raw grid's and below the run without the penalty."""
    from interbias.repair.heldout import mean_leakage

    grid = planted_grid()
    split = split_voices(voices_of(grid), heldout_share=0.5, seed=1)
    train_grid = grid.subset(np.isin(grid.voice, split.train))
    held = grid.subset(np.isin(grid.voice, split.heldout))
    raw = sem_voice_leakage(held, held.x)
    with_pen = fit(train_grid, SMALL).apply(held.x)
    without = fit(train_grid, OrcaConfig(**{**SMALL.as_dict(), "orthogonality": False})).apply(held.x)
    assert raw > 0.25  # the planted direction: far above chance m/d = 2/16
    assert sem_voice_leakage(held, with_pen) < raw - 0.1
    assert sem_voice_leakage(held, with_pen) < sem_voice_leakage(held, without) - 0.03
    m = geo.default_m(held)
    assert mean_leakage(held, with_pen, m) < mean_leakage(held, without, m) - 0.02


def whitened_leakage_by_hand(z: np.ndarray, labels: dict[str, np.ndarray], tau_rel: float, m: int) -> float:
    """Λ̄ by an independent route: symmetric whitening Σ^{-1/2} (not a Cholesky factor), class
    means by loops, subspaces from an eigendecomposition of the whitened between-class scatter."""
    n, d = z.shape
    zc = z - z.mean(0)
    total = zc.T @ zc / n
    vals, vecs = np.linalg.eigh(total + tau_rel * np.trace(total) / d * np.eye(d))
    inv_half = vecs @ np.diag(vals**-0.5) @ vecs.T
    bases = {}
    for axis, lab in labels.items():
        s_b = np.zeros((d, d))
        for c in sorted(set(lab.tolist())):
            mu = zc[lab == c].mean(0)
            s_b += (lab == c).mean() * np.outer(mu, mu)
        w_vals, w_vecs = np.linalg.eigh(inv_half @ s_b @ inv_half)
        bases[axis] = w_vecs[:, np.argsort(w_vals)[::-1][:m]]
    pairs = [("sem", "voice"), ("sem", "expr"), ("voice", "expr")]
    return float(np.mean([np.sum((bases[a].T @ bases[b]) ** 2) / m for a, b in pairs]))


def test_leakage_penalty_matches_a_hand_computation_and_the_audit() -> None:
    import torch

    grid = planted_grid(n_text=4, n_voice=8, n_style=4)
    labels = {a: grid.labels(a) for a in geo.AXES}
    codes = {a: torch.tensor(np.unique(v, return_inverse=True)[1]) for a, v in labels.items()}
    z = torch.tensor(grid.x, dtype=torch.float64)
    pen = float(leakage_penalty(z, codes, 1e-3, 2, [("sem", "voice"), ("sem", "expr"), ("voice", "expr")]))
    ints = {a: c.numpy() for a, c in codes.items()}
    assert pen == pytest.approx(whitened_leakage_by_hand(grid.x, ints, 1e-3, 2), abs=1e-9)
    bases = geo.axis_subspaces(grid.x, labels, 2)
    audit = np.mean([geo.leakage(bases[a], bases[b]).aggregate for a, b in geo.PAIRS])
    assert pen == pytest.approx(audit, abs=1e-9)
    assert pen > 0.05
    one = float(leakage_penalty(z, codes, 1e-3, 2, [("sem", "voice")]))  # one pair: that pair's Λ
    assert one == pytest.approx(geo.leakage(bases["sem"], bases["voice"]).aggregate, abs=1e-9)


def test_penalty_is_zero_for_orthogonal_axes_and_one_for_shared() -> None:
    import torch

    # sem varies on e0 only, voice on e1 only: orthogonal whitened between-class subspaces
    t, v = np.meshgrid(np.arange(4), np.arange(4), indexing="ij")
    t, v = t.ravel(), v.ravel()
    z = np.zeros((16, 3))
    z[:, 0], z[:, 1] = t, v
    z[:, 2] = 2.0 * ((t + v) % 2) - 1.0  # balanced: uncorrelated with both class labels
    labels = {"sem": torch.tensor(t), "voice": torch.tensor(v)}
    pair = [("sem", "voice")]
    assert float(leakage_penalty(torch.tensor(z), labels, 1e-3, 1, pair)) == pytest.approx(0.0, abs=1e-10)
    same = {"sem": torch.tensor(t), "voice": torch.tensor(t)}
    assert float(leakage_penalty(torch.tensor(z), same, 1e-3, 1, pair)) == pytest.approx(1.0, abs=1e-9)


def test_verification_term_by_hand() -> None:
    """Two pairs: base cosines 1 and 0; adapted cosines 0 and 0.6 → mean((0−1)², (0.6−0)²) = 0.68."""
    import torch

    base_i = torch.tensor([[1.0, 0.0], [1.0, 0.0]])
    base_j = torch.tensor([[2.0, 0.0], [0.0, 3.0]])  # cos 1, cos 0 (rows need not be unit)
    ad_i = torch.tensor([[1.0, 0.0], [0.6, 0.8]])
    ad_j = torch.tensor([[0.0, 1.0], [1.0, 0.0]])  # cos 0, cos 0.6
    assert float(keep_scores(ad_i, ad_j, base_i, base_j)) == pytest.approx(0.68, abs=1e-6)
    assert float(keep_scores(base_i, base_j, base_i, base_j)) == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize(
    ("option", "line"),
    [
        (["--set", "steps=0"], "error: ORCA: steps must be >= 1; got 0"),
        (["--set", "voice_share=0"], "error: ORCA: voice_share must be in (0, 1]; got 0.0"),
        (["--set", "w_keep=-1"], "error: ORCA: w_keep must be a finite number >= 0; got -1.0"),
        (["--set", "lr=0"], "error: ORCA: lr must be a finite number > 0; got 0.0"),
        (
            ["--set", "stepz=1"],
            "error: --set: unknown setting 'stepz'; valid: "
            + ", ".join(f.name for f in dataclasses.fields(OrcaConfig)),  # the record's settings
        ),
        (["--set", "steps=1.5"], "error: --set: steps='1.5' is not an int"),
        (
            ["--set", "steps=5", "--steps", "5"],
            "note: --steps is now --set steps=VALUE\nerror: --set steps: also given as --steps",
        ),
    ],
)
def test_bad_training_options_are_refused_in_one_line(tmp_path: Path, option: list[str], line: str) -> None:
    """Refused before the grid is read (the table named does not exist)."""
    res = runner.invoke(
        app, ["audit", "repair", "--embeddings", str(tmp_path / "none.csv"), "--out", str(tmp_path), *option]
    )
    assert res.exit_code == 1 and res.output.splitlines() == line.splitlines(), res.output


def test_single_axis_configs_penalise_the_pairs_of_their_axis() -> None:
    assert OrcaConfig().penalised_pairs() == [("sem", "voice"), ("sem", "expr"), ("voice", "expr")]
    only = OrcaConfig(axes=("expr",))
    assert only.penalised_pairs() == [("sem", "expr"), ("voice", "expr")]
    assert only.weights() == {"sem": 0.0, "voice": 0.0, "expr": 1.0}
    assert OrcaConfig(orthogonality=False).penalised_pairs() == []
    with pytest.raises(AnalysisError, match="axes must be distinct"):
        OrcaConfig(axes=("noise",)).check()
    with pytest.raises(AnalysisError, match="nothing to train"):
        OrcaConfig(w_sem=0, w_voice=0, w_expr=0, orthogonality=False).check()


def test_training_is_deterministic_per_seed() -> None:
    grid = planted_grid(n_text=4, n_voice=8)
    cfg = OrcaConfig(steps=15, batch=64, hidden=16, head_dim=4, keep_pairs=64)
    labels = {"sem": grid.text, "voice": grid.voice, "expr": grid.style}
    groups = [voices_of(grid)[v] for v in grid.voice]
    a = train(grid.x, labels, groups, cfg, seed=7).tensors
    b = train(grid.x, labels, groups, cfg, seed=7).tensors
    c = train(grid.x, labels, groups, cfg, seed=8).tensors
    assert all(a[k].tobytes() == b[k].tobytes() for k in TENSORS)
    assert any(a[k].tobytes() != c[k].tobytes() for k in TENSORS)
    assert np.abs(a["adapter.w2"]).max() > 0  # it trained (W₂ starts at zero)


def test_split_is_voice_disjoint_and_keeps_every_group_on_both_sides() -> None:
    voices = {f"v{i:02d}": f"g{i % 4}" for i in range(16)}
    split = split_voices(voices, heldout_share=0.5, seed=0)
    assert not set(split.train) & set(split.heldout)
    assert set(split.train) | set(split.heldout) == set(voices)
    for g in {f"g{i}" for i in range(4)}:
        assert sum(voices[v] == g for v in split.heldout) == 2
        assert sum(voices[v] == g for v in split.train) == 2
    assert split_voices(voices, heldout_share=0.5, seed=0) == split
    assert split_voices(voices, heldout_share=0.5, seed=1) != split
    with pytest.raises(AnalysisError, match="heldout-share"):
        split_voices(voices, heldout_share=1.0, seed=0)
    with pytest.raises(AnalysisError, match=">= 2 voices on each side"):
        split_voices({"a": "g", "b": "g"}, heldout_share=0.5, seed=0)


def test_adapter_identity_at_init_and_numpy_matches_torch() -> None:
    import torch

    from interbias.repair.orca import forward, init_tensors

    x = planted_grid(n_text=2, n_voice=4).x[:10].astype(np.float32)
    t = init_tensors(16, OrcaConfig(hidden=8), seed=0)
    ident = AdapterWeights({k: v.detach().numpy() for k, v in t.items()}, {})
    assert np.allclose(ident.apply(x), x / np.linalg.norm(x, axis=1, keepdims=True), atol=1e-6)
    with torch.no_grad():
        t["adapter.w2"].normal_(generator=torch.Generator().manual_seed(1))
        ref = forward(t, torch.from_numpy(x)).numpy()
    moved = AdapterWeights({k: v.detach().numpy() for k, v in t.items()}, {})
    assert np.allclose(moved.apply(x), ref, atol=1e-5)


# ---- end to end: the CLI on a table, and the repaired encoder ------------------------------------


def test_repair_cli_on_a_table_writes_a_voice_disjoint_audit(tmp_path: Path) -> None:
    path = tmp_path / "grid.csv"
    grid_to_table(planted_grid(n_text=4, n_voice=8)).to_csv(path, index=False)
    args = ["audit", "repair", "--embeddings", str(path), "--groups", "gender,accent", "--out", str(tmp_path / "out")]
    args += ["--set", "steps=20", "--set", "batch=64", "--set", "hidden=16", "--permutations", "5", "--ablations", "-q"]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    out = tmp_path / "out"
    info = json.loads((out / "repair.json").read_text())
    train_v, held_v = set(info["split"]["train"]), set(info["split"]["heldout"])
    assert not train_v & held_v and len(train_v) == len(held_v) == 4
    table = __import__("pandas").read_csv(out / "repair.csv")
    variants = ["raw", "orca", "no-orthogonality", "no-balanced-sampling", "no-verification-term"]
    variants += ["only-sem", "only-voice", "only-expr"]
    assert set(table["variant"]) == set(variants)
    assert set(table["n_voices"]) == {4} and set(table["subset"]) == {"heldout"}
    summary = __import__("pandas").read_csv(out / "repair-summary.csv")
    assert list(summary["variant"]) == [*variants, "class-mean-reference"]
    assert summary["dLambda_mean"].iloc[0] == 0 and summary["Lambda_mean"].notna().all()
    assert summary["eer_clean"].between(0, 0.5).all()
    reference = summary.iloc[-1]  # held-out figures only: no adapter, no geometry audit
    assert reference["adapter_sha256"] != reference["adapter_sha256"] and reference["F_sem"] != reference["F_sem"]
    assert reference["n_rows"] == summary["n_rows"].iloc[0]
    assert len(info["notes"]) == 1 and info["notes"][0].startswith("class-mean reference (the 4 training voices'")
    assert f"note: {info['notes'][0]}" in res.output.splitlines()
    adapter = load_adapter(out / info["adapter"])
    assert set(adapter.manifest["heldout_voices"]) == held_v
    assert adapter.manifest["config"]["steps"] == 20 and adapter.manifest["seed"] == 0
    assert len(adapter.manifest["train_embeddings_sha256"]) == 64
    assert len(info["options_sha256"]) == 64


def test_repair_refuses_to_overwrite_another_configuration_and_says_a_clamped_split(tmp_path: Path) -> None:
    """A rerun into the same --out with other options is refused before any work and leaves the
    first audit byte for byte; the same options are refused too (issue 53 case 8: a second training
    is another adapter, which would replace the first audit); --heldout-share 0.99 on groups
    of two voices holds out one of each and says so (was: silently)."""
    path = tmp_path / "grid.csv"
    grid_to_table(planted_grid(n_text=4, n_voice=8)).to_csv(path, index=False)
    out = tmp_path / "out"
    args = ["audit", "repair", "--embeddings", str(path), "--groups", "gender,accent", "--out", str(out)]
    args += [
        "--set",
        "steps=5",
        "--set",
        "batch=32",
        "--set",
        "hidden=8",
        "--permutations",
        "2",
        "--no-jackknife",
        "-q",
    ]
    res = runner.invoke(app, [*args, "--heldout-share", "0.99"])
    assert res.exit_code == 0, res.output
    note = (
        "--heldout-share 0.99: 4 of 8 voices held out (50%); in 4 group(s) the count was clamped so that "
        "training and held-out voices each keep at least one voice of the group"
    )
    assert f"note: {note}" in res.output.splitlines()
    info = json.loads((out / "repair.json").read_text())
    assert info["notes"][0] == note and info["notes"][1].startswith("class-mean reference")
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    res = runner.invoke(app, [*args, "--heldout-share", "0.5"])
    assert res.exit_code == 1 and len(res.output.splitlines()) == 1, res.output
    assert res.output.startswith(f"error: {out} already holds the repair of other options (options ")
    assert res.output.rstrip().endswith("would be overwritten; give another --out, or remove that folder")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    res = runner.invoke(app, [*args, "--heldout-share", "0.99"])  # the same options: kept, not retrained
    assert res.exit_code == 1 and len(res.output.splitlines()) == 1, res.output
    assert res.output.startswith(f"error: {out} already holds this repair (the same options, ")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def fake_adapter(path: Path, base_fp: str, d: int = 40, seed: int = 0) -> Path:
    rng = derive_rng("fake-adapter", seed)
    t = {
        k: rng.standard_normal(s).astype(np.float32) * 0.1
        for k, s in (
            ("adapter.w1", (8, d)),
            ("adapter.b1", (8,)),
            ("adapter.w2", (d, 8)),
            ("adapter.b2", (d,)),
            ("head.sem", (4, d)),
            ("head.voice", (4, d)),
            ("head.expr", (4, d)),
        )
    }
    save_adapter(path, t, {"base_encoder": "mfcc-stats", "base_fingerprint": base_fp})
    return path


@pytest.fixture()
def mfcc_fp() -> str:
    from interbias.encoders import load_encoder

    return load_encoder("mfcc-stats").fingerprint


def test_repaired_encoder_embeds_through_the_adapter(tmp_path: Path, mfcc_fp: str) -> None:
    from interbias.encoders import load_encoder, load_encoders, probe_wave

    path = fake_adapter(tmp_path / "a.safetensors", mfcc_fp)
    enc = load_encoders([f"mfcc-stats+orca:{path}"], "cpu")[0]
    base = load_encoder("mfcc-stats")
    wave = probe_wave()
    want = load_adapter(path).apply(base.embed([wave]))
    assert np.allclose(enc.embed([wave]), want, atol=1e-6)
    assert enc.fingerprint != base.fingerprint
    assert enc.provenance()["adapter"]["sha256"] == enc.checkpoint_sha256


def test_changed_adapter_is_refused_and_changes_the_fingerprint(
    tmp_path: Path, mfcc_fp: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hashlib
    import shutil

    from interbias.encoders import load_encoder

    monkeypatch.setenv("INTERBIAS_CACHE", str(tmp_path / "cache"))
    src = fake_adapter(tmp_path / "a.safetensors", mfcc_fp)
    sha = hashlib.sha256(src.read_bytes()).hexdigest()
    (tmp_path / "cache" / "adapters").mkdir(parents=True)
    stored = tmp_path / "cache" / "adapters" / f"{sha}.safetensors"
    shutil.copyfile(src, stored)
    by_hash = load_encoder(f"mfcc-stats+orca:{sha[:12]}")
    # another adapter written over the stored file: its hash no longer matches the label
    fake_adapter(stored, mfcc_fp, seed=1)
    with pytest.raises(EncoderError, match="the file changed"):
        load_encoder(f"mfcc-stats+orca:{sha[:12]}")
    # by path: another file's bytes give another fingerprint
    other = load_encoder(f"mfcc-stats+orca:{stored}")
    assert other.fingerprint != by_hash.fingerprint
    # a tensor edited in place (same size) is caught by the manifest's weights_sha256
    data = bytearray(src.read_bytes())
    data[-4:] = b"\x00\x00\x80\x3f"
    src.write_bytes(bytes(data))
    with pytest.raises(EncoderError, match="do not match the weights_sha256"):
        load_encoder(f"mfcc-stats+orca:{src}")


def test_adapter_for_another_checkpoint_or_missing_is_refused(tmp_path: Path, mfcc_fp: str) -> None:
    from interbias.encoders import load_encoder

    path = fake_adapter(tmp_path / "a.safetensors", "0" * 16)
    with pytest.raises(EncoderError, match="was trained on"):
        load_encoder(f"mfcc-stats+orca:{path}")
    with pytest.raises(EncoderError, match="neither a file nor a sha256 prefix"):
        load_encoder("mfcc-stats+orca:no/such/file")
    (tmp_path / "junk.safetensors").write_bytes(b"not safetensors")
    with pytest.raises(EncoderError, match="not a readable safetensors"):
        load_encoder(f"mfcc-stats+orca:{tmp_path / 'junk.safetensors'}")


@pytest.fixture(scope="module")
def tone_manifest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """8 voices (4 per gender, f0) × 2 styles (vibrato) × 3 sentences (spectral tilt), 1.1 s tones."""
    import soundfile as sf

    root = tmp_path_factory.mktemp("repairtones")
    rows = []
    tt = np.arange(int(1.1 * 16000)) / 16000
    for vi, f0 in enumerate((190, 210, 230, 250, 95, 110, 125, 140)):
        for style, vib in (("neutral", 0.0), ("sad", 0.05)):
            for si, tilt in enumerate((0.5, 0.9, 1.3), 1):
                phase = 2 * np.pi * f0 * (tt + vib * np.sin(2 * np.pi * 5 * tt) / (2 * np.pi * 5))
                wave = sum(np.sin(k * phase) / k**tilt for k in range(1, 10))
                rel = f"v{vi}/{style}/s{si}.flac"
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                sf.write(root / rel, (0.1 * wave).astype(np.float32), 16000, subtype="PCM_16")
                gender = "female" if vi < 4 else "male"
                rows.append({"id": rel[:-5], "path": rel, "speaker": f"v{vi}", "gender": gender, "style": style})
                rows[-1]["text"] = f"s{si}"
    (root / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root / "manifest.jsonl"


def test_repair_with_an_encoder_holds_out_voices_and_the_label_loads(
    tone_manifest: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from interbias.corpora.manifest import Manifest
    from interbias.encoders import load_encoders

    monkeypatch.setenv("INTERBIAS_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "out"
    args = ["audit", "repair", "--encoder", "mfcc-stats", "--manifest", str(tone_manifest), "--groups", "gender"]
    args += ["--out", str(out), "--set", "steps=10", "--set", "batch=32", "--set", "hidden=8", "--permutations", "3"]
    res = runner.invoke(app, [*args, "--no-jackknife"])
    assert res.exit_code == 0, res.output
    info = json.loads((out / "repair.json").read_text())
    train_v, held_v = set(info["split"]["train"]), set(info["split"]["heldout"])
    assert not train_v & held_v and len(held_v) == 4
    held = Manifest.read(out / "heldout-manifest.jsonl")
    assert set(held.speakers()) == held_v  # the evaluation manifest holds no training voice
    assert all(Path(u.path).is_absolute() and Path(u.path).is_file() for u in held)
    adapter = load_adapter(out / info["adapter"])
    assert set(adapter.manifest["train_voices"]) == train_v
    assert len(adapter.manifest["train_utterances_sha256"]) == 64
    label = info["label"]
    assert label.startswith("mfcc-stats+orca:") and label in res.output
    enc = load_encoders([label], "cpu")[0]
    assert enc.label == label and enc.base.fingerprint == adapter.manifest["base_fingerprint"]


def test_worker_reload_with_the_drivers_runtime_gives_the_same_fingerprint(tmp_path: Path, mfcc_fp: str) -> None:
    from interbias.encoders import load_encoders

    path = fake_adapter(tmp_path / "a.safetensors", mfcc_fp)
    label = f"mfcc-stats+orca:{path}"
    driver = load_encoders([label], "cpu")[0]
    worker = load_encoders([label], "cpu", {label: {"runtime": driver.runtime}})[0]  # as executors do
    assert driver.runtime == driver.base.runtime  # what the executors pin for the worker
    assert worker.fingerprint == driver.fingerprint


def test_an_adapter_named_three_ways_is_one_encoder(
    tmp_path: Path, mfcc_fp: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Relative path, absolute path and sha256 prefix of one adapter load one encoder: the same
    label (``BASE+orca:<sha12>``, no machine path), fingerprint and run-id entry; each keeps the
    reference it was given for worker processes (issue 53 case 11: three encoders)."""
    import hashlib
    import shutil

    from interbias.encoders import load_encoders

    monkeypatch.setenv("INTERBIAS_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    src = fake_adapter(tmp_path / "a.safetensors", mfcc_fp)
    sha = hashlib.sha256(src.read_bytes()).hexdigest()
    (tmp_path / "cache" / "adapters").mkdir(parents=True)
    shutil.copyfile(src, tmp_path / "cache" / "adapters" / f"{sha}.safetensors")
    refs = ["a.safetensors", str(src), sha[:10]]
    encs = [load_encoders([f"mfcc-stats+orca:{ref}"], "cpu")[0] for ref in refs]
    assert {e.label for e in encs} == {f"mfcc-stats+orca:{sha[:12]}"}
    assert len({e.fingerprint for e in encs}) == 1
    assert [e.load_label for e in encs] == [f"mfcc-stats+orca:{ref}" for ref in refs]
    again = load_encoders([encs[0].load_label], "cpu", {encs[0].load_label: {"runtime": encs[0].runtime}})[0]
    assert (again.label, again.fingerprint) == (encs[0].label, encs[0].fingerprint)  # as a worker loads it


def test_one_adapter_named_twice_in_a_list_is_refused(tmp_path: Path, mfcc_fp: str) -> None:
    import hashlib

    from interbias.encoders import load_encoders

    src = fake_adapter(tmp_path / "a.safetensors", mfcc_fp)
    sha = hashlib.sha256(src.read_bytes()).hexdigest()
    with pytest.raises(EncoderError) as err:
        load_encoders([f"mfcc-stats+orca:{src}", f"mfcc-stats+orca:{src.parent}/./a.safetensors"], "cpu")
    assert str(err.value).startswith(f"encoder mfcc-stats+orca:{sha[:12]} is listed twice (")
