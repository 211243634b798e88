"""Bring your own corpus end to end: a folder of mixed-rate, mixed-format files, a hand-written
CSV manifest and a VoxCeleb-format trial list -> `interbias run` -> `interbias export` ->
`interbias scores metrics` reproduces every row's EER and minDCF exactly."""

from __future__ import annotations

import hashlib
import itertools
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import soundfile as sf
from conftest import tiny_experiment
from typer.testing import CliRunner

from interbias.audio import frontend as audio
from interbias.cli import app
from interbias.run.scoring import cosine_scores
from interbias.utils.paths import readable_slug, slug

cli = CliRunner()
RATES = (8000, 22050, 44100, 16000)
EXTS = ("wav", "flac", "ogg", "mp3")
UTTS_PER_SPEAKER = 3
SPEAKERS_PER_GENDER = 3


def build_corpus(tiny_corpus, root: Path) -> tuple[Path, Path, dict[str, tuple[int, int]]]:
    """Copy 3 female + 3 male speakers of the tiny corpus into ``root/audio/<spk>/s1/0000k.<ext>``
    at mixed rates and formats; write ``root/meta/manifest.csv`` by hand (paths relative to
    root, so it needs --data-root) and ``root/lists/vox.txt`` (VoxCeleb format, names as
    ``<spk>/s1/0000k.<ext>``, path suffixes). Returns (manifest, list, {gender: (targets, nontargets)})."""
    by_gender: dict[str, list[str]] = {}
    for u in tiny_corpus:
        spk = by_gender.setdefault(u.gender, [])
        if u.speaker not in spk and len(spk) < SPEAKERS_PER_GENDER:
            spk.append(u.speaker)
    rows = ["path,speaker,gender,channel"]
    names: dict[str, list[str]] = {}
    k = 0
    for gender, speakers in sorted(by_gender.items()):
        for spk in speakers:
            utts = [u for u in tiny_corpus if u.speaker == spk][:UTTS_PER_SPEAKER]
            for j, u in enumerate(utts):
                data, sample_rate_hz = audio.decode(tiny_corpus.resolve(u))
                rate_out, ext = RATES[k % len(RATES)], EXTS[k % len(EXTS)]
                k += 1
                rel = f"{spk}/s1/{j:05d}.{ext}"
                dest = root / "audio" / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                sf.write(dest, audio.resample(data[:, 0], sample_rate_hz, rate_out), rate_out)
                rows.append(f"audio/{rel},{spk},{gender},{'phone' if j % 2 else 'headset'}")
                names.setdefault(spk, []).append(rel)
    manifest = root / "meta" / "manifest.csv"
    manifest.parent.mkdir()
    manifest.write_text("\n".join(rows) + "\n")
    lines, counts = [], {}
    for gender, speakers in sorted(by_gender.items()):
        n_t = n_n = 0
        for spk in speakers:
            for a, b in itertools.combinations(names[spk], 2):
                lines.append(f"1 {a} {b}")
                n_t += 1
        for s1, s2 in itertools.combinations(speakers, 2):
            # impostor pairs never share a sentence (utterance j of one speaker, j + 1 of the other)
            for a, b in zip(names[s1], names[s2][1:] + names[s2][:1], strict=True):
                lines.append(f"0 {a} {b}")
                n_n += 1
        counts[gender] = (n_t, n_n)
    trial_list = root / "lists" / "vox.txt"
    trial_list.parent.mkdir()
    trial_list.write_text("\n".join(lines) + "\n")
    return manifest, trial_list, counts


@pytest.fixture(scope="module")
def own(tmp_path_factory, tiny_corpus):
    tmp = tmp_path_factory.mktemp("own")
    root = tmp / "my corpus"
    manifest, trial_list, counts = build_corpus(tiny_corpus, root)
    exp = tiny_experiment(tmp)
    args = [
        "run",
        str(exp),
        "--manifest",
        str(manifest),
        "--data-root",
        str(root),
        "--trials",
        str(trial_list),
        "--encoders",
        "mfcc-stats",
        "--out",
        str(tmp / "results"),
        "--quiet",
    ]
    res = cli.invoke(app, args)
    assert res.exit_code == 0, res.output
    run_dir = Path(res.output.split("results: ")[1].splitlines()[0].strip()).parent
    return {"tmp": tmp, "root": root, "manifest": manifest, "list": trial_list, "counts": counts, "args": args} | {
        "run_dir": run_dir,
        "exp": exp,
    }


