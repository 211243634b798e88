"""Every class of bad input the reliability issue names, through the CLI: the exact one-line
message, a non-zero exit, no traceback (unless --debug), and nothing already computed lost.

A finished run of a small experiment sits in ``env.out`` before any case runs; every refused
command is pointed at that same folder and must leave every byte of it as it was. Bad audio
inside a run is not refused but counted (failed, truncated, downmixed, resampled) in the rows.
"""

from __future__ import annotations

import copy
import errno
import fnmatch
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import soundfile as sf
import torch
import yaml
from conftest import tiny_experiment
from run_helpers import manifest_file, only_run_dir, outputs, run_args
from typer.testing import CliRunner

from interbias.cli import app
from interbias.utils import atomic
from interbias.utils.errors import ConfigError
from interbias.utils.paths import slug

SMALL = {"targets": 10, "min_speakers": 4}
runner = CliRunner()


@dataclass
class Env:
    tmp: Path
    manifest: Path  # manifest.csv of a copy of the tiny corpus (relative paths under audio/)
    exp: Path  # B01.yaml on that manifest
    out: Path  # holds one finished run of B01
    cache: Path

    def yaml_with(self, name: str, mutate: Callable[[dict], None]) -> Path:
        data = yaml.safe_load(self.exp.read_text())
        data = copy.deepcopy(data)
        data["name"] = name
        mutate(data)
        path = self.tmp / "cases" / f"{name}.yaml"
        path.parent.mkdir(exist_ok=True)
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        return path

    def rows(self) -> pd.DataFrame:
        return pd.read_csv(self.manifest)


@pytest.fixture(scope="module")
def env(tmp_path_factory, tiny_corpus) -> Env:
    tmp = tmp_path_factory.mktemp("bad")
    manifest = manifest_file(tiny_corpus, tmp / "data", copy_audio=True)
    exp = tiny_experiment(tmp, name="B01", corpus={"manifest": str(manifest)}, trials=SMALL)
    e = Env(tmp, manifest, exp, tmp / "out", tmp / "cache")
    done = runner.invoke(app, run_args(exp, e.out, e.cache))
    assert done.exit_code == 0, done.output
    return e


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _noise_level(chain: list) -> Callable[[dict], None]:
    def mutate(d: dict) -> None:
        d["factors"][1]["levels"]["bad"] = chain

    return mutate


# ---------------------------------------------------------------------------- the refusal table
# Each case: (args, exact stderr line) built from the environment and a fresh folder.


def yaml_syntax(env: Env, tmp: Path) -> tuple[list[str], str]:
    path = tmp / "B02.yaml"
    path.write_text(env.exp.read_text() + "extra: [unclosed\n")
    n = len(path.read_text().splitlines()) + 1
    return [path], f"B02.yaml:{n}: not valid YAML (expected ',' or ']', but got '<stream end>')"


def yaml_unknown_key(env: Env, tmp: Path) -> tuple[list[str], str]:
    path = env.yaml_with("B03", lambda d: d.update(sede=7))
    return [path], (
        "B03.yaml: unknown key 'sede' at top level; valid: attacks, calibration, corpus, countermeasures, "
        "description, factors, fairness, frontend, name, notes, operating_points, population, question, requires, "
        "scoring, seed, speaker_attributes, spoofing, title, tracks, trials, use, utterance_attributes, variants"
    )


def yaml_unknown_operator(env: Env, tmp: Path) -> tuple[list[str], str]:
    path = env.yaml_with("B04", _noise_level([{"op": "nois", "snr_db": 5}]))
    return [path], (
        "B04.yaml: factors[1] (noise).levels.bad[0]: unknown operator 'nois'; valid: agc, clip, codec, crop, "
        "echo, filter, gain, identity, noise, packet_loss, pitch, resample, reverb, time_scale"
    )


