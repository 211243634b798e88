"""Issue 28's hostile inputs, each with its one-line message or its fix: silence made by the
operator chain is a counted failure, the grid is counted before any work, labels that would
mislabel trials are refused, degrade never overwrites its input, and the small items (a short
manifest row, a partly labelled speaker, a trial shortfall, ``--speakers 0``, float audio far
over full scale, stereo channels that cancel)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import soundfile as sf
from conftest import gender_factor, tiny_experiment
from run_helpers import manifest_file, only_run_dir, run_args
from typer.testing import CliRunner

from interbias.audio import frontend as audio
from interbias.cli import app
from interbias.corpora.manifest import Manifest
from interbias.corpora.manifest_checks import speaker_key
from interbias.experiments.schema import load_experiment
from interbias.operators.silence import check_chain_output
from interbias.run.preflight import DEFAULT_MAX_ROWS, check_grid_size, n_cells
from interbias.utils.errors import AudioError, ConfigError, ManifestError, OperatorError

SMALL = {"targets": 10, "min_speakers": 4}
RATE = 16000
runner = CliRunner()


def lossy_factor(reference: str) -> dict:
    """A test-side factor: level ``clean`` (no operator) and level ``all`` (packet loss at rate
    0.999, which leaves silence), with ``reference`` the reference level."""
    return {
        "name": "loss",
        "type": "acoustic",
        "apply_to": "test",
        "reference": reference,
        "levels": {"clean": [], "all": [{"op": "packet_loss", "rate": 0.999}]},
    }


def _one_line(res, message: str | None = None) -> str:
    assert res.exit_code == 1, res.output
    assert "Traceback" not in res.output
    lines = res.output.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.output
    if message is not None:
        assert lines[0] == f"error: {message}"
    return lines[0]


@pytest.fixture(scope="module")
def data(tmp_path_factory, tiny_corpus) -> Path:
    """A manifest.csv over a copy of the tiny corpus's audio (relative paths under audio/)."""
    return manifest_file(tiny_corpus, tmp_path_factory.mktemp("trust") / "data", copy_audio=True)


def _copy(data: Path, tmp: Path) -> Path:
    shutil.copytree(data.parent, tmp / "data")
    return tmp / "data" / "manifest.csv"


def _speech(seconds: float = 1.0, level: float = 0.1) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    return (level * np.sin(2 * np.pi * 220 * t) * (1 + np.sin(2 * np.pi * 3 * t))).astype(np.float32)


# ---- 2: silence made by the chain ------------------------------------------------------------------


def test_chain_output_floor() -> None:
    x = _speech()
    check_chain_output(x, x + 0.01 * np.cos(np.arange(len(x))).astype(np.float32), RATE)  # noisy: a measurement
    one_frame = np.zeros_like(x)
    one_frame[:320] = x[:320]
    check_chain_output(x, one_frame, RATE)  # one 20 ms frame of speech survives: degraded, not silent
    with pytest.raises(OperatorError, match=r"^the chain's output is silence \(every sample is the same value\)"):
        check_chain_output(x, np.zeros_like(x), RATE)
    with pytest.raises(
        OperatorError, match=r"^the chain's output is near-silence: its loudest 20 ms frame is -9\d\.\d"
    ):
        check_chain_output(x, x * 1e-4, RATE)  # -80 dB: under the input's speech level - 60 dB
    check_chain_output(x, x * 1e-2, RATE)  # -40 dB: quiet, still speech
    quiet = _speech(level=1e-4)  # an input at -80 dBFS: the absolute floor (-90 dBFS) decides
    check_chain_output(quiet, quiet, RATE)
    with pytest.raises(OperatorError, match=r"under the floor -90\.0 dBFS"):
        check_chain_output(quiet, quiet * 0.1, RATE)


def test_packet_loss_silence_is_a_counted_failure_and_refused_over_the_share(data: Path, tmp_path: Path) -> None:
    lossy = lossy_factor("clean")
    gender = gender_factor()
    exp = tiny_experiment(tmp_path, name="S01", corpus={"manifest": str(data)}, trials=SMALL, factors=[gender, lossy])
    cache = tmp_path / "cache"
    refused = runner.invoke(app, run_args(exp, tmp_path / "o1", cache))
    assert refused.exit_code == 1 and "Traceback" not in refused.output
    assert "error: 2 cells errored" in refused.output and "> the 1.0% limit" in refused.output
    assert "the chain's output is silence (every sample is the same value): nothing to embed" in refused.output
    res = runner.invoke(app, [*run_args(exp, tmp_path / "o2", cache), "--max-failure-share", "0.999"])
    assert res.exit_code == 0, res.output
    run_dir = only_run_dir(tmp_path / "o2")
    failures = json.loads((run_dir / "run.json").read_text())["failures"]
    assert failures and all("the chain's output is" in f["error"] for f in failures)
    rows = pd.read_csv(run_dir / "results.csv")
    assert (rows[rows.level_b == "all"].n_failed > 0).all() and (rows[rows.level_b == "clean"].n_failed == 0).all()