def test_rows_count_exactly_the_listed_trials(own) -> None:
    res = pd.read_csv(own["run_dir"] / "results.csv")
    assert len(res) == 4 and set(res.cell) == {
        "gender=female,noise=clean",
        "gender=female,noise=n10",
        "gender=male,noise=clean",
        "gender=male,noise=n10",
    }
    for row in res.itertuples():
        n_t, n_n = own["counts"][row.level_a]
        assert (row.n_target, row.n_nontarget, row.n_failed) == (n_t, n_n, 0)
        assert row.n_speakers == SPEAKERS_PER_GENDER and row.dataset == "manifest"
    listed = sum(sum(c) for c in own["counts"].values())
    info = json.loads((own["run_dir"] / "trials.json").read_text())
    assert info["source"] == "file" and info["format"] == "voxceleb" and info["n_trials"] == listed
    assert info["file_sha256"] == hashlib.sha256(own["list"].read_bytes()).hexdigest()
    assert info["matched_by"] == {"id": 0, "path": 0, "suffix": 18} and info["n_excluded"] == 0
    assert res.trials_sha256.unique().tolist() == [info["sha256"]]
    run = json.loads((own["run_dir"] / "run.json").read_text())
    assert run["experiment"]["trials"]["list"] == str(own["list"].resolve())
    assert run["corpus"]["root"] == str(own["root"])
    # every source rate was resampled to 16 kHz by the front end
    trials = pd.read_parquet(own["run_dir"] / "trials.parquet")
    assert trials.enrol_name.str.endswith((".wav", ".flac", ".ogg", ".mp3")).all()


@pytest.mark.parametrize("fmt", ["wespeaker", "kaldi", "csv"])
def test_exported_scores_reproduce_each_row_exactly(own, fmt: str) -> None:
    out = own["tmp"] / f"export-{fmt}"
    res = cli.invoke(app, ["export", str(own["run_dir"]), "--format", fmt, "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert res.output.startswith(
        f"4 score file(s), {2 * sum(sum(c) for c in own['counts'].values())} trials (0 dropped)"
    )
    results = pd.read_csv(own["run_dir"] / "results.csv")
    suffix = {"wespeaker": ".score", "kaldi": ".scores", "csv": ".csv"}[fmt]
    for row in results.itertuples():
        path = out / readable_slug(row.model) / f"{readable_slug(row.cell)}{suffix}"
        got = cli.invoke(app, ["scores", "metrics", str(path), "--json"])
        assert got.exit_code == 0, got.output
        m = json.loads(got.output)
        assert (m["eer"], m["min_dcf"], m["eer_legacy"], m["auc"]) == (row.eer, row.min_dcf, row.eer_legacy, row.auc)
        assert (m["n_target"], m["n_nontarget"]) == (row.n_target, row.n_nontarget)
    sample = out / readable_slug("mfcc-stats") / f"{readable_slug('gender=female,noise=clean')}{suffix}"
    first = sample.read_text().splitlines()[1 if fmt == "csv" else 0]
    enrol_test = first.split(",")[2:4] if fmt == "csv" else first.split()[:2]
    # names as the user's list wrote them: the first trial of the list
    assert " ".join(enrol_test) == " ".join(own["list"].read_text().splitlines()[0].split()[1:])
    if fmt == "kaldi":
        trials_file = sample.with_name(sample.name.removesuffix(".scores") + ".trials")
        assert [ln.split()[2] for ln in trials_file.read_text().splitlines()] == [
            ln.split()[3] for ln in sample.read_text().splitlines()
        ]


def test_exported_embeddings_rebuild_the_scores(own) -> None:
    out = own["tmp"] / "export-emb"
    res = cli.invoke(app, ["export", str(own["run_dir"]), "--out", str(out), "--embeddings"])
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "export.json").read_text())
    assert {e["chain"] for e in summary["embeddings"]} == {"clean", "noise(kind=gaussian,snr_db=10.0)"}
    assert all(e["n_missing"] == 0 for e in summary["embeddings"])
    vec = {}
    for e in summary["embeddings"]:
        with np.load(out / e["file"]) as z:
            assert str(z["encoder"]) == "mfcc-stats" and z["vectors"].dtype == np.float32
            assert np.allclose(np.linalg.norm(z["vectors"], axis=1), 1.0, atol=1e-5)
            vec[e["chain"]] = dict(zip(z["ids"].tolist(), z["vectors"], strict=True))
    trials = pd.read_parquet(own["run_dir"] / "trials.parquet").set_index("trial_id")
    for cell, test_chain in (
        ("gender=male,noise=clean", "clean"),
        ("gender=male,noise=n10", "noise(kind=gaussian,snr_db=10.0)"),
    ):
        scores = pd.read_parquet(own["run_dir"] / "scores" / slug("mfcc-stats") / f"{slug(cell)}.parquet")
        sub = trials.loc[scores.trial_id]
        # laid out as the runner scores a cell (one row per distinct utterance), the same
        # float32 products give the same bytes; other layouts differ in summation order only
        ue, ut = np.unique(sub.enrol), np.unique(sub.test)
        E = np.stack([vec["clean"][u] for u in ue])
        T = np.stack([vec[test_chain][u] for u in ut])
        e_idx, t_idx = np.searchsorted(ue, sub.enrol), np.searchsorted(ut, sub.test)
        assert np.array_equal(cosine_scores(E, T, e_idx, t_idx), scores.score.to_numpy())
        # an independent float64 cosine agrees to float32 precision
        ref = np.einsum("ij,ij->i", E[e_idx].astype(np.float64), T[t_idx].astype(np.float64))
        assert np.allclose(ref, scores.score.to_numpy(), atol=1e-6)


