"""The same-text CM set: recorded prompts as bona fide and Debian's synthesisers reading the same
texts. Its rules on stand-in files everywhere; on the installed packages (skipped without them,
failing under CI, where ``make test`` installs them): two builds give the same bytes, every
family is there with its columns, and ``cm score`` -> ``scores cm-eval track1 --by family``
gives each family's EER against every bona fide prompt."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import soundfile as sf
from cm_fixtures import cm_manifest
from real_audio import missing, prompt_voices_or_skip
from typer.testing import CliRunner

from interbias.cli import app
from interbias.corpora.prompts import PromptVoice, prompts, read_transcripts
from interbias.corpora.same_text import SameTextSpec, choose_texts
from interbias.corpora.synthesisers import FAMILIES, VOICES, SynthVoice, synthesise, voice_named
from interbias.utils.errors import CorpusError

cli = CliRunner()
N_TEXTS = 2


def _voice_folder(tmp: Path, held: dict[str, float], texts: dict[str, str]) -> PromptVoice:
    """A stand-in voice folder: ``held[id]`` seconds of tone in 2.5 s of digital silence at 8 kHz."""
    folder = tmp / "xx_YY_f_Test"
    folder.mkdir(parents=True)
    for key, seconds in held.items():
        x = np.zeros(20000, dtype=np.float32)
        n = int(seconds * 8000)
        x[:n] = 0.3 * np.sin(2 * np.pi * 220 * np.arange(n) / 8000)
        sf.write(folder / f"{key}.wav", x, 8000, subtype="PCM_16")
    doc = tmp / "doc" / "asterisk-core-sounds-xx" / "core-sounds-xx.txt.gz"
    doc.parent.mkdir(parents=True)
    with gzip.open(doc, "wt", encoding="utf-8") as fh:
        fh.write("; a comment\n\n" + "".join(f"{k}: {v}\n" for k, v in texts.items()))
    return PromptVoice(folder, "xx", "YY", "female", "Test", doc_dir=tmp / "doc")


def test_texts_are_spoken_prompts_with_enough_signal_at_even_steps(tmp_path) -> None:
    held = {f"p{i}": 1.5 for i in range(6)} | {"short": 0.5, "tone": 2.0, "few": 2.0}
    texts = {f"p{i}": f"Please say number {i} now." for i in range(6)}
    texts |= {"short": "Too little signal to embed.", "tone": "[a beep tone]", "few": "Two words"}
    voice = _voice_folder(tmp_path, held, texts)
    assert read_transcripts(voice.transcripts)["tone"] == "[a beep tone]"
    found = prompts(voice)
    assert [p.id for p in found] == sorted(held)
    chosen = choose_texts(found, SameTextSpec(n_texts=3))
    # eligible: p0..p5 (short lacks signal, tone is no speech, few has two words): steps of 2
    assert [p.id for p in chosen] == ["p0", "p2", "p4"]
    with pytest.raises(CorpusError, match=r"6 prompts qualify .* 7 texts asked for"):
        choose_texts(found, SameTextSpec(n_texts=7))


def test_spec_options_are_checked() -> None:
    assert SameTextSpec.from_options({"texts": "5", "rate_hz": "16000"}) == SameTextSpec(n_texts=5, rate_hz=16000)
    with pytest.raises(CorpusError, match="unknown option 'voices'; valid: min_words, rate_hz, texts"):
        SameTextSpec.from_options({"voices": "x"})
    with pytest.raises(CorpusError, match="texts must be at least 1"):
        SameTextSpec.from_options({"texts": "0"})
    with pytest.raises(CorpusError, match="rate_hz must be between 1000 and 384000 Hz, got 500"):
        SameTextSpec.from_options({"rate_hz": "500"})
    res = cli.invoke(app, ["data", "build", "same-text", "--speakers", "4"])
    assert res.exit_code == 1 and "--speakers does not apply" in res.output


def test_a_missing_program_names_its_package_and_a_crash_is_one_line(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    assert voice_named("flite-slt").missing() == "flite not found"
    assert voice_named("festival-slt-hts").install_hint() == "apt-get install festival festvox-us-slt-hts"
    fake = tmp_path / "bin" / "flite"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\nkill -SEGV $$\n")
    fake.chmod(0o755)
    problem = synthesise(voice_named("flite-awb"), "Hello there.", tmp_path / "out.wav", tmp_path)
    assert problem == "flite-awb: killed by SIGSEGV"
    fake.write_text("#!/bin/sh\nexit 0\n")
    assert synthesise(voice_named("flite-awb"), "Hi.", tmp_path / "o.wav", tmp_path) == (
        "flite-awb: exit 0 but no audio written"
    )
    with pytest.raises(CorpusError, match="unknown synthetic voice 'flite-xyz'; valid: flite-kal16, "):
        voice_named("flite-xyz")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    prompt_voices_or_skip(("en",))
    absent = [f"{v.name}: {v.install_hint()}" for v in VOICES if v.missing()]
    if absent:
        missing("synthesisers are not installed: " + "; ".join(absent))
    tmp = tmp_path_factory.mktemp("same-text")
    outs = []
    for name in ("a", "b"):
        args = ["data", "build", "same-text", "--set", f"texts={N_TEXTS}", "--cache-dir", str(tmp / name), "-q"]
        res = cli.invoke(app, args)
        assert res.exit_code == 0, res.output
        outs.append(res.output)
    again = cli.invoke(app, ["data", "build", "same-text", "--set", f"texts={N_TEXTS}", "--cache-dir", str(tmp / "a")])
    folders = [next((tmp / n / "corpora").glob("same-text-v*")) for n in ("a", "b")]
    return {"tmp": tmp, "folders": folders, "outputs": outs, "again": again.output}


def test_two_builds_are_byte_identical(built) -> None:
    a, b = built["folders"]
    assert (a / "manifest.jsonl").read_bytes() == (b / "manifest.jsonl").read_bytes()
    files = sorted(p.relative_to(a) for p in (a / "audio").rglob("*.flac"))
    assert len(files) == N_TEXTS * (1 + len(VOICES))
    for rel in files:
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel
    assert "already built (reused)" in built["again"]


def test_every_family_reads_the_same_texts_at_one_rate(built) -> None:
    rows = [json.loads(line) for line in (built["folders"][0] / "manifest.jsonl").read_text().splitlines()]
    frame = pd.DataFrame(rows)
    bona = frame[frame.label == "bonafide"]
    assert set(bona.family) == {"recorded"} and set(bona.gender) == {"female"} and len(bona) == N_TEXTS
    spoof = frame[frame.label == "spoof"]
    assert set(spoof.family) == set(FAMILIES) and (spoof.attack == spoof.family).all()
    assert set(spoof.voice) == {v.name for v in VOICES}
    for v in VOICES:
        mine = spoof[spoof.voice == v.name]
        assert set(mine.text_id) == set(bona.text_id) and set(mine.gender) == {v.gender}
        assert list(mine.text) == list(bona.set_index("text_id").loc[mine.text_id, "text"])
    assert set(frame.sample_rate_hz) == {8000} and set(frame.split) == {"eval"}
    for row in frame.itertuples():
        data, rate = sf.read(built["folders"][0] / row.path)
        assert rate == 8000 and len(data) / rate == pytest.approx(row.duration_s, abs=1e-6)
        assert np.abs(data).max() < 1.0 and (float(row.gain_db) < 0) == (np.abs(data).max() > 0.98)
    native = {r.voice: int(r.source_rate_hz) for r in frame.itertuples()}
    assert native["flite-slt"] == 16000 and native["festival-slt-hts"] == 32000 and native["espeak-ng-en-us"] == 22050


def _package_eer(bona: np.ndarray, spoof: np.ndarray) -> float:
    """Restated: reject the k lowest scores for k = 0..N; the first k where |miss − fa| is least."""
    scores = np.concatenate([bona, spoof])
    is_bona = np.concatenate([np.ones(len(bona)), np.zeros(len(spoof))])
    order = np.argsort(scores, kind="mergesort")
    best = None
    for k in range(len(scores) + 1):
        rejected = is_bona[order[:k]]
        miss, fa = rejected.sum() / len(bona), (len(spoof) - (k - rejected.sum())) / len(spoof)
        if best is None or abs(miss - fa) < best[0]:
            best = (abs(miss - fa), (miss + fa) / 2)
    return best[1]


def test_cm_eval_gives_each_familys_eer_against_every_bona_fide_prompt(built, tmp_path) -> None:
    from interbias.cm.gmm_train import train_gmm

    folder = tmp_path / "gmm"
    settings = {"duration_s": "0.5", "n_components": "3", "max_iter": "4"}
    train_gmm("GMM-lfcc", cm_manifest(tmp_path / "train"), preset="small", settings=settings, out=folder, log=print)
    manifest = built["folders"][0] / "manifest.jsonl"
    scores = tmp_path / "scores.csv"
    args = ["cm", "score", "GMM-lfcc", "--checkpoint", str(folder), "--manifest", str(manifest), "--out", str(scores)]
    res = cli.invoke(app, [*args, "-q"])
    assert res.exit_code == 0, res.output
    table = pd.read_csv(scores)
    assert {"family", "voice", "gender", "text_id"} <= set(table.columns) and len(table) == N_TEXTS * (1 + len(VOICES))
    # log_odds, the LLR: this tiny GMM's posterior ("score") is 1.0 on every file (saturated)
    res = cli.invoke(
        app, ["scores", "cm-eval", "track1", str(scores), "--by", "family", "--json", "--score-column", "log_odds"]
    )
    assert res.exit_code == 0, res.output
    rows = {r["value"]: r for r in json.loads(res.output)["tables"]["family"]}
    assert set(rows) == set(FAMILIES)
    bona = table.loc[table.label == "bonafide", "log_odds"].to_numpy()
    for family, row in rows.items():
        spoof = table.loc[table.family == family, "log_odds"].to_numpy()
        assert len(set(spoof) | set(bona)) > 1, family  # scores that rank, so the EER is defined
        assert (row["n_bonafide"], row["n_spoof"]) == (N_TEXTS, len(spoof))
        assert row["eer"] == pytest.approx(_package_eer(bona, spoof), abs=1e-12), family


def test_ci_is_told_apart_from_a_developer_machine(monkeypatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI is set but x is missing"):
        missing("x is missing")
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match=r"x is missing \(make test installs it"):
        missing("x is missing")


def test_a_voice_missing_here_is_left_out_by_name_with_its_packages(tmp_path, monkeypatch) -> None:
    prompt_voices_or_skip(("en",))
    espeak = voice_named("espeak-ng-en-us")
    if espeak.missing():
        missing(f"espeak-ng is not installed: {espeak.install_hint()}")
    absent = SynthVoice("festival-nope", "hts", "festival", "no_such_voice", "female", ("festival", "festvox-nope"))
    monkeypatch.setattr("interbias.corpora.same_text.VOICES", (espeak, absent))
    res = cli.invoke(app, ["data", "build", "same-text", "--set", "texts=1", "--cache-dir", str(tmp_path), "-q"])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert [line for line in lines if line.startswith("left out: ")] == [
        f"left out: festival-nope (hts): {absent.missing()}; apt-get install festival festvox-nope"
    ]
    assert "  formant        1 voice(s)     1 files" in lines and "  hts" not in res.output