# ---- 5: the grid, counted before any work -----------------------------------------------------------


def test_a_huge_grid_is_refused_with_its_count_before_any_work(data: Path, tmp_path: Path, monkeypatch) -> None:
    levels = {f"l{i}": [{"op": "noise", "kind": "gaussian", "snr_db": i}] for i in range(60)}
    factors = [{"name": n, "type": "acoustic", "apply_to": "test", "reference": "l0", "levels": levels} for n in "abc"]
    exp = tiny_experiment(tmp_path, name="G01", corpus={"manifest": str(data)}, factors=factors)
    assert n_cells(load_experiment(exp)) == 216_000
    res = runner.invoke(app, run_args(exp, tmp_path / "o", tmp_path / "c"))
    _one_line(
        res,
        f"G01: the grid has 216,000 cells (a 60 × b 60 × c 60) × 1 encoder(s) = 216,000 results rows, over the limit "
        f"of {DEFAULT_MAX_ROWS:,}; check the factors' levels, or raise the limit with INTERBIAS_MAX_CELLS=216000",
    )
    assert not (tmp_path / "o").exists() and not (tmp_path / "c").exists()
    monkeypatch.setenv("INTERBIAS_MAX_CELLS", "216000")
    assert check_grid_size(load_experiment(exp), 1) == 216_000
    monkeypatch.setenv("INTERBIAS_MAX_CELLS", "lots")
    with pytest.raises(ConfigError, match="INTERBIAS_MAX_CELLS='lots': expected a positive whole number"):
        check_grid_size(load_experiment(exp), 1)


def test_reading_a_large_manifest_shows_progress(data: Path, tmp_path: Path, monkeypatch) -> None:
    from interbias.corpora import manifest as manifest_module
    from interbias.utils.progress import Reporter

    monkeypatch.setattr(manifest_module, "PROGRESS_ROWS", 10)
    lines: list[str] = []

    class Stream:
        def write(self, text: str) -> None:
            lines.extend(t for t in text.splitlines() if t)

        def flush(self) -> None:
            pass

    from interbias.corpora import read_manifest

    got = read_manifest(data, reporter=Reporter(stream=Stream()))  # type: ignore[arg-type]
    assert len(got) > 10
    assert lines and all(line.startswith(f"reading manifest {data.name}") for line in lines)
    assert lines[-1].startswith(f"reading manifest {data.name}: {2 * len(got)}/{2 * len(got)}")


# ---- 6: labels that silently mislabel trials -------------------------------------------------------


@pytest.mark.parametrize(
    "a,b",
    [
        ("spk01", "SPK01"),
        ("spk01", " spk01"),
        ("anna maria", "anna  maria"),
        ("anna maria", "anna\u00a0maria"),  # a non-breaking space
        ("jos\u00e9", "jose\u0301"),  # NFC against NFD
        ("0042", "42"),  # leading zeros stripped
        ("1001", "1001.0"),  # a numeric id turned into a float
        ("1001", "1.001E+03"),  # ... or scientific notation
        ("spk\u200b01", "spk01"),  # a zero-width space
        ("\uff53pk01", "spk01"),  # a full-width letter
    ],
)
def test_one_speaker_spelled_two_ways_is_refused(data: Path, tmp_path: Path, a: str, b: str) -> None:
    assert speaker_key(a) == speaker_key(b)
    rows = pd.read_csv(data, dtype=str, keep_default_na=False)
    rows.loc[0, "speaker"], rows.loc[1, "speaker"] = a, b
    path = tmp_path / "m.csv"
    rows.to_csv(path, index=False)
    with pytest.raises(ManifestError) as info:
        Manifest.read(path, root=data.parent)
    assert str(info.value) == (
        f"{path}: 1 speaker name(s) spelled more than one way (case, spaces, Unicode form, leading zeros or a number "
        f"turned into a float), which would split one speaker in two; first: {a!r} (line 2) vs {b!r} (line 3); "
        "write each speaker's name one way"
    )