def yaml_snr_not_a_number(env: Env, tmp: Path) -> tuple[list[str], str]:
    path = env.yaml_with("B05", _noise_level([{"op": "noise", "kind": "gaussian", "snr_db": "loud"}]))
    return [path], "B05.yaml: factors[1] (noise).levels.bad[0]: noise.snr_db: 'loud' is not a number"


def yaml_snr_infinite(env: Env, tmp: Path) -> tuple[list[str], str]:
    path = env.yaml_with("B06", _noise_level([{"op": "noise", "kind": "gaussian", "snr_db": float("inf")}]))
    return [path], "B06.yaml: factors[1] (noise).levels.bad[0]: noise.snr_db: inf is not a finite number"


def yaml_negative_loss_rate(env: Env, tmp: Path) -> tuple[list[str], str]:
    path = env.yaml_with("B07", _noise_level([{"op": "packet_loss", "rate": -0.1}]))
    return [path], "B07.yaml: factors[1] (noise).levels.bad[0]: packet_loss.rate: -0.1 is outside [0, 1)"


def yaml_reference_not_a_level(env: Env, tmp: Path) -> tuple[list[str], str]:
    path = env.yaml_with("B08", lambda d: d["factors"][1].update(reference="quiet"))
    return [path], "B08.yaml: factors[1] (noise).reference: 'quiet' is not a level; valid: clean, n10"


def corpus_root_missing(env: Env, tmp: Path) -> tuple[list[str], str]:
    root = tmp / "nowhere"
    return ["E01", "--corpus-root", root], (
        f"E01 cannot run here: corpus 'ravdess' not found at {root} (pass --corpus-root DIR or set "
        "INTERBIAS_CORPORA). It needs: RAVDESS speech release (Actor_01..Actor_24/03-01-EE-II-SS-RR-AA.wav). "
        "See docs/guide/corpora.md. Runs here: interbias run E01 --corpus synthetic"
    )


def corpus_layout_mismatch(env: Env, tmp: Path) -> tuple[list[str], str]:
    (tmp / "root" / "junk").mkdir(parents=True)
    (tmp / "root" / "junk" / "a.wav").write_bytes(b"RIFF")
    return ["E01", "--corpus-root", tmp / "root"], (
        f"ravdess: {tmp / 'root'} does not look like ravdess: expected Actor_01 … Actor_24 folders of "
        "MM-VV-EE-II-SS-RR-AA.wav files (the Audio_Speech_Actors_01-24 release); found junk/"
    )


def manifest_missing(env: Env, tmp: Path) -> tuple[list[str], str]:
    return [env.exp, "--manifest", tmp / "gone.csv"], (  # what the experiment needs of a manifest follows
        f"B01: manifest {tmp / 'gone.csv'} does not exist; needs: a manifest with gender (female, male); "
        "≥ 4 speakers per gender, each with ≥ 2 utterances"
    )


def audio_empty_file(env: Env, tmp: Path) -> tuple[list[str], str]:
    rows = env.rows()
    rows["path"] = [str(env.manifest.parent / p) for p in rows.path]
    (tmp / "empty.flac").write_bytes(b"")
    rows.loc[4, "path"] = "empty.flac"
    rows.to_csv(tmp / "m.csv", index=False)
    return [env.exp, "--manifest", tmp / "m.csv"], (
        f"{tmp / 'm.csv'}: 1 of {len(rows)} audio path(s) cannot be read (relative paths resolve against {tmp}); "
        "first: line 6 'empty.flac' (empty file)"
    )


def stratum_too_few_speakers(env: Env, tmp: Path) -> tuple[list[str], str]:
    path = env.yaml_with("B09", lambda d: d["trials"].update(min_speakers=50))
    return [path], (  # the experiment's needs against the manifest, before any draw (interbias.trials.fit)
        "B09 needs ≥ 50 speakers per gender; manifest.csv has 6 female, 6 male: record more speakers, or copy the "
        "experiment file and lower trials.min_speakers"
    )


