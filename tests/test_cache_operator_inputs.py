"""The embedding cache never serves audio other than what a run records: an operator's inputs
(the talker pool crosstalk and babble draw from, noise and impulse-response files) are part of
the cache key, so a cache shared with a differently drawn design gives the empty cache's bytes."""

from __future__ import annotations

import copy
import dataclasses
import shutil
import sqlite3
from pathlib import Path

import pytest
import yaml
from run_helpers import manifest_file, only_run_dir, outputs, run_args, run_child

from interbias.corpora.manifest import Manifest
from interbias.operators import Chain, make_operator

CONDITIONS = Path(__file__).resolve().parent.parent / "conditions"


def _e16(tmp: Path, manifest: Path, name: str) -> Path:
    """E16's synthetic variant (gender × crosstalk) on ``manifest``: clean and crosstalk at 5 dB."""
    data = yaml.safe_load((CONDITIONS / "E16.yaml").read_text())
    data.update(copy.deepcopy(data.pop("variants")["synthetic"]))
    noise = next(f for f in data["factors"] if f["name"] == "noise")
    noise["levels"] = {k: v for k, v in noise["levels"].items() if k in ("clean", "crosstalk_5")}
    data.update(name="E16", corpus={"manifest": str(manifest)}, trials={"targets": 24, "min_speakers": 4})
    path = tmp / name / "E16.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _with_extra_talker(corpus: Manifest, folder: Path) -> Path:
    """The corpus plus one more voice outside the experiment's genders: the same trials, but a
    crosstalk talker pool with another speaker in it."""
    path = manifest_file(corpus, folder)
    utts = list(Manifest.read(path).utterances)
    extra = []
    for u in utts:
        if u.speaker == utts[0].speaker:
            copy_path = folder / "extra" / f"{u.id}.flac"
            copy_path.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(u.path, copy_path)
            extra.append(
                dataclasses.replace(u, id=f"zz_{u.id}", speaker="zz_extra", gender="unknown", path=str(copy_path))
            )
    Manifest(corpus.name, folder, tuple(utts + extra)).write(path)
    return path


@pytest.mark.slow  # 19 s; the content-key tests of this file run in make test
def test_shared_cache_gives_the_empty_cache_bytes(tmp_path: Path, tiny_corpus) -> None:
    plain = _e16(tmp_path, manifest_file(tiny_corpus, tmp_path / "plain"), "a")
    other = _e16(tmp_path, _with_extra_talker(tiny_corpus, tmp_path / "other"), "b")
    shared, empty = tmp_path / "shared-cache", tmp_path / "empty-cache"
    first = run_child(run_args(other, tmp_path / "out-other", shared))
    assert first.returncode == 0, first.stderr
    runs = {}
    for label, cache in (("shared", shared), ("empty", empty)):
        res = run_child(run_args(plain, tmp_path / f"out-{label}", cache))
        assert res.returncode == 0, res.stderr
        runs[label] = outputs(only_run_dir(tmp_path / f"out-{label}"))
    assert runs["shared"] == runs["empty"]
    # the two designs drew from different pools: their crosstalk entries are stored apart
    with sqlite3.connect(shared / "embeddings.sqlite") as db:
        keys = {k for (k,) in db.execute("SELECT DISTINCT chain_fp FROM embeddings") if "+in" in k}
    assert len({k.split("+in")[1] for k in keys}) == 2


def test_inputs_fingerprint_follows_the_talker_pool_and_files(tmp_path: Path, tiny_corpus) -> None:
    crosstalk = Chain((make_operator("noise", {"kind": "crosstalk", "snr_db": 5}),))
    gaussian = Chain((make_operator("noise", {"kind": "gaussian", "snr_db": 5}),))
    fewer = Manifest(tiny_corpus.name, tiny_corpus.root, tiny_corpus.utterances[:-1])
    assert gaussian.inputs_fingerprint(tiny_corpus) == ""
    assert crosstalk.inputs_fingerprint(tiny_corpus) == crosstalk.inputs_fingerprint(tiny_corpus)
    assert crosstalk.inputs_fingerprint(tiny_corpus) != crosstalk.inputs_fingerprint(fewer)
    folder = tmp_path / "noises"
    folder.mkdir()
    (folder / "a.wav").write_bytes(b"RIFF0000")
    env = Chain(
        (
            make_operator(
                "noise", {"kind": "environmental", "snr_db": 5, "noise_dir": str(folder)}, check_resources=False
            ),
        )
    )
    before = env.inputs_fingerprint(None)
    (folder / "b.wav").write_bytes(b"RIFF0000")
    assert env.inputs_fingerprint(None) != before


