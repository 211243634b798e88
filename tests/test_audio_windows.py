"""Long recordings embedded by windows (``frontend: {long_audio: window}``): the spans, the
mean pooling checked against embedding each window directly, the config checks, and a run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from run_helpers import run_in_process

from interbias.audio.frontend import FrontEnd
from interbias.audio.windows import window_spans
from interbias.corpora.manifest import Manifest, Utterance
from interbias.embedding.tasks import EmbedContext, EmbedTask, ExecStats, embed_batch, prepare
from interbias.encoders import load_encoder
from interbias.experiments.sections import parse_frontend
from interbias.operators import Chain
from interbias.utils.errors import ConfigError
from interbias.utils.seeding import derive_rng

RATE = 16000


def test_window_spans_cover_the_file() -> None:
    assert window_spans(10 * RATE, RATE, 3.0, 1.5) == [
        (0, 48000),
        (24000, 72000),
        (48000, 96000),
        (72000, 120000),
        (96000, 144000),
        (112000, 160000),
    ]
    assert window_spans(2 * RATE, RATE, 3.0, 1.5) == [(0, 2 * RATE)]  # at most one window: the file
    assert window_spans(6 * RATE, RATE, 3.0, 3.0) == [(0, 48000), (48000, 96000)]


def test_a_60_s_file_is_the_mean_of_its_window_embeddings(tmp_path: Path) -> None:
    rng = derive_rng("windows-60s")
    t = np.arange(60 * RATE) / RATE
    x = (0.2 * np.sin(2 * np.pi * (150 + 50 * np.sin(t / 3)) * t) + 0.01 * rng.standard_normal(len(t))).astype(
        np.float32
    )
    sf.write(str(tmp_path / "long.wav"), x, RATE, subtype="FLOAT")
    man = Manifest("t", tmp_path, (Utterance(id="long", path="long.wav", speaker="s"),))
    enc = load_encoder("mfcc-stats")
    fe = FrontEnd(long_audio="window", window_s=4.0, hop_s=2.0)
    task = EmbedTask("long", "0" * 64, frozenset(), ((Chain(), (enc.fingerprint,)),))
    ready, failed = prepare(EmbedContext(fe, man, tmp_path), task)
    assert failed == [] and len(ready[0].wave) == len(x)  # not truncated at max_duration_s
    spans = window_spans(len(x), RATE, 4.0, 2.0)
    assert ready[0].windows == tuple(spans) and ready[0].realised[0]["frontend"]["windows"] == len(spans) == 29
    got = embed_batch(enc, ready, ExecStats())[0].vector
    each = [np.asarray(enc.embed([x[a:b]])[0], np.float64) for a, b in spans]
    want = np.mean(each, axis=0)
    np.testing.assert_allclose(got, want / np.linalg.norm(want), rtol=0, atol=1e-6)
    # truncate mode: the first 10 s, one embedding
    ready, _ = prepare(EmbedContext(FrontEnd(), man, tmp_path), task)
    assert len(ready[0].wave) == 10 * RATE and ready[0].windows is None


def test_long_audio_config_is_checked_and_truncate_keeps_the_fingerprint() -> None:
    assert FrontEnd(long_audio="truncate", window_s=9.0).fingerprint() == FrontEnd().fingerprint()
    assert "long_audio" not in FrontEnd().record()
    fe = parse_frontend({"long_audio": "window", "window_s": 5, "hop_s": 2.5}, "x.yaml")
    assert (fe.long_audio, fe.window_s, fe.hop_s) == ("window", 5.0, 2.5)
    assert fe.fingerprint()["window_s"] == 5.0
    with pytest.raises(ConfigError) as exc:
        parse_frontend({"long_audio": "window", "hop_s": 0}, "x.yaml")
    assert str(exc.value) == "x.yaml: frontend.hop_s: must be a number of seconds above 0, got 0"
    with pytest.raises(ConfigError, match="window_s and hop_s apply with long_audio: window"):
        parse_frontend({"window_s": 3}, "x.yaml")
    with pytest.raises(ConfigError, match=r"frontend\.long_audio: 'chunk' is not one of truncate, window"):
        parse_frontend({"long_audio": "chunk"}, "x.yaml")


def test_a_file_shorter_than_the_window_is_refused_under_every_chain(tmp_path: Path) -> None:
    """2.5 s of audio under a 3 s window: one counted failure per chain (the same reason clean and
    noisy, before any chain), where truncate mode embeds it; exactly one window long is kept."""
    from interbias.operators import parse_chain

    rng = derive_rng("windows-short")
    for name, seconds in (("short", 2.5), ("exact", 3.0)):
        t = np.arange(int(seconds * RATE)) / RATE
        x = (0.2 * np.sin(2 * np.pi * 180 * t) + 0.01 * rng.standard_normal(len(t))).astype(np.float32)
        sf.write(str(tmp_path / f"{name}.wav"), x, RATE, subtype="FLOAT")
    man = Manifest(
        "t",
        tmp_path,
        tuple(Utterance(id=n, path=f"{n}.wav", speaker="s") for n in ("short", "exact")),
    )
    fe = FrontEnd(long_audio="window", window_s=3.0, hop_s=1.5)
    noisy = parse_chain([{"op": "noise", "kind": "gaussian", "snr_db": 5}], where="t")
    chains = ((Chain(), ("e",)), (noisy, ("e",)))
    ready, failed = prepare(EmbedContext(fe, man, tmp_path), EmbedTask("short", "0" * 64, frozenset(), chains))
    assert ready == [] and len(failed) == 2
    assert {f.chain_fp for f in failed} == {Chain().fingerprint, noisy.fingerprint}
    assert {f.error for f in failed} == {
        f"{tmp_path / 'short.wav'}: 2.500 s is shorter than the 3 s window (frontend.long_audio: window); nothing to embed"
    }
    ready, failed = prepare(EmbedContext(fe, man, tmp_path), EmbedTask("exact", "0" * 64, frozenset(), chains))
    assert failed == [] and [p.windows for p in ready] == [((0, 3 * RATE),)] * 2
    ready, failed = prepare(EmbedContext(FrontEnd(), man, tmp_path), EmbedTask("short", "0" * 64, frozenset(), chains))
    assert failed == [] and len(ready) == 2


def test_a_windowed_run_counts_its_windowed_utterances(tmp_path: Path, session_cache: Path, tiny_corpus) -> None:
    from conftest import tiny_experiment

    fe = {"long_audio": "window", "window_s": 1.0, "hop_s": 0.5}
    exp = tiny_experiment(tmp_path, trials={"targets": 6, "min_speakers": 4}, frontend=fe)
    out = run_in_process(exp, tmp_path, session_cache)
    res = out.results
    assert len(res) == 4 and "n_windowed" in res.columns
    # every utterance of the tiny corpus is longer than 1 s: each (utterance, side) of a cell is windowed
    from interbias.run.rundir import RunDir

    tl = RunDir(out.run_dir).read_trials()
    for row in res.itertuples(index=False):
        sub = tl.for_stratum(row.stratum)
        assert row.n_windowed == sub["enrol"].nunique() + sub["test"].nunique()