def trial_list_unknown_utterance(env: Env, tmp: Path) -> tuple[list[str], str]:
    ids = env.rows().id
    (tmp / "trials.txt").write_text(f"1 {ids[0]} {ids[1]}\n0 {ids[0]} nobody/neutral/s09\n")
    return [env.exp, "--trials", tmp / "trials.txt"], (
        f"trial list {tmp / 'trials.txt'}: 1 of 3 utterance name(s) match no entry of manifest 'manifest' "
        f"({len(ids)} utterances) by id, relative path or path suffix; first: 'nobody/neutral/s09' (line 2)"
    )


def trial_list_ambiguous_format(env: Env, tmp: Path) -> tuple[list[str], str]:
    ids = env.rows().id
    (tmp / "trials.txt").write_text(f"1 {ids[0]} target\n0 {ids[1]} nontarget\n")
    return [env.exp, "--trials", tmp / "trials.txt"], (
        f"trial list {tmp / 'trials.txt'}: every line fits both VoxCeleb ('1|0 enrol test') and Kaldi/WeSpeaker "
        "('enrol test target|nontarget') format; give the format (--trials-format or trials.format)"
    )


CKPT_TAIL = "(expected [config.yaml + avg_model.pt] or [model.onnx]); see docs/guide/encoders.md"


def _wespeaker_folder(folder: Path, embed_dim: int = 256) -> Path:
    from interbias.encoders.wespeaker_models import build

    folder.mkdir(parents=True, exist_ok=True)
    torch.save(build("ResNet34", {"feat_dim": 80, "embed_dim": 256}, {}).state_dict(), folder / "avg_model.pt")
    config = {"model": "ResNet34", "model_args": {"feat_dim": 80, "embed_dim": embed_dim}}
    (folder / "config.yaml").write_text(yaml.safe_dump(config))
    return folder


def _embed_args(env: Env, folder: Path) -> list:
    return [
        "encoders",
        "embed",
        env.manifest.parent / env.rows().path[0],
        "--encoder",
        "ResNet34",
        "--model-dir",
        folder,
    ]


def checkpoint_missing(env: Env, tmp: Path) -> tuple[list[str], str]:
    return _embed_args(env, tmp), (
        f"unavailable encoder(s): ResNet34: wespeaker: missing config.yaml, avg_model.pt; onnx: missing model.onnx "
        f"in {tmp} {CKPT_TAIL}"
    )


def checkpoint_corrupt(env: Env, tmp: Path) -> tuple[list[str], str]:
    folder = _wespeaker_folder(tmp / "ck")
    (folder / "avg_model.pt").write_bytes(b"PK\x03\x04 cut short")
    return _embed_args(env, folder), (
        "unavailable encoder(s): ResNet34: cannot load avg_model.pt (RuntimeError: PytorchStreamReader failed "
        f"reading zip archive: not a ZIP archive) in {folder} {CKPT_TAIL}"
    )


def checkpoint_wrong_shapes(env: Env, tmp: Path) -> tuple[list[str], str]:
    folder = _wespeaker_folder(tmp / "ck", embed_dim=192)  # weights of a 256-d model, config of a 192-d one
    return _embed_args(env, folder), (
        "unavailable encoder(s): ResNet34: avg_model.pt does not match ResNet34 (Error(s) in loading state_dict "
        "for ResNet: size mismatch for seg_1.weight: copying a param with shape torch.Size([256, 5120]) from "
        "checkpoint, the shape in current model is torch.Size([192, 5120]). (+1 more)) "
        f"in {folder} {CKPT_TAIL}"
    )


def analyze_missing_columns(env: Env, tmp: Path) -> tuple[list[str], str]:
    (tmp / "r.csv").write_text("experiment,model\nX,m\n")
    return ["analyze", tmp / "r.csv"], (
        f"{tmp / 'r.csv'}: missing required column(s) factor_a, level_a, ref_a, eer; found: experiment, model"
    )


