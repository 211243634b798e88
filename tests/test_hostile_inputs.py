"""Issue 14 through the CLI: hostile inputs get one ``error:`` line and exit 1 (never a
traceback), messages say what is wrong, silent audio is a counted failure, and generated
garbage in every user file a command reads finds no traceback.

The runner-side part of the issue is at the end: a failed rerun leaves the finished run
directory byte for byte, new audio bytes make a new run directory, and bootstrap intervals work
on dev-split and spoof runs.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import soundfile as sf
from conftest import tiny_experiment
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from run_helpers import manifest_file, only_run_dir, run_args
from typer.testing import CliRunner

from interbias.cli import app

SMALL = {"targets": 10, "min_speakers": 4}
runner = CliRunner()
GARBAGE = settings(
    max_examples=12, derandomize=True, deadline=None, database=None, suppress_health_check=list(HealthCheck)
)


@pytest.fixture(scope="module")
def done(tmp_path_factory, tiny_corpus) -> dict[str, Path]:
    """A finished mfcc-stats run of a tiny gender × noise experiment on a copy of the audio."""
    tmp = tmp_path_factory.mktemp("hostile")
    manifest = manifest_file(tiny_corpus, tmp / "data", copy_audio=True)
    exp = tiny_experiment(tmp, name="H01", corpus={"manifest": str(manifest)}, trials=SMALL)
    out, cache = tmp / "out", tmp / "cache"
    res = runner.invoke(app, run_args(exp, out, cache))
    assert res.exit_code == 0, res.output
    return {"tmp": tmp, "manifest": manifest, "exp": exp, "out": out, "cache": cache}


def _copy_of(done: dict[str, Path], tmp_path: Path) -> tuple[Path, Path, Path, Path]:
    """(data folder, experiment, out, cache): a copy of the finished run's audio and manifest
    (so files can be replaced), its experiment on that copy, an empty out and a copy of the cache."""
    folder = tmp_path / "data"
    shutil.copytree(done["manifest"].parent, folder)
    exp = tiny_experiment(tmp_path, name="H01", corpus={"manifest": str(folder / "manifest.csv")}, trials=SMALL)
    out, cache = tmp_path / "out", tmp_path / "cache"
    shutil.copytree(done["cache"], cache)
    return folder, exp, out, cache


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _one_line(res, message: str | None = None) -> None:
    assert res.exit_code == 1, res.output
    assert isinstance(res.exception, SystemExit) and "Traceback" not in res.output
    lines = res.output.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.output
    if message is not None:
        assert lines[0] == f"error: {message}"


# ---- one line, exact message ----------------------------------------------------------------------


@pytest.mark.parametrize("value", ["", ",", " , ,"])
def test_encoders_naming_nothing_is_an_error(done, value: str, tmp_path: Path) -> None:
    res = runner.invoke(app, ["run", str(done["exp"]), "--encoders", value, "--out", str(tmp_path / "o")])
    _one_line(res, f"--encoders names no encoder ({value!r}); give comma-separated labels, e.g. CAM++,GE2E")
    assert not (tmp_path / "o").exists()


def test_an_absurd_front_end_rate_is_refused_before_any_run_directory(done, tmp_path: Path) -> None:
    exp = tiny_experiment(
        tmp_path, name="H02", corpus={"manifest": str(done["manifest"])}, frontend={"sample_rate_hz": 8_000_000_000}
    )
    res = runner.invoke(app, run_args(exp, tmp_path / "o", done["cache"]))
    _one_line(res, "H02.yaml: frontend.sample_rate_hz: 8000000000 Hz is outside 1000..384000 Hz")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("value", ["abc", "0", "-2", "1.5"])
def test_interbias_threads_not_a_positive_integer(done, value: str, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("INTERBIAS_THREADS", value)
    res = runner.invoke(app, run_args(done["exp"], tmp_path / "o", done["cache"]))
    _one_line(res, f"INTERBIAS_THREADS must be a positive integer (threads per process), got {value!r}")
    assert not (tmp_path / "o").exists()


def test_a_yaml_name_escaping_out_is_refused(done, tmp_path: Path) -> None:
    exp = tiny_experiment(tmp_path, name="../../escaped", corpus={"manifest": str(done["manifest"])})
    res = runner.invoke(app, run_args(exp, tmp_path / "o", done["cache"]))
    _one_line(res)
    assert "cannot name a run directory" in res.output
    assert not (tmp_path / "o").exists() and not (tmp_path.parent / "escaped").exists()


def test_a_cache_dir_that_is_a_file_and_a_foreign_sqlite_cache(done, tmp_path: Path) -> None:
    import sqlite3

    afile = tmp_path / "afile"
    afile.write_text("x")
    res = runner.invoke(app, run_args(done["exp"], tmp_path / "o", afile))
    _one_line(res, f"cache folder {afile}: {afile} exists and is not a folder")
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    db = sqlite3.connect(str(foreign / "embeddings.sqlite"))
    db.execute("CREATE TABLE notes (body TEXT)")
    db.commit()
    db.close()
    res = runner.invoke(app, run_args(done["exp"], tmp_path / "o2", foreign))
    _one_line(
        res,
        f"embedding cache {foreign / 'embeddings.sqlite'} is an SQLite file of something else (tables: notes), "
        "not an interbias embedding cache; point --cache-dir elsewhere",
    )


def test_metrics_ragged_latin1_duplicated_header_and_bom(tmp_path: Path) -> None:
    p = tmp_path / "s.csv"
    p.write_text("score,label\n0.5,1\n0.2,0,extra\n")
    _one_line(
        runner.invoke(app, ["scores", "metrics", str(p)]),
        f"{p}:3: 3 field(s), the header has 2 (a value holding a comma must be quoted)",
    )
    p.write_text("score,label\n0.5,1\n0.2\n")
    _one_line(
        runner.invoke(app, ["scores", "metrics", str(p)]),
        f"{p}:3: 1 field(s), the header has 2 (every row gives every column; an empty value is written as nothing "
        "between two commas)",
    )
    p.write_text("score,label,label\n0.5,1,0\n")
    _one_line(
        runner.invoke(app, ["scores", "metrics", str(p)]),
        f"{p}: column 'label' appears twice in the header (columns 2 and 3)",
    )
    t = tmp_path / "s.txt"
    t.write_bytes("é a 0.5 target\n".encode("latin-1"))
    _one_line(
        runner.invoke(app, ["scores", "metrics", str(t)]),
        f"{t}: scores file is not UTF-8 text (byte 0xe9 at offset 0); save it as UTF-8",
    )
    p.write_bytes(b"\xef\xbb\xbfscore,label\n0.9,1\n0.1,0\n0.8,1\n0.2,0\n")
    res = runner.invoke(app, ["scores", "metrics", str(p), "--json"])
    assert res.exit_code == 0 and json.loads(res.output)["eer"] == 0.0


@pytest.mark.parametrize("kind", ["fifo", "folder", "loop"])
def test_embed_says_what_a_path_is(kind: str, tmp_path: Path) -> None:
    p = tmp_path / "x.wav"
    if kind == "fifo":
        os.mkfifo(p)
        what = "is a FIFO (named pipe), not a file"
    elif kind == "folder":
        p.mkdir()
        what = "is a folder, not a file"
    else:
        os.symlink(tmp_path / "y.wav", p)
        os.symlink(p, tmp_path / "y.wav")
        what = "is a symbolic-link loop"
    _one_line(runner.invoke(app, ["encoders", "embed", str(p), "--encoder", "mfcc-stats"]), f"{p}: {what}")


def test_compare_and_analyze_count_a_duplicated_row_right(done, tmp_path: Path) -> None:
    results = only_run_dir(done["out"]) / "results.csv"
    frame = pd.read_csv(results, dtype=str, keep_default_na=False)
    doubled = pd.concat([frame, frame.iloc[[0]]], ignore_index=True)  # every row once, the first twice
    p = tmp_path / "dup.csv"
    doubled.to_csv(p, index=False)
    r = frame.iloc[0]
    _one_line(
        runner.invoke(app, ["runs", "compare", str(results), str(p)]),
        f"{p}: row {r['experiment']} / {r['cell']} / {r['model']} appears 2 times",
    )
    res = runner.invoke(app, ["analyze", str(p), "--out", str(tmp_path / "a"), "-q"])
    _one_line(res)
    assert "appears 2 times" in res.output


def test_silent_audio_is_a_counted_failure_with_its_reason(done, tmp_path: Path) -> None:
    folder, exp, out, cache = _copy_of(done, tmp_path)
    rows = pd.read_csv(folder / "manifest.csv").set_index("id")
    trials = pd.read_parquet(only_run_dir(done["out"]) / "trials.parquet")
    female = trials[trials.stratum == "gender=female"]
    zero, dc = sorted(set(female.enrol))[:2]
    sf.write(folder / rows.path[zero], np.zeros(32000, dtype=np.float32), 16000, format="FLAC")
    sf.write(folder / rows.path[dc], np.full(32000, 0.25, dtype=np.float32), 16000, format="FLAC")
    res = runner.invoke(app, [*run_args(exp, out, cache), "--max-failure-share", "0.9"])
    assert res.exit_code == 0, res.output
    run_dir = only_run_dir(out)
    info = json.loads((run_dir / "run.json").read_text())
    errors = {f["utterance"]: f["error"] for f in info["failures"]}
    assert errors[zero] == f"{folder / rows.path[zero]}: no signal (all samples are zero); nothing to embed"
    # FLAC stores 16-bit samples: 0.25 comes back as 8192/32768
    assert (
        errors[dc]
        == f"{folder / rows.path[dc]}: no signal (all samples hold the constant value 0.25); nothing to embed"
    )
    res_rows = pd.read_csv(run_dir / "results.csv")
    assert (res_rows[res_rows.stratum == "gender=female"].n_failed >= 2).all()


# ---- generated garbage through every command that reads a user file ------------------------------

_text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=200)
_csvish = st.lists(
    st.lists(
        st.sampled_from(["path", "speaker", "score", "label", "1", "0", "x", "", '"', "nan", "\ufeff", "a,b"]),
        max_size=5,
    ),
    max_size=6,
).map(lambda rows: "\n".join(",".join(r) for r in rows))
_garbage = st.one_of(st.binary(max_size=200), _text.map(str.encode), _csvish.map(str.encode))


def _check_garbage(res) -> None:
    assert "Traceback" not in res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    if res.exit_code != 0:
        _one_line(res)


#: Issue 28's inputs as seeds: one speaker spelled two ways (case, NBSP, NFD, a float id,
#: scientific notation, leading zeros), a file listed twice, a row one field short.
_ISSUE28_MANIFESTS = [
    b"path,speaker,gender\na.wav,spk01,f\nb.wav,SPK01,f\n",
    "path,speaker\na.wav,anna maria\nb.wav,anna\u00a0maria\n".encode(),
    "path,speaker\na.wav,jos\u00e9\nb.wav,jose\u0301\n".encode(),
    b"path,speaker\na.wav,1001\nb.wav,1001.0\nc.wav,1.001E+03\nd.wav,0042\ne.wav,42\n",
    b"id,path,speaker\nx,a.wav,s1\ny,./a.wav,s2\n",
    b"path,speaker,gender\na.wav,s1,f\nb.wav,s1\n",
]


@GARBAGE
@given(_garbage, st.sampled_from([".csv", ".jsonl"]))
@example(_ISSUE28_MANIFESTS[0], ".csv")
@example(_ISSUE28_MANIFESTS[1], ".csv")
@example(_ISSUE28_MANIFESTS[2], ".csv")
@example(_ISSUE28_MANIFESTS[3], ".csv")
@example(_ISSUE28_MANIFESTS[4], ".csv")
@example(_ISSUE28_MANIFESTS[5], ".csv")
@example(b"path,speaker,gender\na.wav,s1,female\nb.wav,s2,male\n", ".csv")  # issue 38: no id column
def test_garbage_manifests(tmp_path_factory, data: bytes, suffix: str) -> None:
    folder = tmp_path_factory.mktemp("g")
    p = folder / f"m{suffix}"
    p.write_bytes(data)
    _check_garbage(runner.invoke(app, ["data", "info", str(p)]))
    exp = tiny_experiment(folder, name="G9", corpus={"manifest": str(p)}, trials=SMALL)
    args = ["validate", str(exp), "--encoders", "mfcc-stats", "--cache-dir", str(folder / "c")]
    res = runner.invoke(app, args)  # one line per error, never a traceback (was: KeyError 'id')
    assert "Traceback" not in res.output and (res.exception is None or isinstance(res.exception, SystemExit))


@GARBAGE
@given(_garbage)
@example(b"e t 0.5 bonafide\ne t 0.1 FAKE\ne t nan spoof\n")  # issue 28: one label vocabulary
@example(b"u1 0.5 genuine\nu2 0.1 real\n")
@example(b"score,label\n0.5,True\n0.1,false\ninf,1\n")
@example(b"a 0.9 bonafide\nb 0.8 bonafide\n")  # issue 38: one class only
def test_garbage_score_files(tmp_path_factory, data: bytes) -> None:
    folder = tmp_path_factory.mktemp("g")
    for name in ("s.csv", "s.txt"):
        (folder / name).write_bytes(data)
        _check_garbage(runner.invoke(app, ["scores", "metrics", str(folder / name)]))
        _check_garbage(runner.invoke(app, ["scores", "cm-eval", "eer", str(folder / name)]))


@GARBAGE
@given(_garbage)
def test_garbage_results_csv(tmp_path_factory, data: bytes) -> None:
    folder = tmp_path_factory.mktemp("g")
    (folder / "results.csv").write_bytes(data)
    _check_garbage(runner.invoke(app, ["analyze", str(folder / "results.csv"), "--out", str(folder / "a"), "-q"]))
    _check_garbage(runner.invoke(app, ["runs", "compare", str(folder / "results.csv"), str(folder / "results.csv")]))


_yamlish = st.lists(
    st.sampled_from(
        [
            "name: G1",
            "a: &x [1]",
            "b: *x",
            "- 1",
            "  on: yes",
            "1: x",
            '"1": y',
            "factors:",
            "[",
            "{",
            ": :",
            "\t",
            "!!python/object:os.system ls",
            "<<: *x",
            "name: ../x",
        ]
    ),
    max_size=8,
).map(lambda lines: "\n".join(lines).encode())


_HUGE_GRID = (
    "name: G1\ncorpus: {name: synthetic}\nfactors:\n"
    + "".join(
        f"- {{name: {f}, type: acoustic, apply_to: test, reference: l0, levels: {{"
        + ", ".join(f"l{i}: [{{op: noise, kind: gaussian, snr_db: {i}}}]" for i in range(60))
        + "}}\n"
        for f in "abc"
    )
).encode()


@GARBAGE
@given(st.one_of(_garbage, _yamlish))
@example(_HUGE_GRID)  # issue 28: 216,000 cells, refused before any work
@example(b"name: G1\ncorpus: {name: synthetic, options: {speakers: 0}}\nfactors: []\n")
def test_garbage_experiment_yaml(tmp_path_factory, data: bytes) -> None:
    folder = tmp_path_factory.mktemp("g")
    (folder / "G.yaml").write_bytes(data)
    res = runner.invoke(
        app, ["run", str(folder / "G.yaml"), "--encoders", "mfcc-stats", "--out", str(folder / "o"), "-q"]
    )
    _check_garbage(res)
    assert res.exit_code == 1  # never a run


@GARBAGE
@given(_garbage)
def test_garbage_trial_lists(done, tmp_path_factory, data: bytes) -> None:
    folder = tmp_path_factory.mktemp("g")
    (folder / "trials.txt").write_bytes(data)
    res = runner.invoke(
        app, [*run_args(done["exp"], folder / "o", done["cache"]), "--trials", str(folder / "trials.txt")]
    )
    _check_garbage(res)
    assert res.exit_code == 1


# ---- runner pass (second pass of issue 14) ------------------------------------------------------


def test_a_failed_rerun_leaves_the_finished_run_directory_byte_for_byte(done, tmp_path: Path) -> None:
    folder, exp, out, cache = _copy_of(done, tmp_path)
    rows = pd.read_csv(folder / "manifest.csv").set_index("id")
    trials = pd.read_parquet(only_run_dir(done["out"]) / "trials.parquet")
    bad = sorted(set(trials[trials.stratum == "gender=female"].enrol))[0]
    (folder / rows.path[bad]).write_bytes(b"not audio" * 50)
    lax = runner.invoke(app, [*run_args(exp, out, cache), "--max-failure-share", "0.5"])
    assert lax.exit_code == 0, lax.output
    run_dir = only_run_dir(out)
    before = _snapshot(run_dir)
    strict = runner.invoke(app, run_args(exp, out, cache))
    _one_line(strict)
    female = trials[trials.stratum == "gender=female"]
    n_dropped = int(female.enrol.eq(bad).sum() + female.test.eq(bad).sum())
    assert f"gender=female,noise=clean / mfcc-stats: {n_dropped} of {len(female)} trials dropped" in strict.output
    assert "exceed --max-failure-share 0.01: " in strict.output and "nothing was changed" in strict.output
    assert _snapshot(run_dir) == before


def test_new_audio_bytes_make_a_new_run_and_leave_the_old_one(done, tmp_path: Path) -> None:
    folder, exp, out, cache = _copy_of(done, tmp_path)
    assert runner.invoke(app, run_args(exp, out, cache)).exit_code == 0
    first = only_run_dir(out)
    before = _snapshot(first)
    rows = pd.read_csv(folder / "manifest.csv").set_index("id")
    trials = pd.read_parquet(first / "trials.parquet")
    uid = sorted(set(trials.enrol))[0]
    x, sample_rate_hz = sf.read(folder / rows.path[uid], dtype="float32")
    sf.write(folder / rows.path[uid], x[::-1].copy(), sample_rate_hz, format="FLAC")  # same path, new content
    res = runner.invoke(app, run_args(exp, out, cache))
    assert res.exit_code == 0, res.output
    dirs = sorted(p for p in out.iterdir() if p.is_dir())
    assert len(dirs) == 2 and first in dirs
    assert _snapshot(first) == before


def test_bootstrap_intervals_on_a_dev_split_run(done, tmp_path: Path) -> None:
    exp = tiny_experiment(
        tmp_path,
        name="H03",
        corpus={"manifest": str(done["manifest"])},
        trials={"targets": 10, "min_speakers": 2, "dev_share": 0.5},
    )
    out = tmp_path / "out"
    assert runner.invoke(app, run_args(exp, out, done["cache"])).exit_code == 0
    run_dir = only_run_dir(out)
    args = ["analyze", str(run_dir), "--bootstrap", "200", "--permutations", "20", "--out", str(tmp_path / "a"), "-q"]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    cells = pd.read_csv(tmp_path / "a" / "cell_ci.csv")
    assert (cells.lo <= cells.value + 1e-12).all() and (cells.value <= cells.hi + 1e-12).all()
    gaps = pd.read_csv(tmp_path / "a" / "gaps.csv")
    assert gaps.p_perm.between(0, 1).all() and (gaps.n_perm_valid > 0).all()


@pytest.mark.slow
@pytest.mark.parametrize("experiment", ["E10", "E11"])
def test_bootstrap_intervals_on_spoof_runs(experiment: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    run = runner.invoke(
        app,
        [
            "run",
            experiment,
            "--corpus",
            "synthetic",
            "--encoders",
            "mfcc-stats",
            "--out",
            str(out),
            "--max-trials",
            "40",
            "-q",
        ],
    )
    assert run.exit_code == 0, run.output
    run_dir = only_run_dir(out)
    res = runner.invoke(app, ["analyze", str(run_dir), "--bootstrap", "200", "--out", str(tmp_path / "a"), "-q"])
    assert res.exit_code == 0, res.output
    cells = pd.read_csv(tmp_path / "a" / "cell_ci.csv")
    assert len(cells) and (cells.lo <= cells.value + 1e-12).all() and (cells.value <= cells.hi + 1e-12).all()


def test_the_report_names_cells_whose_audio_was_upsampled() -> None:
    from interbias.analysis.reporting.report import upsampled_note

    frame = pd.DataFrame(
        {
            "model": ["m", "m"],
            "cell": ["a", "b"],
            "n_upsampled": [0, 3],
            "upsampled_from": [np.nan, 8000.0],  # as pandas reads a column with empty rows
        }
    )
    (line,) = upsampled_note(frame)
    assert line.startswith("Upsampled audio") and line.endswith("m / b: 3 from 8000 Hz.")
    assert upsampled_note(frame.assign(n_upsampled=0)) == ["Upsampled audio: none."]
    assert upsampled_note(frame.drop(columns=["n_upsampled"])) == []
