"""The front end's ``trim_silence`` option: leading and trailing digital silence removed before
the checks, recorded in the fingerprint, the cache key, the resolved experiment and the run's
per-utterance record; off by default, where nothing changes."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from interbias.audio.frontend import FrontEnd, load
from interbias.audio.segments import DIGITAL_SILENCE, padding, trim_padding
from interbias.corpora.manifest import Manifest
from interbias.embedding.cache import EmbeddingCache, cache_chain_key
from interbias.embedding.stage import Embedder
from interbias.encoders import load_encoders
from interbias.experiments.schema import find_experiment, load_experiment, with_trim_silence
from interbias.experiments.sections import parse_frontend
from interbias.operators import Chain, parse_chain
from interbias.utils.errors import ConfigError
from interbias.utils.paths import conditions_dir

RATE = 8000


def voice(seconds: float) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    x = sum(np.sin(2 * np.pi * 140 * k * t) / k for k in range(1, 8)) * (0.6 + 0.4 * np.sin(2 * np.pi * 2 * t))
    return (0.2 * x).astype(np.float32)


def test_padding_counts_samples_within_one_16_bit_step_of_zero() -> None:
    x = np.concatenate([np.zeros(5), [DIGITAL_SILENCE, 0.5, 0.0, -0.25], np.full(3, -DIGITAL_SILENCE)])
    assert padding(x) == (6, 3)
    trimmed, lead, trail = trim_padding(x)
    assert (lead, trail) == (6, 3) and trimmed.tolist() == [0.5, 0.0, -0.25]
    assert padding(np.zeros(4)) == (4, 0)
    silent, lead, trail = trim_padding(np.zeros(4))  # left whole: the signal checks refuse it
    assert len(silent) == 4 and (lead, trail) == (0, 0)


def test_trim_changes_the_fingerprint_and_cache_key_only_when_on() -> None:
    off, on = FrontEnd(), FrontEnd(trim_silence=True)
    assert "trim_silence" not in off.fingerprint() and "trim_silence" not in off.record()
    assert on.fingerprint() == {**off.fingerprint(), "trim_silence": True}
    assert on.record()["trim_silence"] is True
    chain = Chain()
    assert cache_chain_key(chain, frozenset(), off) != cache_chain_key(chain, frozenset(), on)
    assert cache_chain_key(chain, frozenset(), off) == f"{chain.key(frozenset())}@fef461eb19"  # as before the option


def test_yaml_and_run_option_set_trim_and_the_resolved_definition(tmp_path: Path) -> None:
    assert parse_frontend({"trim_silence": True}, "x.yaml").trim_silence is True
    assert parse_frontend({}, "x.yaml").trim_silence is False
    with pytest.raises(ConfigError, match=r"x\.yaml: frontend\.trim_silence: true or false, got 'yes'"):
        parse_frontend({"trim_silence": "yes"}, "x.yaml")
    exp = load_experiment(find_experiment("E16", conditions_dir()), corpus="synthetic")
    trimmed = with_trim_silence(exp)
    assert trimmed.frontend == replace(exp.frontend, trim_silence=True)
    assert trimmed.resolved()["frontend"]["trim_silence"] is True  # hashed into the run id
    assert "trim_silence" not in (exp.resolved().get("frontend") or {})


def test_trim_removes_the_padding_and_records_it(tmp_path: Path) -> None:
    path = tmp_path / "padded.wav"
    speech = voice(1.5)
    sf.write(path, np.concatenate([np.zeros(800), speech, np.zeros(1200)]), RATE, subtype="PCM_16")
    fe = FrontEnd(sample_rate_hz=RATE)
    whole = load(path, fe, vad=True)
    trimmed = load(path, replace(fe, trim_silence=True), vad=True)
    assert whole.trimmed is None and "trimmed" not in whole.record()
    lead, trail = trimmed.trimmed
    assert 800 <= lead < 800 + 10 and 1200 <= trail < 1200 + 10  # the tone starts at a zero crossing
    assert len(trimmed.samples) == len(whole.samples) - lead - trail
    assert np.array_equal(trimmed.samples, whole.samples[lead : len(whole.samples) - trail])
    assert trimmed.record()["trimmed"] == [lead, trail]


def test_padded_file_refused_without_trim_passes_with_it(tmp_path: Path) -> None:
    """10.5 s of digital silence before 2 s of speech: the front end keeps the first 10 s
    (max_duration_s), all silence, which the chain-output check refuses; trimmed, the speech is
    what is embedded."""
    sf.write(tmp_path / "late.wav", np.concatenate([np.zeros(int(10.5 * RATE)), voice(2.0)]), RATE, subtype="PCM_16")
    (tmp_path / "m.csv").write_text("id,path,speaker\nlate,late.wav,a\n")
    manifest = Manifest.read(tmp_path / "m.csv")
    encoders = load_encoders(["mfcc-stats"], "cpu")
    chain = parse_chain([{"op": "gain", "gain_db": -6}], where="test")
    outcomes = {}
    for trim in (False, True):
        cache = EmbeddingCache(tmp_path / f"cache-{trim}.sqlite")
        emb = Embedder(manifest, encoders, cache, FrontEnd(trim_silence=trim))
        emb.run({chain.fingerprint: (chain, {"late"})})
        outcomes[trim] = emb
    refused = outcomes[False].failures[("late", chain.fingerprint)]
    assert "late" in refused and "silen" in refused
    assert not outcomes[True].failures
    front = outcomes[True].realised[("late", chain.fingerprint)][0]["frontend"]
    assert front["trimmed"][0] >= int(10.5 * RATE) and front["truncated"] is False