def analyze_non_numeric(env: Env, tmp: Path) -> tuple[list[str], str]:
    head = "experiment,model,factor_a,level_a,ref_a,factor_b,level_b,ref_b,eer\n"
    (tmp / "r.csv").write_text(head + "X,m,A,a,a,B,b,b,0.1\nX,m,A,a1,a,B,b,b,n/a%\nX,m,A,a,a,B,b1,b,high\n")
    return [
        "analyze",
        tmp / "r.csv",
    ], f"{tmp / 'r.csv'}: column 'eer' has 2 non-numeric value(s); first at line(s) 3, 4"


CASES = [
    yaml_syntax,
    yaml_unknown_key,
    yaml_unknown_operator,
    yaml_snr_not_a_number,
    yaml_snr_infinite,
    yaml_negative_loss_rate,
    yaml_reference_not_a_level,
    corpus_root_missing,
    corpus_layout_mismatch,
    manifest_missing,
    audio_empty_file,
    stratum_too_few_speakers,
    trial_list_unknown_utterance,
    trial_list_ambiguous_format,
    checkpoint_missing,
    checkpoint_corrupt,
    checkpoint_wrong_shapes,
    analyze_missing_columns,
    analyze_non_numeric,
]


def _full_args(env: Env, args: list) -> list[str]:
    args = [str(a) for a in args]
    if args[0] in ("encoders", "analyze"):
        return args
    return ["run", *args, "--encoders", "mfcc-stats", "--out", str(env.out), "--cache-dir", str(env.cache), "-q"]


@pytest.mark.parametrize("case", CASES, ids=[c.__name__ for c in CASES])
def test_refused_with_one_exact_line_and_nothing_lost(case, env: Env, tmp_path: Path) -> None:
    args, message = case(env, tmp_path)
    before = _snapshot(env.out)
    res = runner.invoke(app, _full_args(env, args))
    assert res.exit_code == 1
    assert res.output == f"error: {message}\n"
    assert "Traceback" not in res.output and isinstance(res.exception, SystemExit)
    assert _snapshot(env.out) == before


def test_debug_shows_the_error_itself(env: Env, tmp_path: Path) -> None:
    args, message = yaml_unknown_operator(env, tmp_path)
    res = runner.invoke(app, ["--debug", *_full_args(env, args)])
    assert res.exit_code == 1 and isinstance(res.exception, ConfigError) and str(res.exception) == message


# ------------------------------------------------------------------- bad audio inside a run


def _tone(seconds: float, sample_rate_hz: int) -> np.ndarray:
    t = np.arange(int(seconds * sample_rate_hz)) / sample_rate_hz
    return (0.3 * np.sin(2 * np.pi * 220 * t) * (1 + 0.5 * np.sin(2 * np.pi * 3 * t))).astype(np.float32)


def _write(path: Path, kind: str) -> None:
    """Replace ``path`` (keeping its name) with audio of one bad kind."""
    if kind == "corrupt":
        path.write_bytes(b"\x00garbage, not audio" * 64)
    elif kind == "short":
        sf.write(path, _tone(0.5, 16000), 16000, format="FLAC")
    elif kind == "nan":
        x = _tone(2.0, 16000)
        x[100:103] = np.nan
        x[200] = np.inf
        sf.write(path, x, 16000, format="WAV", subtype="FLOAT")
    elif kind == "long":
        sf.write(path, _tone(12.0, 16000), 16000, format="FLAC")
    elif kind == "stereo":
        x = _tone(2.0, 16000)
        sf.write(path, np.stack([x, 0.5 * x], axis=1), 16000, format="FLAC")
    else:
        sample_rate_hz = int(kind)
        sf.write(path, _tone(2.0, sample_rate_hz), sample_rate_hz, format="FLAC")


FAILING = {"corrupt", "short", "nan"}
RATES = {"8000", "22050", "44100", "48000"}