def test_entries_stored_before_the_inputs_key_are_recomputed_and_counted(tmp_path: Path, tiny_corpus) -> None:
    from interbias.audio.frontend import FrontEnd
    from interbias.embedding.cache import EmbeddingCache, cache_chain_key, pre_inputs_key

    crosstalk = Chain((make_operator("noise", {"kind": "crosstalk", "snr_db": 5}),))
    fe = FrontEnd()
    new = cache_chain_key(crosstalk, frozenset({"s1"}), fe, crosstalk.inputs_fingerprint(tiny_corpus))
    old = cache_chain_key(crosstalk, frozenset({"s1"}), fe)
    assert new != old and pre_inputs_key(new) == old
    gauss = Chain((make_operator("noise", {"kind": "gaussian", "snr_db": 5}),))
    assert cache_chain_key(gauss, frozenset(), fe, gauss.inputs_fingerprint(tiny_corpus)) == cache_chain_key(
        gauss, frozenset(), fe
    )
    import numpy as np

    db = EmbeddingCache(tmp_path / "embeddings.sqlite")
    vec = np.ones(4, np.float32) / 2
    db.put_many([(("a" * 64, old, "enc"), vec, [])])
    assert db.get_many([("a" * 64, new, "enc")]) == {}
    assert db.count_present([("a" * 64, pre_inputs_key(new), "enc"), ("b" * 64, old, "enc")]) == 1


def _rewrite_keeping_size_and_times(path: Path, data: bytes) -> None:
    """Other bytes of the same length, with the old access and modification times put back."""
    import os

    st = path.stat()
    assert len(data) == st.st_size
    path.write_bytes(data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (st.st_size, st.st_mtime_ns)


def test_a_noise_file_rewritten_with_the_same_size_and_mtime_gives_a_new_key_and_run_id(
    tmp_path: Path, tiny_corpus
) -> None:
    """The noise folder enters the cache key and the run id by content: a file rewritten with the
    same size and mtime makes both new; the same bytes written back give the old ones again."""
    import hashlib

    from conftest import gender_factor, tiny_experiment

    from interbias.audio.frontend import FrontEnd
    from interbias.embedding.cache import cache_chain_key
    from interbias.experiments.schema import load_experiment
    from interbias.run.inputs import operator_files
    from interbias.run.results import run_id

    folder = tmp_path / "noises"
    folder.mkdir()
    wav = folder / "hum.wav"
    wav.write_bytes(b"RIFF" + bytes(range(60)))
    noise = {"op": "noise", "kind": "environmental", "snr_db": 5, "noise_dir": str(folder)}
    factors = [
        gender_factor(),
        {"name": "noise", "type": "acoustic", "apply_to": "test", "reference": "clean",
         "levels": {"clean": [], "env": [noise]}},
    ]  # fmt: skip
    exp = load_experiment(tiny_experiment(tmp_path, factors=factors))
    chain = Chain((make_operator("noise", {k: v for k, v in noise.items() if k != "op"}, check_resources=False),))

    def keys() -> tuple[str, str, dict[str, str]]:
        files = operator_files(exp)
        rid = run_id(exp, tiny_corpus, [], rev="r", max_trials=None, listed=None, attacks_sha256=None,
                     audio_sha256={}, operator_files=files)  # fmt: skip
        return cache_chain_key(chain, frozenset(), FrontEnd(), chain.inputs_fingerprint(None)), rid, files

    key0, rid0, files0 = keys()
    assert list(files0) == [chain.fingerprint] and rid0 == keys()[1]
    # the listing holds the file's sha256, computed here independently
    assert chain.effective[0].inputs(None) == {"files": [["hum.wav", hashlib.sha256(wav.read_bytes()).hexdigest()]]}
    original = wav.read_bytes()
    _rewrite_keeping_size_and_times(wav, b"RIFF" + bytes(range(1, 61)))
    key1, rid1, files1 = keys()
    assert key1 != key0 and rid1 != rid0 and files1 != files0
    _rewrite_keeping_size_and_times(wav, original)
    assert keys() == (key0, rid0, files0)  # content, not times: the same bytes, the same keys


def test_chains_without_file_inputs_leave_the_run_id_payload_alone(tiny_corpus, tmp_path: Path) -> None:
    """Gaussian noise and crosstalk read no files: no operator_files entry, so the run ids of
    experiments without noise folders (the demo's) are what they were."""
    from conftest import tiny_experiment

    from interbias.experiments.schema import load_experiment
    from interbias.run.inputs import operator_files

    assert operator_files(load_experiment(tiny_experiment(tmp_path))) == {}
    crosstalk = Chain((make_operator("noise", {"kind": "crosstalk", "snr_db": 5}),))
    assert crosstalk.files_fingerprint() == ""
