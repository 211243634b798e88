"""Issue 63's hostile round 5, the run / analysis / runs-folder side: each case's input
reproduced, its one line or its counted failure asserted."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from conftest import wide_lines
from synthetic_runs import gender_noise_run
from typer.testing import CliRunner

from interbias.cli import app
from interbias.utils.errors import AnalysisError, ConfigError

runner = CliRunner()


def _run(tmp_path: Path) -> Path:
    means = {"m": {(g, n): 2.0 for g in ("female", "male") for n in ("clean", "n5")}}
    return gender_noise_run(tmp_path / "RUN", means, n=4, m=3)


# ---- the time a count implies ---------------------------------------------------------------


def test_estimate_time_refuses_beyond_the_limit_with_the_figure_and_the_flag() -> None:
    from interbias.utils.budget import estimate_time

    assert estimate_time("--bootstrap", 100, 0.1, "x", allow="--no-time-limit") == ""  # 10 s: said nothing
    line = estimate_time("--bootstrap", 1000, 0.1, "x", allow="--no-time-limit")  # 100 s: said
    assert line == "--bootstrap 1,000: about 1 min 40 s (x each)"
    with pytest.raises(ConfigError) as err:
        estimate_time("--bootstrap", 10**7, 0.001, "x", allow="--no-time-limit")
    assert str(err.value) == (
        "--bootstrap 10,000,000: about 2 h 46 min (x each); refused above 1 h 00 min "
        "(at most 3,600,000 within it): pass --no-time-limit to run it"
    )
    assert estimate_time("--bootstrap", 10**7, 0.001, "x", allow="--no-time-limit", limit_s=None)


def test_a_bootstrap_that_would_take_hours_is_refused_before_it_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The estimate is B × 2 passes × the cells' trial rows × the measured rate; this small run
    fits an hour at any count its memory allows, so the rate is set to 1 ms per trial weight."""
    from interbias.analysis import suite
    from interbias.analysis.stats import cost

    run = _run(tmp_path)
    monkeypatch.setattr(cost, "SECONDS_PER_TRIAL_REPLICATE", 1e-3)
    trials = pd.read_parquet(run / "trials.parquet")
    rows = 2 * len(trials)  # a cell (gender × noise) scores its gender's trials: each trial twice
    seconds = 2 * 20000 * rows * 1e-3
    hours, minutes = divmod(round(seconds) // 60, 60)
    res = runner.invoke(app, ["analyze", str(run), "--bootstrap", "20000"])
    assert res.exit_code == 1 and "Traceback" not in res.output, res.output
    results = pd.read_csv(run / "results.csv")
    assert res.output.splitlines()[-1] == (
        f"error: --bootstrap 20,000: about {hours} h {minutes:02d} min (2 × {rows:,} trial weights of "
        f"{len(results)} cell row(s) each); refused above 1 h 00 min (at most {int(3600 / (2 * rows * 1e-3)):,} "
        "within it): pass --no-time-limit to run it"
    )
    with pytest.raises(AnalysisError, match="--no-time-limit"):
        suite.analyse(run, suite.Options(n_boot=40000, design="speaker"))
    monkeypatch.setattr(cost, "SECONDS_PER_TRIAL_REPLICATE", 1e-2)  # 2,000 replicates: about 2 h
    res = runner.invoke(app, ["analyze", str(run), "--bootstrap", "2000", "--no-time-limit"])
    assert res.exit_code == 0, res.output
    assert f"--bootstrap 2,000: about {duration_of(2 * 2000 * rows * 1e-2)} (2 × {rows:,}" in res.output


def _paired_copy(run: Path, folder: Path) -> Path:
    """A second run on ``run``'s trial list, with the utterance columns ``runs compare --paired``
    reads (as ``run`` writes them)."""
    import json
    import shutil

    from interbias.trials.sampler import TrialList

    copy = Path(shutil.copytree(run, folder))
    trials = pd.read_parquet(run / "trials.parquet")
    frame = trials.assign(
        enrol=trials["enrol_speaker"] + "_e" + trials["trial_id"].astype(str),
        test=trials["test_speaker"] + "_t" + trials["trial_id"].astype(str),
    )
    for target in (run, copy):
        frame.to_parquet(target / "trials.parquet", index=False)
        (target / "trials.json").write_text(json.dumps(TrialList(frame).meta()))
    return copy


def _score_file(run: Path, path: Path) -> Path:
    """The run's trials as a score file with speakers and a gender column (score = label)."""
    trials = pd.read_parquet(run / "trials.parquet")
    gender = trials["stratum"].str.removeprefix("gender=")
    frame = trials.assign(score=trials["label"].astype(float), label=trials["label"].astype(int), gender=gender)
    frame[["score", "label", "enrol_speaker", "test_speaker", "gender"]].to_csv(path, index=False)
    return path


@pytest.mark.parametrize("command", ["plan", "scores fairness", "runs leaderboard", "runs card", "runs compare"])
def test_every_bootstrap_count_is_refused_when_it_implies_hours(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """As analyze: the count's time is estimated before the bootstrap and refused above the hour
    in one line naming --no-time-limit (the rate set to 1 ms per trial weight), nothing written."""
    from interbias.analysis.stats import cost

    run = _run(tmp_path)
    monkeypatch.setattr(cost, "SECONDS_PER_TRIAL_REPLICATE", 1e-3)
    out = tmp_path / "out"
    args = {
        "plan": ["plan", str(run), "--out", str(out)],
        "scores fairness": ["scores", "fairness", str(_score_file(run, tmp_path / "s.csv")), "--group", "gender",
                            "--threshold-rule", "fixed:0.5", "--out", str(out)],
        "runs leaderboard": ["runs", "leaderboard", str(run), "--out", str(out)],
        "runs card": ["runs", "card", "m", str(run), "--out", str(out)],
        "runs compare": ["runs", "compare", str(run), str(_paired_copy(run, tmp_path / "NEW")), "--paired"],
    }[command]  # fmt: skip
    count = 100000 if command == "scores fairness" else 20000  # fairness: 48 trial weights a replicate
    res = runner.invoke(app, [*args, "--bootstrap", str(count)])
    assert res.exit_code == 1 and len(res.output.splitlines()) == 1, res.output
    line = res.output.strip()
    assert line.startswith(f"error: --bootstrap {count:,}: about ") and " h " in line, line
    assert line.endswith("within it): pass --no-time-limit to run it"), line
    assert not out.exists()
    if command == "scores fairness":  # the flag lifts the limit: the same count runs
        res = runner.invoke(app, [*args, "--bootstrap", str(count), "--no-time-limit"])
        assert res.exit_code == 0 and (out / "fairness.csv").is_file(), res.output


def duration_of(seconds: float) -> str:
    from interbias.utils.progress import duration

    return duration(seconds)


# ---- a run without a dev split ----------------------------------------------------------------
# (analyze --metric act_dcf and the report's Calibration section state run.json's reason:
# tests/test_metrics_weighted_llr.py and tests/test_report_calibration_missing.py)


def test_an_errored_analysis_is_not_counted_as_a_cell() -> None:
    from interbias.run.frame import errored_split, errored_words

    errored = [
        "cell gender=female,loss=all / mfcc-stats: 16 utterance(s) failed",
        "cell gender=male,loss=all / mfcc-stats: 16 utterance(s) failed",
        "analysis: mfcc-stats has no scored cell in the reference condition",
        "attacks: no dev threshold",
    ]
    cells, stages = errored_split(errored)
    assert cells == errored[:2] and stages == errored[2:]
    assert errored_words(errored) == "2 errored cell(s) (errored besides: 1 analysis, the attack stage)"
    assert errored_words(errored[2:3]) == "0 errored cell(s) (errored besides: 1 analysis)"
    assert errored_words([]) == "0 errored cell(s)"


def test_effects_whose_correction_replicates_are_all_nan_warn_nothing(tmp_path: Path) -> None:
    """An effect with no valid non-target replicate has no interval, said in its note; numpy's
    'Degrees of freedom <= 0' RuntimeWarning (with a source line on stderr) is not printed."""
    import warnings

    import numpy as np

    from interbias.analysis import effects
    from interbias.analysis.stats.replicates import Replicates
    from interbias.analysis.suite import Options, analyse

    a = analyse(_run(tmp_path), Options(n_boot=200))
    nan = Replicates(
        a.replicates.metric, "nontarget", 200, 0, 0.95, "r", {k: np.full(200, np.nan) for k in a.replicates.values}
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        frame, _ = effects.collect(
            a.results,
            "eer",
            a.contrasts,
            a.gaps,
            a.replicates,
            correction=effects.Correction(nan, a.correction.n, a.correction.k),
        )
    assert len(frame) and frame["se"].isna().all()
    assert frame["note"].str.startswith("no interval").all(), frame["note"].tolist()


# ---- an edited completion record ---------------------------------------------------------------


def test_an_edited_completion_record_is_scored_again_and_said(tmp_path: Path, tiny_corpus) -> None:
    """eer changed by hand in a finished cell's record: the rerun does not reuse it, scores the
    cell again (results.csv back to the measured value), lists it in run.json records_redone
    and says so in one note; an untouched rerun reuses every cell and says nothing."""
    import json

    from conftest import tiny_experiment
    from run_helpers import manifest_file, only_run_dir, run_args

    manifest = manifest_file(tiny_corpus, tmp_path / "m")
    exp = tiny_experiment(tmp_path, name="K02", corpus={"manifest": str(manifest)})
    args = run_args(exp, tmp_path / "o", tmp_path / "c")
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    run = only_run_dir(tmp_path / "o")
    results = (run / "results.csv").read_bytes()
    (record,) = [p for p in (run / "cells").rglob("*.json") if "noise_n10" in p.name and "female" in p.name]
    rec = json.loads(record.read_text())
    true_eer = rec["row"]["eer"]
    rec["row"]["eer"] = 0.0123
    record.write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n")

    again = runner.invoke(app, args)
    assert again.exit_code == 0 and "Traceback" not in again.output, again.output
    where = str(record.relative_to(run))
    why = "the record was changed after it was written (checksum)"
    assert json.loads((run / "run.json").read_text())["records_redone"] == {where: why}
    text = " ".join(again.output.split())
    assert "note: 1 completion record(s) failed their checksum and their cells were scored again " in text
    assert f"first: {where}: {why}" in text
    assert json.loads(record.read_text())["row"]["eer"] == true_eer
    assert (run / "results.csv").read_bytes() == results

    third = runner.invoke(app, args)  # sealed again: reused, nothing to say
    assert third.exit_code == 0 and "checksum" not in third.output, third.output
    assert "records_redone" not in json.loads((run / "run.json").read_text())


# ---- a comma inside a speaker name -------------------------------------------------------------


def test_a_comma_inside_a_quoted_speaker_name_is_one_speaker_and_unquoted_is_refused(tmp_path: Path) -> None:
    from interbias.corpora.manifest import Manifest
    from interbias.utils.errors import ManifestError

    quoted = tmp_path / "q.csv"
    quoted.write_text('path,speaker,gender\na.wav,"Smith, John",male\nb.wav,"Smith, John",male\nc.wav,Jane,female\n')
    m = Manifest.read(quoted)
    assert [u.speaker for u in m] == ["Smith, John", "Smith, John", "Jane"]
    m.write(tmp_path / "back.csv")  # written quoted, read back the same
    assert [u.speaker for u in Manifest.read(tmp_path / "back.csv")] == ["Smith, John", "Smith, John", "Jane"]
    bare = tmp_path / "b.csv"
    bare.write_text("path,speaker,gender\na.wav,Smith, John,male\nc.wav,Jane,female\n")
    with pytest.raises(ManifestError) as err:
        Manifest.read(bare)
    assert str(err.value) == f"{bare}:2: 4 field(s), the header has 3 (a value holding a comma must be quoted)"


# ---- two levels with the same chain ------------------------------------------------------------


def test_levels_with_the_same_chain_or_protocol_are_named_at_validate(tmp_path: Path, tiny_corpus) -> None:
    from conftest import NOISE, VAD, gender_factor, tiny_experiment
    from run_helpers import manifest_file

    from interbias.experiments.schema import load_experiment
    from interbias.run.preflight import repeated_levels

    noise = {**NOISE, "levels": {**NOISE["levels"], "again": NOISE["levels"]["n5"]}}
    vad = {**VAD, "levels": {**VAD["levels"], "on2": {"vad": "energy"}}}
    manifest = manifest_file(tiny_corpus, tmp_path / "m")
    exp = tiny_experiment(tmp_path, corpus={"manifest": str(manifest)}, factors=[gender_factor(), noise, vad])
    tail = "their cells measure the same thing, each counted as a chain setting"
    noisy = "enrolment clean, test noise(kind=gaussian,snr_db=5.0)"
    assert repeated_levels(load_experiment(exp)) == [
        f"levels noise=n5 and noise=again give the same chains and settings ({noisy}): {tail}",
        "levels noise=n5,vad=on and noise=n5,vad=on2 and noise=again,vad=on and noise=again,vad=on2 give the same "
        f"chains and settings ({noisy}): {tail}",
        f"levels vad=on and vad=on2 give the same chains and settings (enrolment clean, test clean): {tail}",
    ]
    distinct = tiny_experiment(
        tmp_path, name="T02", corpus={"manifest": str(manifest)}, factors=[gender_factor(), NOISE, VAD]
    )
    assert repeated_levels(load_experiment(distinct)) == []
    res = runner.invoke(app, ["validate", str(exp)])
    assert res.exit_code == 0, res.output
    assert (
        f"note: levels vad=on and vad=on2 give the same chains and settings (enrolment clean, test clean): {tail}"
        in (" ".join(res.output.split()))
    )


# ---- noise on a DC-only or a very quiet signal -------------------------------------------------


def _tone(path: Path, dbfs: float, dc: float = 0.0) -> Path:
    import numpy as np
    import soundfile as sf

    t = np.arange(32000) / 16000
    x = dc + 10 ** (dbfs / 20) * np.sqrt(2) * np.sin(2 * np.pi * 200 * t) if dbfs > -900 else np.full(32000, dc)
    sf.write(path, x.astype(np.float32), 16000, subtype="FLOAT")
    return path


def test_noise_on_a_dc_only_signal_is_refused_with_its_reason(tmp_path: Path) -> None:
    import numpy as np

    from interbias.audio.level import mix_at_snr
    from interbias.utils.errors import OperatorError

    with pytest.raises(OperatorError, match=r"^signal is constant \(a DC offset of 0.5, no variation\)"):
        mix_at_snr(np.full(32000, 0.5), np.random.default_rng(0).standard_normal(32000), 10.0, 16000)
    src = _tone(tmp_path / "dc.wav", -1000, dc=0.5)
    res = runner.invoke(
        app, ["data", "degrade", str(src), str(tmp_path / "o.wav"), "--op", "noise:kind=gaussian,snr_db=10"]
    )
    assert res.exit_code == 1 and "Traceback" not in res.output, res.output
    assert res.output.splitlines() == [
        "error: signal is constant (a DC offset of 0.5, no variation): no speech to set an SNR against"
    ]


def test_degrade_reports_the_snr_the_written_file_holds(tmp_path: Path) -> None:
    """At −80 dBFS the 16-bit file's quantisation adds noise: the SNR it holds is measured (an
    independent re-measure here) and said; at −20 dBFS it equals the mix's, and nothing is said."""
    import json

    import numpy as np
    import soundfile as sf

    for dbfs, noted in ((-80.0, True), (-20.0, False)):
        src, out = _tone(tmp_path / f"t{-dbfs:g}.wav", dbfs), tmp_path / f"o{-dbfs:g}.wav"
        res = runner.invoke(
            app, ["data", "degrade", str(src), str(out), "--op", "noise:kind=gaussian,snr_db=10", "--json"]
        )
        assert res.exit_code == 0, res.output
        rec = json.loads(res.output)["realised"][0]
        x, y = sf.read(src)[0], sf.read(out)[0]
        truth = 10 * np.log10(np.mean(x**2) / np.mean((y - x) ** 2))  # every sample of a tone is active
        assert rec["snr_db_in_file"] == pytest.approx(truth, abs=1e-6)
        assert rec["snr_db_achieved"] == pytest.approx(10.0)
        assert bool(abs(truth - 10.0) > 0.5) is noted
        text = runner.invoke(
            app, ["data", "degrade", str(src), str(tmp_path / "p.wav"), "--op", "noise:kind=gaussian,snr_db=10"]
        )
        said = f"holds {truth:.1f} dB SNR, not 10.0" in " ".join(text.output.split())
        assert said is noted, text.output
        (tmp_path / "p.wav").unlink()


# ---- folders of runs ---------------------------------------------------------------------------


def _folder_with_a_cm_run(tmp_path: Path) -> Path:
    """Two speaker-verification runs and a countermeasure run (its kind from its resolved
    experiment; a CM run has results rows but no trials.parquet), the second run errored in 2 of
    its 4 cells (run.json errored_cells, their rows absent) and in an analysis."""
    import json
    import shutil

    folder = tmp_path / "runs"
    means = {"m": {(g, n): 2.0 for g in ("female", "male") for n in ("clean", "n5")}}
    gender_noise_run(folder / "a", means, n=4, m=3)
    gender_noise_run(folder / "b", {"k": means["m"]}, n=4, m=3)
    results = pd.read_csv(folder / "b" / "results.csv")
    gone = results["cell"].iloc[2:].tolist()
    results.iloc[:2].to_csv(folder / "b" / "results.csv", index=False)
    errored = [f"cell {c} / k: 16 utterance(s) failed" for c in gone] + ["analysis: no reference cell"]
    (folder / "b" / "run.json").write_text(json.dumps({"run_id": "b", "errored_cells": errored}))
    cm = folder / "cm"
    cm.mkdir()
    shutil.copy(folder / "a" / "results.csv", cm / "results.csv")
    (cm / "experiment.resolved.json").write_text(json.dumps({"name": "C", "countermeasures": {"models": ["aasist-l"]}}))
    return folder


def test_a_cm_run_in_a_folder_is_left_out_of_the_leaderboard_and_card_with_a_note(tmp_path: Path) -> None:
    folder = _folder_with_a_cm_run(tmp_path)
    note = (
        "note: left out 1 run(s) that are not speaker-verification runs: cm (countermeasure): they have no "
        "per-trial speaker-verification scores to compare"
    )
    board = runner.invoke(app, ["runs", "leaderboard", str(folder), "--bootstrap", "200"])
    assert board.exit_code == 0 and "Traceback" not in board.output, board.output
    assert note in " ".join(board.output.split())
    card = runner.invoke(app, ["runs", "card", "m", str(folder), "--bootstrap", "200", "--out", str(tmp_path / "c")])
    assert card.exit_code == 0 and "Traceback" not in card.output, card.output
    assert note in " ".join(card.output.split())
    only = runner.invoke(app, ["runs", "leaderboard", str(folder / "cm"), "--bootstrap", "200"])
    assert only.exit_code == 1 and only.output.startswith("error: no speaker-verification run among "), only.output


def test_the_inventory_says_each_runs_kind_and_cells_done_of_the_total(tmp_path: Path) -> None:
    from interbias.analysis.across.inventory import display, inventory

    folder = _folder_with_a_cm_run(tmp_path)
    frame = inventory([folder]).set_index("run")
    assert frame["kind"].to_dict() == {"a": "verification", "b": "verification", "cm": "countermeasure"}
    assert frame["n_cells"].to_dict() == {"a": 4, "b": 2, "cm": 4}
    assert frame["n_cells_errored"].to_dict() == {"a": 0, "b": 2, "cm": 0}  # the analysis is not a cell
    shown = display(frame.reset_index()).set_index("run")
    assert shown["cells"].to_dict() == {"a": "4", "b": "2 of 4", "cm": "4"}
    done = runner.invoke(app, ["runs", "inventory", str(folder)], env={"COLUMNS": "80"})
    assert done.exit_code == 0, done.output
    assert not wide_lines(done.output)


# ---- the corpus fingerprint of an altered corpus -----------------------------------------------


def test_a_run_on_an_altered_corpus_says_so_and_compare_warns(tmp_path: Path, tiny_corpus, session_cache) -> None:
    """One trial file of a copy of the tiny corpus altered in place (its manifest unchanged): the
    run counts it a failure 'the file changed', its fingerprint says DIFFERS with 1 changed file
    (was: 'equals the reference', changed_files 0), and compare warns although the manifest
    sha256s are equal."""
    import json
    import shutil

    from conftest import tiny_experiment
    from run_helpers import only_run_dir

    exp = tiny_experiment(tmp_path, trials={"targets": 10, "min_speakers": 4})
    good = runner.invoke(app, ["run", str(exp), "--encoders", "mfcc-stats", "--out", str(tmp_path / "a"), "-q",
                               "--cache-dir", str(session_cache)])  # fmt: skip
    assert good.exit_code == 0, good.output
    run_a = only_run_dir(tmp_path / "a")
    trials = pd.read_parquet(run_a / "trials.parquet")
    cache = tmp_path / "cache"
    copy = cache / "corpora" / tiny_corpus.root.name
    shutil.copytree(tiny_corpus.root, copy)
    (victim,) = [u for u in tiny_corpus.utterances if u.id == str(trials["test"].iloc[0])]
    data = bytearray((copy / victim.path).read_bytes())
    data[-10] ^= 0xFF
    (copy / victim.path).write_bytes(bytes(data))
    bad = runner.invoke(app, ["run", str(exp), "--encoders", "mfcc-stats", "--out", str(tmp_path / "b"),
                              "--cache-dir", str(cache), "--max-failure-share", "0.5"])  # fmt: skip
    assert bad.exit_code == 0 and "Traceback" not in bad.output, bad.output
    text = " ".join(bad.output.split())
    assert (
        "corpus fingerprint: DIFFERS from the reference" in text and "1 file(s) differ from what the manifest" in text
    )
    run_b = only_run_dir(tmp_path / "b")
    record = json.loads((run_b / "run.json").read_text())
    assert record["corpus"]["fingerprint"]["changed_files"] == 1
    assert record["corpus"]["fingerprint"]["status"] == "differs"
    assert any("(the file changed)" in f.get("error", json.dumps(f)) for f in record["failures"])
    assert (
        record["corpus"]["manifest_sha256"] == json.loads((run_a / "run.json").read_text())["corpus"]["manifest_sha256"]
    )
    res = runner.invoke(app, ["runs", "compare", str(run_a), str(run_b)])
    assert "Traceback" not in res.output
    assert (
        "warning: the two runs' corpora have the same manifest but not the same audio (files that differ from "
        "what the manifest records: 0 vs 1" in " ".join(res.output.split())
    )
    same = runner.invoke(app, ["runs", "compare", str(run_a), str(run_a)])
    assert same.exit_code == 0 and "warning" not in same.output, same.output


def test_compare_warns_when_the_same_trials_read_other_audio(tmp_path: Path) -> None:
    import json

    def folder(name: str, audio: str, trials: str = "t" * 64) -> Path:
        path = tmp_path / name
        path.mkdir()
        pd.DataFrame({"experiment": ["E"], "cell": ["c"], "model": ["M"], "eer": [0.1]}).to_csv(
            path / "results.csv", index=False
        )
        corpus = {"name": "mine", "manifest_sha256": "m" * 64, "audio_sha256": audio}
        (path / "run.json").write_text(json.dumps({"corpus": corpus, "trials": {"sha256": trials}}))
        return path

    a, b, c, d = folder("a", "1" * 64), folder("b", "2" * 64), folder("c", "1" * 64), folder("d", "2" * 64, "u" * 64)
    res = runner.invoke(app, ["runs", "compare", str(a), str(b)])
    assert "; the audio of the same trials differs in content): differences include the corpus" in " ".join(
        res.output.split()
    )
    for other in (c, d):  # the same audio; other trials (other files: no verdict from the content)
        assert "warning" not in runner.invoke(app, ["runs", "compare", str(a), str(other)]).output
