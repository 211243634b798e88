"""Encoder cards, folder lookup, hashing, bucketing, the overlap flag, and refusing before work."""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import tiny_experiment
from hypothesis import given, settings
from hypothesis import strategies as st

from interbias.encoders import (
    ENCODERS,
    Encoder,
    EncoderCard,
    Layout,
    combined_sha256,
    env_var,
    hash_files,
    length_buckets,
    load_encoder,
    overlap_warning,
)
from interbias.encoders.registered import PAPER_LABELS
from interbias.run.conductor import RunOptions, run
from interbias.run.results import COLUMNS
from interbias.utils.errors import EncoderError

SSL = {"WavLM-Base", "WavLM-Base+", "WavLM-Large", "UniSpeech-SAT", "HuBERT-Large"}


def test_every_paper_label_plus_defaults_is_registered() -> None:
    assert len(PAPER_LABELS) == 12
    assert set(PAPER_LABELS) | {"GE2E", "mfcc-stats"} <= set(ENCODERS.names())
    for label in PAPER_LABELS:
        card = ENCODERS.get(label)
        assert card.family == ("ssl" if label in SSL else "sv"), label
        assert card.embedding_dim and card.checkpoint, label
    assert ENCODERS.get("mfcc-stats").family == "baseline"
    assert {ENCODERS.get(x).embedding_dim for x in ("WavLM-Large", "HuBERT-Large")} == {1024}


def test_env_var_names() -> None:
    assert env_var("WavLM-Base+") == "INTERBIAS_MODEL_WAVLM_BASE_PLUS"
    assert env_var("CAM++") == "INTERBIAS_MODEL_CAM_PLUS_PLUS"
    assert env_var("ECAPA-TDNN-Large") == "INTERBIAS_MODEL_ECAPA_TDNN_LARGE"
    assert env_var("X-Vector") == "INTERBIAS_MODEL_X_VECTOR"
    labels = [c.label for _, c in ENCODERS.items()]
    assert len({env_var(x) for x in labels}) == len(labels)


def test_folder_lookup_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    card = ENCODERS.get("RawNet3")
    monkeypatch.setenv("INTERBIAS_MODELS", str(tmp_path / "zoo"))
    monkeypatch.delenv("INTERBIAS_MODEL_RAWNET3", raising=False)
    assert card.folder() == tmp_path / "zoo" / "RawNet3"
    monkeypatch.setenv("INTERBIAS_MODEL_RAWNET3", str(tmp_path / "r3"))
    assert card.folder() == tmp_path / "r3"
    assert card.folder(tmp_path / "explicit") == tmp_path / "explicit"