def test_distinct_names_stay_distinct() -> None:
    keys = {speaker_key(n) for n in ("spk1", "spk10", "1.5", "15", "1e400x", "a b", "ab", "007a", "7a")}
    assert len(keys) == 9


def test_one_audio_file_listed_twice_is_refused(data: Path, tmp_path: Path) -> None:
    rows = pd.read_csv(data, dtype=str, keep_default_na=False)
    dup = rows.iloc[[3]].assign(id="copy-of-3", path="./" + rows.path[3])
    path = data.parent / "dup.csv"
    pd.concat([rows, dup]).to_csv(path, index=False)
    from interbias.corpora import read_manifest  # what a run reads a manifest with

    with pytest.raises(ManifestError) as info:
        read_manifest(path)
    assert str(info.value) == (
        f"{path}: 1 row(s) name an audio file another row names already (a trial would score a file against "
        f"itself); first: {(data.parent / rows.path[3]).resolve()} (line 5 and line {len(rows) + 2}); list each file once"
    )


def test_byte_identical_audio_under_two_ids_is_refused(data: Path, tmp_path: Path) -> None:
    manifest = _copy(data, tmp_path)
    rows = pd.read_csv(manifest, dtype=str, keep_default_na=False)
    shutil.copyfile(manifest.parent / rows.path[0], manifest.parent / rows.path[1])
    exp = tiny_experiment(tmp_path, name="D01", corpus={"manifest": str(manifest)}, trials=SMALL)
    line = _one_line(runner.invoke(app, run_args(exp, tmp_path / "o", tmp_path / "c")))
    assert "audio file(s) appear under more than one utterance with identical bytes (sha256)" in line
    assert f"{rows.id[0]!r} = {rows.id[1]!r}" in line and not (tmp_path / "o").exists()


# ---- 7: degrade OUT = IN ---------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["same", "relative", "symlink"])
def test_degrade_never_overwrites_its_input(tmp_path: Path, how: str, monkeypatch) -> None:
    src = tmp_path / "in.wav"
    sf.write(src, _speech(), RATE)
    before = src.read_bytes()
    dst = {"same": src, "relative": Path("in.wav"), "symlink": tmp_path / "link.wav"}[how]
    if how == "symlink":
        dst.symlink_to(src)
    monkeypatch.chdir(tmp_path)
    res = runner.invoke(app, ["data", "degrade", str(src), str(dst), "--op", "noise:snr_db=5"])
    _one_line(res, f"{dst}: the output is the input file; writing it would overwrite your audio (choose another OUT)")
    assert src.read_bytes() == before


# ---- 8: the small items ----------------------------------------------------------------------------


def test_a_manifest_row_one_field_short_is_refused(data: Path, tmp_path: Path) -> None:
    text = data.read_text().splitlines()
    text[2] = text[2].rsplit(",", 1)[0]
    path = data.parent / "short.csv"
    path.write_text("\n".join(text) + "\n")
    n = len(text[0].split(","))
    _one_line(
        runner.invoke(app, ["data", "info", str(path)]),
        f"{path}:3: {n - 1} field(s), the header has {n} (every row gives every column; an empty value is written "
        "as nothing between two commas)",
    )


def test_a_partly_labelled_speaker_and_a_trial_shortfall_are_said(data: Path, tmp_path: Path) -> None:
    manifest = _copy(data, tmp_path)
    rows = pd.read_csv(manifest, dtype=str, keep_default_na=False)
    rows.loc[0, "gender"] = ""
    rows.to_csv(manifest, index=False)
    exp = tiny_experiment(
        tmp_path, name="P01", corpus={"manifest": str(manifest)}, trials={"targets": 500, "min_speakers": 4}
    )
    res = runner.invoke(app, run_args(exp, tmp_path / "o", tmp_path / "c"))
    assert res.exit_code == 0, res.output
    said = res.stderr.splitlines()
    assert (
        f"P01: corpus 'manifest': 1 utterance(s) of 1 speaker(s) leave 'gender' empty while other utterances of the "
        f"same speaker give it; they are left out of every stratum; first: {rows.id[0]!r} (speaker {rows.speaker[0]!r})"
    ) in said
    info = json.loads((only_run_dir(tmp_path / "o") / "trials.json").read_text())
    n_t = info["matched"]["n_target_per_stratum"]
    assert any(line.startswith(f"P01: drew {n_t} target trials per stratum of the 500 asked for") for line in said), (
        said
    )