def test_bad_audio_is_counted_resampled_and_recorded_never_lost(env: Env, tmp_path: Path) -> None:
    """Female utterances get corrupt, too-short and NaN/Inf audio; male ones too-long, stereo and
    8/22.05/44.1/48 kHz audio (same manifest rows, new bytes: a new run directory beside the
    first, which stays as it was). The default failure limit refuses the damaged cells in one
    line and keeps the others; a laxer limit counts the failures."""
    folder = tmp_path / "data"
    shutil.copytree(env.manifest.parent, folder)
    exp = tiny_experiment(tmp_path, name="B01", corpus={"manifest": str(folder / "manifest.csv")}, trials=SMALL)
    out, cache = tmp_path / "out", tmp_path / "cache"
    shutil.copytree(env.cache, cache)  # embeddings of the good audio
    good = runner.invoke(app, run_args(exp, out, cache))
    assert good.exit_code == 0 and "embedded 0, " in good.output, good.output
    run_dir = only_run_dir(out)
    trials = pd.read_parquet(run_dir / "trials.parquet")
    rows = pd.read_csv(folder / "manifest.csv").set_index("id")
    used = {s: sorted(set(t.enrol) | set(t.test)) for s, t in trials.groupby("stratum")}
    kinds = {}
    for uid, kind in zip(used["gender=female"], ["corrupt", "short", "nan"], strict=False):
        kinds[uid] = kind
    for uid, kind in zip(used["gender=male"], ["long", "stereo", *sorted(RATES)], strict=False):
        kinds[uid] = kind
    for uid, kind in kinds.items():
        _write(folder / rows.path[uid], kind)
    path = {uid: folder / rows.path[uid] for uid in kinds}
    first_run = run_dir, _snapshot(run_dir)

    strict = runner.invoke(app, run_args(exp, out, cache))
    assert strict.exit_code == 1
    assert _snapshot(first_run[0]) == first_run[1]  # the results of the earlier audio are untouched
    (run_dir,) = [p for p in out.iterdir() if p.is_dir() and p != first_run[0]]
    female = trials[trials.stratum == "gender=female"]
    bad = {u for u, k in kinds.items() if k in FAILING}
    n_failed = len(set(female.enrol) & bad) + len(set(female.test) & bad)
    n_dropped = int((female.enrol.isin(bad) | female.test.isin(bad)).sum())
    # the runner reports failed enrolment utterances first, each side in id order
    first = min(bad & set(female.enrol)) if bad & set(female.enrol) else min(bad & set(female.test))
    errors = {
        "corrupt": f"cannot decode audio (Error opening '{path_of(path, kinds, 'corrupt')}': Format not recognised.)",
        "short": "0.500 s is shorter than the minimum 1 s",
        "nan": "4 non-finite (NaN/Inf) sample(s)",
    }
    first_error = f"{path[first]}: {errors[kinds[first]]}"
    first_cell = "gender=female,noise=clean"
    assert strict.output.splitlines()[-1] == (
        f"error: 2 cells errored (all listed in run.json errored_cells); first: cell {first_cell} / mfcc-stats: "
        f"{n_failed} utterance(s) failed, dropping {n_dropped} of {len(female)} trials "
        f"({n_dropped / len(female):.1%} > the 1.0% limit); first: {first_error}"
    )
    info = json.loads((run_dir / "run.json").read_text())
    assert len(info["errored_cells"]) == 2 and info["counts"]["cells_complete"] == 2  # the male cells
    res = pd.read_csv(run_dir / "results.csv")
    assert list(res.stratum) == ["gender=male"] * 2  # kept, with what the front end did
    male = trials[trials.stratum == "gender=male"]
    up, down = {r for r in RATES if int(r) < 16000}, {r for r in RATES if int(r) > 16000}
    counted = (
        ({"long"}, "n_truncated"),
        ({"stereo"}, "n_downmixed"),
        (RATES, "n_resampled"),
        (up, "n_upsampled"),
        (down, "n_downsampled"),
    )
    for kind_set, column in counted:
        ids = {u for u, k in kinds.items() if k in kind_set}
        expected = len(set(male.enrol) & ids) + len(set(male.test) & ids)
        per_cell = dict(zip(res.cell, res[column], strict=True))
        # enrolment is clean in both cells; the noisy cell's test side is a second chain
        assert per_cell == {"gender=male,noise=clean": expected, "gender=male,noise=n10": expected}, column
        assert expected >= len(ids) >= 1
    for rates, column in ((up, "upsampled_from"), (down, "downsampled_from")):  # the source rates used
        used_rates = {k for u, k in kinds.items() if k in rates and (u in set(male.enrol) or u in set(male.test))}
        assert set(res[column].astype(str)) == {";".join(sorted(used_rates, key=int))}, column
    assert (res.n_failed == 0).all()

    lax = runner.invoke(app, [*run_args(exp, out, cache), "--max-failure-share", "0.9"])
    assert lax.exit_code == 0, lax.output
    assert sorted(p for p in out.iterdir() if p.is_dir()) == sorted([first_run[0], run_dir])
    assert "embedded 0, " in lax.output and "cells reused 2" in lax.output  # nothing computed twice
    res = pd.read_csv(run_dir / "results.csv")
    fem = res[res.stratum == "gender=female"]
    assert len(res) == 4 and (fem.n_failed == n_failed).all() and (fem.n_dropped_trials == n_dropped).all()
    assert (fem.n_target + fem.n_nontarget == len(female) - n_dropped).all()
    info = json.loads((run_dir / "run.json").read_text())
    recorded = {(f["cell"], f["utterance"], f["side"]): f["error"] for f in info["failures"]}
    for uid in bad:
        message = f"{path[uid]}: {errors[kinds[uid]]}"
        for side in ("enrol", "test"):
            if uid in set(female[side]):
                assert recorded[("gender=female,noise=clean", uid, side)] == message