def test_run_id_follows_the_list_and_the_manifest(own) -> None:
    tmp = own["tmp"]
    shorter = tmp / "shorter.txt"
    lines = own["list"].read_text().splitlines()
    shorter.write_text("\n".join(lines[1:]) + "\n")
    args = list(own["args"])
    args[args.index("--trials") + 1] = str(shorter)
    res = cli.invoke(app, args)
    assert res.exit_code == 0, res.output
    other = Path(res.output.split("results: ")[1].splitlines()[0].strip()).parent
    assert other != own["run_dir"] and "embedded 0," in res.output
    rows = pd.read_csv(other / "results.csv")
    assert rows[rows.level_a == "female"].n_target.unique().tolist() == [own["counts"]["female"][0] - 1]
    edited = own["manifest"].with_name("edited.csv")
    edited.write_text(own["manifest"].read_text().replace("headset", "desk"))
    args = list(own["args"])
    args[args.index("--manifest") + 1] = str(edited)
    res = cli.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert Path(res.output.split("results: ")[1].splitlines()[0].strip()).parent not in (own["run_dir"], other)


def test_yaml_equivalent_scores_the_same_trials(own) -> None:
    import yaml

    exp = tiny_experiment(
        own["root"],
        name="T02",
        corpus={"manifest": "meta/manifest.csv", "root": str(own["root"])},
        trials={"list": "lists/vox.txt", "format": "voxceleb"},
    )
    res = cli.invoke(
        app, ["run", str(exp), "--encoders", "mfcc-stats", "--out", str(own["tmp"] / "yaml-results"), "--quiet"]
    )
    assert res.exit_code == 0, res.output
    run_dir = Path(res.output.split("results: ")[1].splitlines()[0].strip()).parent
    a = pd.read_csv(run_dir / "results.csv")
    b = pd.read_csv(own["run_dir"] / "results.csv")
    assert a.trials_sha256.tolist() == b.trials_sha256.tolist()
    assert a.eer.tolist() == b.eer.tolist() and a.min_dcf.tolist() == b.min_dcf.tolist()
    assert yaml.safe_load(exp.read_text())["trials"] == {"list": "lists/vox.txt", "format": "voxceleb"}