def test_missing_folder_and_missing_files_name_label_folder_and_files(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("INTERBIAS_MODELS", str(tmp_path))
    with pytest.raises(EncoderError) as info:
        load_encoder("ECAPA-TDNN-Large")
    assert str(info.value) == (
        f"ECAPA-TDNN-Large: model folder {tmp_path / 'ECAPA-TDNN-Large'} does not exist "
        "(expected [config.yaml + avg_model.pt] or [model.onnx]; place the files there, or set "
        "INTERBIAS_MODEL_ECAPA_TDNN_LARGE or INTERBIAS_MODELS)"
    )
    folder = tmp_path / "ECAPA-TDNN-Large"
    folder.mkdir()
    (folder / "config.yaml").write_text("model: ECAPA_TDNN_GLOB_c1024\n")
    with pytest.raises(EncoderError) as info:
        load_encoder("ECAPA-TDNN-Large")
    assert str(info.value) == (
        f"ECAPA-TDNN-Large: wespeaker: missing avg_model.pt; onnx: missing model.onnx in {folder} "
        "(expected [config.yaml + avg_model.pt] or [model.onnx])"
    )
    ok, why, source = ENCODERS.get("ECAPA-TDNN-Large").status()
    assert (ok, source) == (False, "") and why == str(info.value)


def test_layout_needing_an_uninstalled_package_says_so(tmp_path: Path) -> None:
    (tmp_path / "titanet-large.nemo").write_bytes(b"not really")
    with pytest.raises(EncoderError) as info:
        load_encoder("TitaNet", options={"path": str(tmp_path)})
    assert str(info.value) == (
        f"TitaNet: onnx: missing model.onnx; nemo: nemo_toolkit (NeMo) is not installed in {tmp_path} "
        "(expected [model.onnx] or [titanet-large.nemo])"
    )


def test_unknown_option_lists_valid_ones(tmp_path: Path) -> None:
    from encoder_fixtures import make_onnx

    make_onnx(tmp_path, "waveform", dim=256)
    with pytest.raises(EncoderError, match=r"^RawNet3: unknown option\(s\) layer; valid: path$"):
        load_encoder("RawNet3", options={"path": str(tmp_path), "layer": 3})


def test_checkpoint_sha256_rule_matches_sha256sum(tmp_path: Path) -> None:
    for name, data in (("b.bin", b"\x00\x01" * 1000), ("a.yaml", b"model: x\n"), ("sub.txt", b"")):
        (tmp_path / name).write_bytes(data)
    files = hash_files(tmp_path, ["sub.txt", "b.bin", "a.yaml"])
    listing = subprocess.run(["sha256sum", "a.yaml", "b.bin", "sub.txt"], cwd=tmp_path, capture_output=True, text=True)
    pairs = sorted((line.split()[1], line.split()[0]) for line in listing.stdout.splitlines())
    assert sorted(files.items()) == pairs
    manual = hashlib.sha256("".join(f"{n}\t{h}\n" for n, h in pairs).encode()).hexdigest()
    assert combined_sha256(files) == manual
    assert combined_sha256({"b.bin": files["b.bin"]}) == files["b.bin"]  # one file: its own hash


def test_length_buckets_hand_example() -> None:
    # lengths 100, 90, 300, 95, 110, 1000 -> sorted 90(1) 95(3) 100(0) 110(4) | 300(2) | 1000(5)
    assert length_buckets([100, 90, 300, 95, 110, 1000], max_items=8, max_samples=10_000, max_ratio=1.25) == [
        [1, 3, 0, 4],
        [2],
        [5],
    ]
    assert length_buckets([100, 90, 95, 110], max_items=2, max_samples=10_000) == [[1, 2], [0, 3]]
    assert length_buckets([100, 100, 100], max_items=8, max_samples=250) == [[0, 1], [2]]
    assert length_buckets([5000], max_items=8, max_samples=100) == [[0]]


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(
    st.lists(st.integers(1, 500), min_size=0, max_size=40),
    st.integers(1, 6),
    st.integers(1, 2000),
    st.floats(1.0, 3.0),
)
def test_length_buckets_partition_and_limits(lengths, max_items, max_samples, ratio) -> None:
    buckets = length_buckets(lengths, max_items, max_samples, ratio)
    flat = [i for b in buckets for i in b]
    assert sorted(flat) == list(range(len(lengths)))
    assert flat == sorted(range(len(lengths)), key=lambda i: (lengths[i], i))  # brute-force order
    for b in buckets:
        longest = max(lengths[i] for i in b)
        if len(b) > 1:
            assert len(b) <= max_items and len(b) * longest <= max_samples
            assert longest <= ratio * min(lengths[i] for i in b)
    for b, nxt in itertools.pairwise(buckets):  # greedy: the next item did not fit
        cand = b + [nxt[0]]
        top = lengths[nxt[0]]
        assert len(cand) > max_items or len(cand) * top > max_samples or top > ratio * lengths[b[0]]


class _Scale(Encoder):
    """A fake encoder: embedding = [length, sum]; records how it was called."""

    supports_padding = True

    def __init__(self, device: str) -> None:
        card = EncoderCard(label="fake", family="baseline", backend="test", embedding_dim=2)
        super().__init__(card, source="test", checkpoint_sha256="none", device=device)
        self.calls: list[tuple[str, int]] = []

    def _embed_one(self, wave):
        self.calls.append(("one", 1))
        return np.array([wave.size, wave.sum() + 1.0])

    def _embed_batch(self, waves):
        self.calls.append(("batch", len(waves)))
        return [np.array([w.size, w.sum() + 1.0]) for w in waves]


def test_embed_is_one_at_a_time_on_cpu_and_bucketed_on_cuda() -> None:
    waves = [np.full(n, 0.5, np.float32) for n in (1000, 3000, 1100, 2900, 1050)]
    cpu, cuda = _Scale("cpu"), _Scale("cuda")
    a, b = cpu.embed(waves), cuda.embed(waves)
    assert cpu.calls == [("one", 1)] * 5 and cpu.forward_calls == 5
    assert cuda.calls == [("batch", 3), ("batch", 2)]
    np.testing.assert_array_equal(a, b)  # order restored, same normalisation
    ref = np.array([[n, n * 0.5 + 1] for n in (1000, 3000, 1100, 2900, 1050)])
    np.testing.assert_allclose(a, ref / np.linalg.norm(ref, axis=1, keepdims=True), rtol=1e-6)
    assert cpu.fingerprint != cuda.fingerprint  # padded batches get their own cache keys
    assert _Scale("cuda:1").fingerprint == cuda.fingerprint


def test_embed_refuses_non_finite_and_zero() -> None:
    class Bad(_Scale):
        def _embed_one(self, wave):
            return np.array([np.nan, 1.0]) if wave[0] < 0 else np.zeros(2)

    with pytest.raises(EncoderError, match=r"^fake: produced a non-finite embedding$"):
        Bad("cpu").embed([-np.ones(10, np.float32)])
    with pytest.raises(EncoderError, match=r"^fake: produced an all-zero embedding$"):
        Bad("cpu").embed([np.ones(10, np.float32)])


def test_overlap_warning() -> None:
    ecapa = ENCODERS.get("ECAPA-TDNN")
    assert (
        overlap_warning(ecapa, "voxceleb1") == "ECAPA-TDNN was trained on VoxCeleb1, VoxCeleb2; evaluated on voxceleb1"
    )
    assert overlap_warning(ENCODERS.get("RawNet3"), "VoxCeleb1-O") == ""  # a suffix is not the corpus name
    assert overlap_warning(ENCODERS.get("RawNet3"), "vox_celeb_1") == (
        "RawNet3 was trained on VoxCeleb2; evaluated on vox_celeb_1"
    )
    assert overlap_warning(ENCODERS.get("WavLM-Base"), "librispeech").startswith(
        "WavLM-Base was trained on LibriSpeech"
    )
    assert overlap_warning(ENCODERS.get("HuBERT-Large"), "librispeech") == ""  # Libri-Light is not LibriSpeech
    assert overlap_warning(ecapa, "synthetic") == "" and overlap_warning(ENCODERS.get("mfcc-stats"), "") == ""


def test_run_with_unavailable_labels_fails_before_any_work(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("INTERBIAS_MODELS", str(tmp_path / "zoo"))
    exp = tiny_experiment(tmp_path)
    out = tmp_path / "results"
    opts = RunOptions(
        experiment=str(exp),
        encoders=["mfcc-stats", "WavLM-Base", "ECAPA-TDNN"],
        out=out,
        cache_dir=tmp_path / "cache",
        quiet=True,
        command=["test"],
    )
    with pytest.raises(EncoderError) as info:
        run(opts)
    zoo = tmp_path / "zoo"
    assert str(info.value) == (
        f"unavailable encoder(s): WavLM-Base: model folder {zoo / 'WavLM-Base'} does not exist (expected "
        "[config.json + preprocessor_config.json + model.safetensors or pytorch_model.bin]; place the files there, "
        f"or set INTERBIAS_MODEL_WAVLM_BASE or INTERBIAS_MODELS); ECAPA-TDNN: model folder {zoo / 'ECAPA-TDNN'} "
        "does not exist (expected [hyperparams.yaml + embedding_model.ckpt + mean_var_norm_emb.ckpt + "
        "classifier.ckpt + label_encoder.txt]; place the files there, or set INTERBIAS_MODEL_ECAPA_TDNN or "
        "INTERBIAS_MODELS); see docs/guide/encoders.md"
    )
    assert not out.exists() and not (tmp_path / "cache").exists()  # no run directory, no corpus, no cache


def test_results_rows_carry_the_overlap_flag(tmp_path: Path, tiny_corpus, session_cache, monkeypatch) -> None:
    card = ENCODERS.get("mfcc-stats")
    monkeypatch.setitem(ENCODERS._entries, "mfcc-stats", dataclasses.replace(card, trained_on=("Synthetic",)))
    exp = tiny_experiment(tmp_path, trials={"targets": 6, "min_speakers": 4})
    outcome = run(RunOptions(experiment=str(exp), encoders=["mfcc-stats"], out=tmp_path / "r", quiet=True))
    res = pd.read_csv(outcome.run_dir / "results.csv", keep_default_na=False)
    assert list(res.columns)[len(COLUMNS) - 1] == "overlap_warning"  # the last of interbias's columns
    assert (res.overlap_warning == "mfcc-stats was trained on Synthetic; evaluated on synthetic").all()


def test_layout_files_accept_alternatives(tmp_path: Path) -> None:
    def loader(card, located, files, *, device="cpu"):
        return located, files

    card = EncoderCard(
        label="alt", family="sv", backend="t", embedding_dim=1, layouts=(Layout("t", ("a.json", "w.st|w.bin"), loader),)
    )
    (tmp_path / "a.json").write_text("{}")
    (tmp_path / "w.bin").write_bytes(b"1")
    assert card.locate_files(tmp_path).files == ("a.json", "w.bin")
    (tmp_path / "w.st").write_bytes(b"2")
    assert card.locate_files(tmp_path).files == ("a.json", "w.st")  # the first alternative wins
    assert card.expected() == "[a.json + w.st or w.bin]"


def test_unknown_encoder_lists_labels() -> None:
    with pytest.raises(EncoderError, match=r"unknown encoder 'CAMPP'; valid: .*CAM\+\+"):
        load_encoder("CAMPP")


def test_registry_has_spine_labels() -> None:
    assert {"CAM++", "mfcc-stats"} <= set(ENCODERS.names())