def test_speakers_zero_says_so(tmp_path: Path) -> None:
    from interbias.corpora.synthetic import SyntheticSpec
    from interbias.utils.errors import CorpusError

    with pytest.raises(CorpusError, match=r"^synthetic: --speakers must be a positive number of voices, got 0$"):
        SyntheticSpec().with_speakers(0)


def test_float_audio_far_over_full_scale_and_cancelling_channels(tmp_path: Path) -> None:
    loud = tmp_path / "loud.wav"
    sf.write(loud, _speech() * 3000, RATE, subtype="FLOAT")
    with pytest.raises(AudioError, match=r"samples reach (599\.9|600), more than 2× full scale"):
        audio.load(loud)
    over = tmp_path / "over.wav"
    sf.write(over, _speech() * 7, RATE, subtype="FLOAT")  # 1.4 at its peak: a processing overshoot, kept
    assert audio.load(over).samples.max() > 1.0
    x = _speech()
    stereo = tmp_path / "cancel.wav"
    sf.write(stereo, np.stack([x, -x], axis=1), RATE, subtype="FLOAT")
    with pytest.raises(AudioError) as info:
        audio.load(stereo)
    assert str(info.value) == (
        f"{stereo}: its 2 channels cancel when averaged to mono (one is the other inverted): the downmix is "
        "silence; keep one channel"
    )


# ---- issue 38: silence in the reference level, errored cells counted --------------------------------