def test_dropped_trials_are_left_out_of_exports_and_counted(own) -> None:
    tmp = own["tmp"]
    broken = own["root"] / "audio" / "fx" / "s1" / "00000.wav"
    broken.parent.mkdir(parents=True)
    broken.write_bytes(b"RIFF not really a wave file")
    manifest = own["manifest"].with_name("with-broken.csv")
    manifest.write_text(own["manifest"].read_text() + "audio/fx/s1/00000.wav,fx,female,headset\n")
    female = next(ln.split()[1] for ln in own["list"].read_text().splitlines())
    trial_list = own["list"].with_name("with-broken.txt")
    trial_list.write_text(own["list"].read_text() + f"0 fx/s1/00000.wav {female}\n")
    args = list(own["args"])
    args[args.index("--manifest") + 1] = str(manifest)
    args[args.index("--trials") + 1] = str(trial_list)
    res = cli.invoke(app, [*args, "--max-failure-share", "0.5"])
    assert res.exit_code == 0, res.output
    run_dir = Path(res.output.split("results: ")[1].splitlines()[0].strip()).parent
    rows = pd.read_csv(run_dir / "results.csv")
    fem = rows[rows.level_a == "female"]
    assert fem.n_failed.tolist() == [1, 1] and fem.n_dropped_trials.tolist() == [1, 1]
    assert fem.n_nontarget.tolist() == [own["counts"]["female"][1]] * 2
    out = tmp / "export-dropped"
    res = cli.invoke(app, ["export", str(run_dir), "--out", str(out)])
    assert res.exit_code == 0, res.output
    files = {(f["cell"]): f for f in json.loads((out / "export.json").read_text())["files"]}
    assert files["gender=female,noise=clean"]["n_dropped"] == 1 and files["gender=male,noise=clean"]["n_dropped"] == 0
    for row in rows.itertuples():
        path = out / files[row.cell]["file"]
        assert "fx/s1/00000.wav" not in path.read_text()
        m = json.loads(cli.invoke(app, ["scores", "metrics", str(path), "--json"]).output)
        assert (m["eer"], m["min_dcf"], m["n_nontarget"]) == (row.eer, row.min_dcf, row.n_nontarget)


def test_bad_inputs_stop_the_run_with_one_line_and_no_output(own, tmp_path: Path) -> None:
    out = tmp_path / "results"
    bad_list = tmp_path / "bad.txt"
    bad_list.write_text("1 nobody/s1/00000.wav " + own["list"].read_text().split()[2] + "\n")
    args = list(own["args"])
    args[args.index("--out") + 1] = str(out)
    args[args.index("--trials") + 1] = str(bad_list)
    res = cli.invoke(app, args)
    assert res.exit_code == 1
    assert res.output == (
        f"error: trial list {bad_list}: 1 of 2 utterance name(s) match no entry of manifest 'manifest' "
        "(18 utterances) by id, relative path or path suffix; first: 'nobody/s1/00000.wav' (line 1)\n"
    )
    args = list(own["args"])
    args[args.index("--out") + 1] = str(out)
    args[args.index("--data-root") + 1] = str(tmp_path)
    res = cli.invoke(app, args)
    assert res.exit_code == 1 and len(res.output.strip().splitlines()) == 1
    assert res.output.startswith(
        f"error: {own['manifest']}: 18 of 18 audio path(s) cannot be read (relative paths resolve against {tmp_path}); "
        "first: line 2 'audio/"
    )
    res = cli.invoke(app, [*own["args"][:-3], "--out", str(out), "--max-trials", "10", "--quiet"])
    assert res.exit_code == 1
    assert (
        res.output == "error: --max-trials cannot be combined with an external trial list (the list is scored whole)\n"
    )
    assert not out.exists()


def test_export_errors(own, tmp_path: Path) -> None:
    res = cli.invoke(app, ["export", str(tmp_path)])
    assert res.exit_code == 1
    assert res.output == (
        f"error: {tmp_path} is not a complete run directory: missing results.csv, trials.parquet, trials.json\n"
    )
    res = cli.invoke(app, ["export", str(own["run_dir"]), "--format", "nist"])
    assert res.exit_code == 2 and "'nist' is not one of" in res.output
    for cmd in ("export", "run"):
        assert cli.invoke(app, [cmd, "--help"]).exit_code == 0
