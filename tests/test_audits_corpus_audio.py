"""``interbias data info`` reads the audio as a run would: durations, rates, channels, clipping,
padding, and the utterances the front end refuses, decided by the run's own embedding stage."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from typer.testing import CliRunner

from interbias.audio.frontend import FrontEnd
from interbias.audits.corpus_audio import audit_audio
from interbias.cli import app
from interbias.corpora.info import read_for_info
from interbias.embedding.cache import EmbeddingCache
from interbias.embedding.stage import EVERY_CHAIN, Embedder
from interbias.encoders import load_encoders
from interbias.operators import Chain

RATE = 8000
runner = CliRunner()


def voice(seconds: float, level: float = 0.2) -> np.ndarray:
    t = np.arange(int(round(seconds * RATE))) / RATE
    x = sum(np.sin(2 * np.pi * 130 * k * t) / k for k in range(1, 8)) * (0.6 + 0.4 * np.sin(2 * np.pi * 2 * t))
    return (level * x / np.abs(x).max()).astype(np.float32)


def silence(seconds: float) -> np.ndarray:
    return np.zeros(int(round(seconds * RATE)), np.float32)


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """Seven rows: a clean prompt, a padded one with too little signal, a clipped stereo one, a
    short one, two segments of one call (one past its end), a missing file, and one whose
    recorded sha256 is stale."""
    audio = tmp_path / "audio"
    audio.mkdir()
    sf.write(audio / "ok.wav", voice(1.6), RATE, subtype="PCM_16")
    sf.write(audio / "padded.wav", np.concatenate([silence(0.4), voice(0.8), silence(0.3)]), RATE, subtype="PCM_16")
    loud = np.clip(voice(1.5, level=1.4), -1, 32767 / 32768)
    sf.write(audio / "stereo.wav", np.stack([loud, 0.5 * loud], axis=1), RATE, subtype="PCM_16")
    sf.write(audio / "short.wav", voice(0.5), RATE, subtype="PCM_16")
    sf.write(audio / "call.wav", voice(4.0), RATE, subtype="PCM_16")
    sf.write(audio / "stale.wav", voice(1.5), RATE, subtype="PCM_16")
    rows = [
        "id,path,speaker,gender,offset,duration,sha256",
        "ok,audio/ok.wav,a,female,,,",
        "padded,audio/padded.wav,a,female,,,",
        "stereo,audio/stereo.wav,b,male,,,",
        "short,audio/short.wav,b,male,,,",
        "seg1,audio/call.wav,c,male,0.5,2,",
        "seg2,audio/call.wav,c,male,3,2,",
        "gone,audio/gone.wav,c,male,,,",
        f"stale,audio/stale.wav,a,female,,,{'0' * 64}",
    ]
    (tmp_path / "calls.csv").write_text("\n".join(rows) + "\n")
    return tmp_path / "calls.csv"


def run_failures(manifest, frontend: FrontEnd, tmp_path: Path) -> dict[str, str]:
    """What the run's embedding stage refuses, utterance id -> its message."""
    emb = Embedder(manifest, load_encoders(["mfcc-stats"], "cpu"), EmbeddingCache(tmp_path / "c.sqlite"), frontend)
    chain = Chain()
    emb.run({chain.fingerprint: (chain, {u.id for u in manifest})})
    assert all(fp in (chain.fingerprint, EVERY_CHAIN) for _, fp in emb.failures)
    return {uid: msg for (uid, _), msg in emb.failures.items()}


def test_refusals_are_the_runs_own(corpus: Path, tmp_path: Path) -> None:
    manifest = read_for_info(corpus)
    for frontend in (FrontEnd(), FrontEnd(min_duration_s=0.45, trim_silence=True)):
        audit = audit_audio(manifest, frontend)
        refused = {u.id: u.refused for u in audit.refused}
        failures = run_failures(manifest, frontend, tmp_path / str(frontend.min_duration_s))
        assert sorted(refused) == sorted(failures)
        for uid, reason in refused.items():
            assert failures[uid].endswith(reason), (uid, failures[uid], reason)
    assert sorted({u.id for u in audit_audio(manifest, FrontEnd()).refused}) == [
        "gone", "padded", "seg2", "short", "stale",
    ]  # fmt: skip
    assert sorted({u.id for u in audit.refused}) == ["gone", "seg2", "stale"]  # 0.45 s minimum


def test_data_info_reports_the_audio_in_80_columns(corpus: Path) -> None:
    res = runner.invoke(app, ["data", "info", str(corpus)])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert max(map(len, lines)) <= 80
    text = res.output
    assert "audio as the front end reads it (16000 Hz, minimum 1 s, padding not trimmed):" in text
    assert "  duration     min 0.50 s, median 1.50 s, max 2.00 s, total 8.6 s"  # 1.6+1.5+1.5+0.5+2+1.5 in text
    assert "  sample rate  8000 Hz: 6" in text
    assert "  channels     1: 5, 2: 1" in text
    assert "  clipping     1 utterance(s) with samples at full scale" in text
    assert "  padding      1 start, 1 end with >= 20 ms of digital silence (longest 0.40 s)" in text
    assert "  unreadable   2 of 8 utterance(s)" in text  # gone, and seg2 past the end
    assert "  refused      5 of 8: each fails in every cell of a run, for:" in text
    assert "    gone: cannot read audio/gone.wav (No such file or directory)" in text
    assert "    padded: only 0.800 s of its 1.500 s holds signal above -90 dBFS" in text
    assert "    seg2: segment 3 s + 2 s reaches 1.000 s past the end of the 4.000 s file" in text
    assert "    short: 0.500 s is shorter than the minimum 1 s" in text
    assert "    stale: audio/stale.wav has sha256" in text
    assert "  2 of them hold less than 1 s of signal; trimming cannot add signal:" in text


def test_data_info_json_and_options(corpus: Path, tmp_path: Path) -> None:
    res = runner.invoke(app, ["data", "info", str(corpus), "--json", "--trim-silence"])
    assert res.exit_code == 0, res.output
    audio = json.loads(res.output)["audio"]
    assert audio["frontend"]["trim_silence"] is True
    assert audio["n_utterances"] == 8 and audio["n_read"] == 6 and audio["n_refused"] == 5
    assert audio["sample_rates_hz"] == {"8000": 6} and audio["channels"] == {"1": 5, "2": 1}
    by_id = {u["id"]: u for u in audio["utterances"]}
    assert by_id["padded"]["leading_silence_s"] == pytest.approx(0.4, abs=1 / RATE)
    assert by_id["padded"]["signal_s"] == pytest.approx(0.8, abs=0.02)
    assert by_id["seg1"]["duration_s"] == 2.0 and by_id["stereo"]["clipped_samples"] > 0
    assert by_id["ok"]["clipped_samples"] == 0
    counts = json.loads(runner.invoke(app, ["data", "info", str(corpus), "--json", "--no-audio"]).output)
    assert "audio" not in counts and counts["n_utterances"] == 8
    moved = tmp_path / "elsewhere.csv"
    moved.write_text(corpus.read_text())
    (tmp_path / "sub").mkdir()
    res = runner.invoke(app, ["data", "info", str(tmp_path / "sub" / ".." / "elsewhere.csv"), "--data-root", "nope"])
    assert res.output.strip().startswith("error: data root nope does not exist")
    res = runner.invoke(app, ["data", "info", str(moved), "--data-root", str(corpus.parent), "--experiment", "E16"])
    assert res.exit_code == 0 and "  refused      5 of 8" in res.output