def test_a_silent_reference_level_with_a_dev_split_is_a_counted_failure(data: Path, tmp_path: Path) -> None:
    """The reference level's chain silences every test utterance in a run with a dev split: the
    cells error with their cell and model named, the fairness step says it has no reference
    cell (was: ValueError 'No objects to concatenate', no run.json), run.json counts every
    failed utterance of the errored cells, and a rerun says the same."""
    lossy = lossy_factor("all")
    trials = {"targets": 4, "min_speakers": 2, "dev_share": 0.5}
    exp = tiny_experiment(
        tmp_path, name="S02", corpus={"manifest": str(data)}, trials=trials, factors=[gender_factor(), lossy]
    )
    for _ in range(2):  # the rerun reuses the finished clean cells and says the same
        res = runner.invoke(app, [*run_args(exp, tmp_path / "o", tmp_path / "c"), "--max-failure-share", "0.999"])
        assert res.exit_code == 1 and "Traceback" not in res.output, res.output
        (line,) = [x for x in res.output.splitlines() if x.startswith("error: ")]
        assert line.startswith(
            "error: 2 cells, 1 analysis errored (all listed in run.json errored_cells); first: cell "
        )
        record = json.loads((only_run_dir(tmp_path / "o") / "run.json").read_text())
        errored = record["errored_cells"]
        assert len(errored) == 3
        for cell in ("gender=female,loss=all", "gender=male,loss=all"):
            (msg,) = [e for e in errored if e.startswith(f"cell {cell} / mfcc-stats: ")]
            assert re.search(r" \d+ utterance\(s\) failed, dropping \d+ of 16 trials", msg)
        assert errored[2].endswith(
            ": mfcc-stats has no scored cell in the reference condition (loss=all): no dev threshold, no fairness report"
        )
        assert errored[2].startswith("analysis: S02-")
        n_failed = sum(int(re.search(r" (\d+) utterance\(s\) failed", e).group(1)) for e in errored[:2])
        assert record["n_failures"] == n_failed == len(record["failures"]) > 0
        assert {f["cell"] for f in record["failures"]} == {"gender=female,loss=all", "gender=male,loss=all"}
    out = tmp_path / "analysis"
    res = runner.invoke(app, ["analyze", str(only_run_dir(tmp_path / "o")), "--bootstrap", "0", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert (
        " ".join(
            f"note: 2 cell(s) errored in the run (run.json errored_cells; first: {errored[0]}): they have no results row".split()
        )
        in " ".join(res.output.split())  # the console wraps lines to its width
    )


# ---- issue 38, item 4: one verdict on audio, cold or warm cache, SV or CM ---------------------------


def _verdicts(out: Path) -> tuple[dict, list[str], list[tuple[str, str, str]]]:
    """(n_failed per model/cell, errored cells, failed (cell, utterance, side)) of the one run in ``out``."""
    run_dir = only_run_dir(out)
    rows = pd.read_csv(run_dir / "results.csv")
    record = json.loads((run_dir / "run.json").read_text())
    failed = sorted((f["cell"], f["utterance"], f["side"]) for f in record["failures"])
    return dict(zip(rows.model + "/" + rows.cell, rows.n_failed, strict=True)), record["errored_cells"], failed


def test_the_audio_verdict_does_not_depend_on_the_cache_nor_on_sv_or_cm(
    data: Path, tmp_path: Path, monkeypatch
) -> None:
    """A file of -96 dBFS dither fails in every cell (decided on the input); a chain that
    silences its input fails its cells. The same verdicts (n_failed, errored cells, failures)
    with an empty cache, a warm one, and a cache filled without the checks (as before they were
    stored with the embedding); the countermeasure path fails the same utterances."""
    import sqlite3

    from interbias.audio import frontend
    from interbias.cm.scoring import degrade
    from interbias.embedding import tasks

    manifest = _copy(data, tmp_path)
    table = pd.read_csv(manifest)
    dithered = table.id[0]
    noise = np.random.default_rng(0).standard_normal(RATE * 2) * 10 ** (-96 / 20)
    sf.write(manifest.parent / table.path[0], noise, RATE, subtype="PCM_24")
    lossy = lossy_factor("clean")
    trials = {"targets": 6, "min_speakers": 3}
    exp = tiny_experiment(
        tmp_path, name="V01", corpus={"manifest": str(manifest)}, trials=trials, factors=[gender_factor(), lossy]
    )
    more = ["--max-failure-share", "0.999"]
    cold = runner.invoke(app, [*run_args(exp, tmp_path / "cold", tmp_path / "c1"), *more])
    warm = runner.invoke(app, [*run_args(exp, tmp_path / "warm", tmp_path / "c1"), *more])
    assert cold.exit_code == warm.exit_code == 1 and "Traceback" not in cold.output + warm.output
    verdict = _verdicts(tmp_path / "cold")
    n_failed, errored, failed = verdict
    assert any(u == dithered for _, u, _ in failed)  # the dither file fails, in the clean cells too
    gender = table.gender[0]
    assert n_failed[f"mfcc-stats/gender={gender},loss=clean"] >= 1
    assert [e.split(" / ")[0] for e in errored] == ["cell gender=female,loss=all", "cell gender=male,loss=all"]
    assert _verdicts(tmp_path / "warm") == verdict
    # a cache filled without the checks, its rows lacking the verdict (as stored before): not served
    with monkeypatch.context() as m:
        m.setattr(tasks, "check_chain_output", lambda *a, **k: None)
        m.setattr(frontend, "check_speech_floor", lambda *a, **k: None)
        unchecked = runner.invoke(app, [*run_args(exp, tmp_path / "unchecked", tmp_path / "c2"), *more])
    assert _verdicts(tmp_path / "unchecked") != verdict, unchecked.output  # without the checks: scored
    db = sqlite3.connect(str(next((tmp_path / "c2").rglob("*.sqlite"))))
    db.execute("UPDATE embeddings SET realised = json_remove(realised, '$[#-1]')")
    db.commit()
    db.close()
    again = runner.invoke(app, [*run_args(exp, tmp_path / "again", tmp_path / "c2"), *more])
    assert again.exit_code == 1 and _verdicts(tmp_path / "again") == verdict
    # the countermeasure scoring path decides the same for the same utterances and chains
    from interbias.corpora.manifest import Manifest
    from interbias.experiments.schema import load_experiment

    corpus = Manifest.read(manifest)
    cells = {c.id: c for c in load_experiment(exp).cells()}
    for cell_id in ("gender=female,loss=clean", "gender=female,loss=all"):
        sv = {u for c, u, side in failed if c == cell_id and side == "test"}
        tested = {u for c, u, side in failed if side == "test"} | {dithered}
        utts = [u for u in corpus if u.id in tested and u.gender == "female"]
        cm = {line.split(": ")[0] for line in degrade(corpus, utts, cells[cell_id].test_chain, tmp_path / "c1").failed}
        assert cm == {u.id for u in utts if u.id in sv or u.id == dithered}


def test_an_operator_that_did_less_than_asked_is_said(data: Path, tmp_path: Path) -> None:
    """A crop longer than every file (its cell is the clean audio) and an echo longer than the
    file (no reflection added) each give one line, even with --quiet (was: only in
    operations.parquet)."""
    ops = {
        "name": "ops",
        "type": "acoustic",
        "apply_to": "test",
        "reference": "clean",
        "levels": {
            "clean": [],
            "crop": [{"op": "crop", "duration_s": 30}],
            "echo": [{"op": "echo", "delay_ms": 1900, "reflections": 2}],
        },
    }
    trials = {"targets": 4, "min_speakers": 2}
    exp = tiny_experiment(
        tmp_path, name="N01", corpus={"manifest": str(data)}, trials=trials, factors=[gender_factor(), ops]
    )
    res = runner.invoke(app, run_args(exp, tmp_path / "o", tmp_path / "c"))
    assert res.exit_code == 0, res.output
    ops_table = pd.read_parquet(only_run_dir(tmp_path / "o") / "operations.parquet")
    n = ops_table[ops_table.operators == "crop"].utterance.nunique()
    assert n > 0
    lines = res.output.splitlines()
    assert (
        f"note: crop(duration_s=30.0,where=start): the crop kept {n} of {n} utterance(s) whole (no longer than its "
        "30 s window): all are scored on the audio without the crop"
    ) in lines
    assert (
        f"note: echo(delay_ms=1900.0,decay=0.5,reflections=2): the echo added fewer than 2 reflection(s) to {n} of {n} "
        "utterance(s) (its 1900 ms delay reaches past the end of the file; reflections_applied in operations.parquet)"
    ) in lines


def test_degrade_writes_pcm_with_its_clipped_samples_counted_and_refuses_what_run_refuses(tmp_path: Path) -> None:
    """An echo pushing peaks past full scale: 16-bit PCM, the clipped samples counted and said
    (was: a 32-bit float WAV peaking at 1.19); a float file far over full scale is refused with
    the line ``run`` gives (was: written 96 % saturated)."""
    src, out = tmp_path / "in.wav", tmp_path / "out.wav"
    x = _speech(level=0.45)
    sf.write(src, x, RATE, subtype="FLOAT")
    args = ["data", "degrade", str(src), str(out), "--op", "echo:delay_ms=5,decay=0.95"]
    res = runner.invoke(app, [*args, "--json"])
    assert res.exit_code == 0, res.output
    info = json.loads(res.output)
    d = round(5 * RATE / 1000)
    y = x.astype(np.float64)
    y[d:] += 0.95 * x[:-d].astype(np.float64)
    expected = int((np.abs(y.astype(np.float32)) > 1.0).sum())
    assert expected > 0 and info["clipped_samples"] == expected and info["subtype"] == "PCM_16"
    assert info["peak"] == pytest.approx(float(np.abs(y).max()), rel=1e-6)
    assert sf.info(str(out)).subtype == "PCM_16" and np.abs(sf.read(out)[0]).max() <= 1.0
    res = runner.invoke(app, [*args, "--force"])  # replacing its own earlier OUT is asked for
    assert f"  note: {expected} sample(s) over full scale (peak {info['peak']:.3g}) were clipped to it" in res.output
    loud = tmp_path / "loud.wav"
    sf.write(loud, _speech() * 3000, RATE, subtype="FLOAT")
    res = runner.invoke(app, ["data", "degrade", str(loud), str(tmp_path / "o2.wav"), "--op", "gain:gain_db=0"])
    line = _one_line(res)
    assert re.match(rf"error: {re.escape(str(loud))}: samples reach (599\.9|600), more than 2× full scale", line)
    assert not (tmp_path / "o2.wav").exists()


def test_readable_slugs_are_the_label_unless_a_character_must_go() -> None:
    """Names a person reads (cards, exports, adapters) are the label itself when it is safe; a
    hash only where characters were replaced; the stored slug of run directories is unchanged."""
    from interbias.utils.paths import readable_slug, slug

    assert readable_slug("CAM++") == "CAM++" and readable_slug("mfcc-stats") == "mfcc-stats"
    assert readable_slug("gender=female,noise=n10") == "gender=female,noise=n10"
    for text in ("CAM+++orca:1a2b", "a/b", "../x", "-rf", "CAM++ +as-norm", "x" * 81, ""):
        out = readable_slug(text)
        digest = __import__("hashlib").sha256(text.encode()).hexdigest()[:6]
        assert out.endswith(f"-{digest}") and "/" not in out and not out.startswith((".", "-")), out
    assert readable_slug("a:b") != readable_slug("a/b")  # read the same, kept apart by the hash
    assert slug("CAM++") == "CAM__-395952"  # run directories and caches keep their names
