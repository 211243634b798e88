"""Voice activity detection in the front end (``frontend: {vad: ...}``): what each VAD keeps on
constructed signals, the refusal of inputs without speech (the same in every cell, decided
before any chain), the kept-speech share in the front end's record, and the config checks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from run_helpers import run_in_process

from interbias.audio.frontend import SPEECH_FLOOR_DBFS, FrontEnd, load
from interbias.audio.vad import ENERGY_FRAME_S, keep_speech, speech_mask
from interbias.corpora.manifest import Manifest, Utterance
from interbias.embedding.tasks import EmbedContext, EmbedTask, prepare
from interbias.experiments.sections import parse_frontend
from interbias.operators import Chain, parse_chain
from interbias.utils.errors import AudioError, ConfigError
from interbias.utils.seeding import derive_rng

RATE = 16000


def _bursts(rng: np.random.Generator) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """4 s of -96 dBFS dither with three voiced bursts (harmonics of 120 Hz, 0.3 full scale)."""
    x = rng.standard_normal(4 * RATE) * 10 ** (-96 / 20)
    spans = [
        (int(0.5 * RATE) + 37, int(1.1 * RATE) + 11),
        (int(1.9 * RATE) + 5, int(2.3 * RATE)),
        (int(3.0 * RATE) + 101, int(3.7 * RATE)),
    ]
    t = np.arange(len(x)) / RATE
    voiced = sum(np.sin(2 * np.pi * 120 * k * t) / k for k in range(1, 8))
    for a, b in spans:
        x[a:b] += 0.3 * voiced[a:b] / np.abs(voiced).max()
    return x.astype(np.float32), spans


def test_energy_vad_keeps_the_bursts_within_one_frame() -> None:
    x, spans = _bursts(derive_rng("vad-bursts"))
    mask = speech_mask(x, RATE, "energy", SPEECH_FLOOR_DBFS)
    flen = int(ENERGY_FRAME_S * RATE)
    inside = np.zeros(len(x), bool)
    for a, b in spans:
        inside[a:b] = True
        assert mask[a + flen : b - flen].all()  # every whole frame of a burst is kept
    near = np.convolve(inside, np.ones(2 * flen + 1), mode="same") > 0  # within one frame of a burst
    assert not mask[~near].any()  # nothing farther than one frame from a burst
    kept, share = keep_speech(x, RATE, "energy", 1.0, "x", SPEECH_FLOOR_DBFS)
    assert share == pytest.approx(mask.mean()) and len(kept) == mask.sum()
    assert abs(len(kept) - inside.sum()) <= 2 * len(spans) * flen


def test_webrtc_vad_keeps_the_bursts_and_drops_the_dither() -> None:
    """The WebRTC VAD keeps every burst whole; it starts within one 30 ms frame of a burst and,
    with its hangover, ends within five frames after it; the dither between is dropped."""
    pytest.importorskip("webrtcvad")
    x, spans = _bursts(derive_rng("vad-bursts"))
    mask = speech_mask(x, RATE, "webrtc", SPEECH_FLOOR_DBFS)
    flen = int(0.03 * RATE)
    allowed = np.zeros(len(x), bool)
    for a, b in spans:
        assert mask[a:b].all()
        allowed[max(0, a - flen) : b + 5 * flen] = True
    assert not mask[~allowed].any()


def _file(path: Path, x: np.ndarray) -> Path:
    sf.write(str(path), x, RATE, subtype="FLOAT")
    return path


def test_an_input_without_speech_is_refused_the_same_in_a_clean_and_a_noisy_cell(tmp_path: Path) -> None:
    pytest.importorskip("webrtcvad")
    rng = derive_rng("vad-dither")
    hiss = (rng.standard_normal(3 * RATE) * 10 ** (-70 / 20)).astype(np.float32)  # above the floor, no speech
    _file(tmp_path / "hiss.wav", hiss)
    man = Manifest("t", tmp_path, (Utterance(id="hiss", path="hiss.wav", speaker="s"),))
    noisy = parse_chain([{"op": "noise", "kind": "gaussian", "snr_db": 5}], where="t")
    task = EmbedTask("hiss", "0" * 64, frozenset(), ((Chain(), ("enc",)), (noisy, ("enc",))))
    ready, failed = prepare(EmbedContext(FrontEnd(vad="webrtc"), man, tmp_path), task)
    assert ready == [] and len(failed) == 2
    assert {f.error for f in failed} == {f"{tmp_path / 'hiss.wav'}: the webrtc VAD found no speech; nothing to embed"}
    # without a VAD the same file is embedded in both cells
    ready, failed = prepare(EmbedContext(FrontEnd(), man, tmp_path), task)
    assert len(ready) == 2 and failed == []


def test_the_front_end_record_holds_the_kept_speech_share(tmp_path: Path) -> None:
    x, _ = _bursts(derive_rng("vad-bursts"))
    _file(tmp_path / "b.wav", x)
    man = Manifest("t", tmp_path, (Utterance(id="b", path="b.wav", speaker="s"),))
    task = EmbedTask("b", "0" * 64, frozenset(), ((Chain(), ("enc",)),))
    ready, failed = prepare(EmbedContext(FrontEnd(vad="energy"), man, tmp_path), task)
    want = float(speech_mask(x, RATE, "energy", SPEECH_FLOOR_DBFS).mean())
    assert failed == [] and ready[0].realised[0]["frontend"]["speech_share"] == pytest.approx(want)
    assert len(ready[0].wave) == round(want * len(x))
    ready, _ = prepare(EmbedContext(FrontEnd(), man, tmp_path), task)
    assert "speech_share" not in ready[0].realised[0]["frontend"]  # no VAD: the record as before
    # noise and other talkers' audio are loaded without the VAD
    assert len(load(tmp_path / "b.wav", FrontEnd(vad="energy")).samples) == len(x)


def test_vad_config_is_checked_and_none_keeps_the_fingerprint() -> None:
    assert FrontEnd(vad="none").fingerprint() == FrontEnd().fingerprint() and "vad" not in FrontEnd().record()
    assert FrontEnd(vad="energy").fingerprint()["vad"] == "energy"
    assert parse_frontend({"vad": "webrtc"}, "x.yaml").vad == "webrtc"
    with pytest.raises(ConfigError) as exc:
        parse_frontend({"vad": "silero", "sample_rate_hz": 22050}, "x.yaml")
    assert str(exc.value) == (
        "x.yaml: frontend.vad: silero does not support 22050 Hz (frontend.sample_rate_hz; it takes 8000, 16000 Hz)"
    )
    with pytest.raises(ConfigError, match=r"frontend.vad: 'loud' is not one of none, energy, webrtc, silero"):
        parse_frontend({"vad": "loud"}, "x.yaml")
    with pytest.raises(AudioError, match=r"the energy VAD kept 0\.400 s of speech, shorter than the minimum 1 s"):
        x = np.zeros(2 * RATE, np.float32)
        x[RATE : RATE + int(0.4 * RATE)] = 0.3 * np.sin(2 * np.pi * 200 * np.arange(int(0.4 * RATE)) / RATE)
        keep_speech(x, RATE, "energy", 1.0, "f", SPEECH_FLOOR_DBFS)


def test_a_run_with_a_vad_records_the_share_in_every_cell(tmp_path: Path, session_cache: Path, tiny_corpus) -> None:
    import json

    from conftest import tiny_experiment

    from interbias.run.rundir import RunDir

    exp = tiny_experiment(tmp_path, trials={"targets": 6, "min_speakers": 4}, frontend={"vad": "energy"})
    out = run_in_process(exp, tmp_path, session_cache)
    assert len(out.results) == 4 and (out.results["n_dropped_trials"] == 0).all()
    ops = RunDir(out.run_dir).read_operations()
    shares = {}
    for row in ops.itertuples(index=False):
        share = json.loads(row.realised)[0]["frontend"]["speech_share"]
        assert 0 < share <= 1
        shares.setdefault(row.utterance, set()).add(share)
    assert all(len(v) == 1 for v in shares.values())  # one share per input, whatever the chain


@pytest.mark.parametrize("vad", ["energy", "webrtc", "silero"])
def test_every_vad_finds_synthetic_speech_between_stretches_of_dither(vad: str, tiny_corpus) -> None:
    """Two copies of a corpus utterance with dither around them: each VAD keeps most of both
    and nothing more than 250 ms away from them (silero-vad restores torch's thread count)."""
    pytest.importorskip({"energy": "numpy", "webrtc": "webrtcvad", "silero": "silero_vad"}[vad])
    y = load(tiny_corpus.resolve(next(iter(tiny_corpus))), FrontEnd(max_duration_s=None)).samples
    rng = derive_rng("vad-speech")
    gap = [(rng.standard_normal(n) * 10 ** (-96 / 20)).astype(np.float32) for n in (RATE, 24000, RATE)]
    x = np.concatenate([gap[0], y, gap[1], y, gap[2]])
    spans = [(RATE, RATE + len(y)), (RATE + len(y) + 24000, RATE + 2 * len(y) + 24000)]
    import torch

    threads = torch.get_num_threads()
    mask = speech_mask(x, RATE, vad, SPEECH_FLOOR_DBFS)
    assert torch.get_num_threads() == threads
    allowed = np.zeros(len(x), bool)
    for a, b in spans:
        assert mask[a:b].mean() > 0.8
        allowed[a - RATE // 4 : b + RATE // 4] = True
    assert not mask[~allowed].any()