def path_of(path: dict[str, Path], kinds: dict[str, str], kind: str) -> Path:
    return next(path[u] for u, k in kinds.items() if k == kind)


# ---------------------------------------------------------------------------------- disk full


def test_a_full_disk_stops_the_run_in_one_line_and_a_rerun_resumes(env: Env, tmp_path: Path, monkeypatch) -> None:
    out, cache = tmp_path / "out", tmp_path / "cache"
    shutil.copytree(env.cache, cache)  # embeddings are ready; the disk fills while scores are written
    reached = atomic.crashpoints.reached
    hits = []

    def fill_up(point: str) -> None:
        if fnmatch.fnmatchcase(point, "write:*.parquet"):
            hits.append(point)
            if len(hits) == 5:  # trials.parquet, operations.parquet, then the third cell's scores
                raise OSError(errno.ENOSPC, "No space left on device")
        reached(point)

    monkeypatch.setattr(atomic.crashpoints, "reached", fill_up)
    full = runner.invoke(app, run_args(env.exp, out, cache))
    run_dir = only_run_dir(out)
    ref = pd.read_csv(only_run_dir(env.out) / "results.csv")
    target = run_dir / "scores" / slug("mfcc-stats") / f"{slug(ref.cell[2])}.parquet"
    assert full.exit_code == 1
    assert full.output == (
        f"error: cannot write {target}: No space left on device; 2 finished cell(s) are kept in {run_dir}: "
        "rerun the same command to resume\n"
    )
    assert not target.exists() and not list(run_dir.rglob(".*.tmp"))  # no torn file, no temporary left
    monkeypatch.setattr(atomic.crashpoints, "reached", reached)  # space freed
    again = runner.invoke(app, run_args(env.exp, out, cache))
    assert again.exit_code == 0, again.output
    assert "embedded 0, cached" in again.output and "cells reused 2" in again.output
    assert outputs(run_dir) == outputs(only_run_dir(env.out))
