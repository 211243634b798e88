"""Inference runtimes: onnxruntime on a graph exported from the loaded checkpoint against eager
PyTorch (CAM++, GE2E), its cache, fingerprints and provenance, and the choice of runtime."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
import torch

from interbias.audio import frontend as audio
from interbias.encoders import load_encoder, probe_wave
from interbias.encoders.campplus import MIN_ONNX_FRAMES
from interbias.encoders.campplus.graph import GRAPH
from interbias.encoders.ort_runtime import graph_key
from interbias.utils.errors import EncoderError


@pytest.fixture(scope="module")
def waves(tiny_corpus) -> list[np.ndarray]:
    """Twelve utterances of the tiny embedded corpus (lengths vary), one per voice."""
    seen: dict[str, object] = {}
    for u in sorted(tiny_corpus, key=lambda u: u.id):
        seen.setdefault(u.speaker, u)
    return [audio.load(tiny_corpus.resolve(u)).samples for u in list(seen.values())[:12]]


# eager against onnxruntime within a cosine bound (any dispatch); reruns byte-identical (one
# process). GE2E is the quick one that tests/test_dispatch.py reruns under another dispatch.
@pytest.mark.parametrize("label", ["CAM++", pytest.param("GE2E", marks=pytest.mark.numerics)])
def test_onnxruntime_matches_eager_and_reruns_byte_identical(label: str, waves, session_cache: Path) -> None:
    assert len({w.size for w in waves}) > 1  # the graph's time axis is dynamic
    eager = load_encoder(label, options={"runtime": "eager"})
    onnx = load_encoder(label, options={"runtime": "onnxruntime"})
    assert (eager.runtime, onnx.runtime) == ("eager", "onnxruntime")
    E, X = eager.embed(waves), onnx.embed(waves)
    cosines = (E * X).sum(axis=1)  # both L2-normalised
    assert cosines.min() >= 0.99999, cosines
    assert X.tobytes() == onnx.embed(waves).tobytes()
    # a second load reuses the cached graph (same file, untouched) and gives the same bytes
    path = Path(onnx.runtime_graph["path"])
    assert path.parent == session_cache / "onnx" and graph_key(onnx, onnx.onnx_spec()) in path.name
    mtime = path.stat().st_mtime_ns
    again = load_encoder(label, options={"runtime": "onnxruntime"})
    assert path.stat().st_mtime_ns == mtime
    assert again.embed(waves).tobytes() == X.tobytes()


def test_runtime_in_fingerprint_and_provenance(waves) -> None:
    eager = load_encoder("CAM++", options={"runtime": "eager"})
    onnx = load_encoder("CAM++", options={"runtime": "onnxruntime"})
    assert eager.fingerprint != onnx.fingerprint  # separate embedding-cache keys and run ids
    prov = onnx.provenance()["runtime"]
    import onnxruntime

    assert prov["name"] == "onnxruntime" and prov["onnxruntime"] == onnxruntime.__version__
    assert prov["exporter"].startswith(f"torch.onnx.export {torch.__version__}")
    assert prov["restatement"] == GRAPH  # CAM++ exports its restated network (campplus.graph)
    assert prov["graph"]["sha256"] == hashlib.sha256(Path(prov["graph"]["path"]).read_bytes()).hexdigest()
    assert eager.provenance()["runtime"] == {"name": "eager", "torch": torch.__version__}


def test_damaged_cached_graph_is_exported_again(waves) -> None:
    onnx = load_encoder("GE2E", options={"runtime": "onnxruntime"})
    want = onnx.embed(waves[:2])
    path = Path(onnx.runtime_graph["path"])
    path.write_bytes(b"not an onnx graph")
    again = load_encoder("GE2E", options={"runtime": "onnxruntime"})
    assert path.read_bytes() != b"not an onnx graph"
    assert again.embed(waves[:2]).tobytes() == want.tobytes()


def test_campplus_short_inputs_below_the_traced_branch_raise() -> None:
    eager = load_encoder("CAM++", options={"runtime": "eager"})
    onnx = load_encoder("CAM++", options={"runtime": "onnxruntime"})
    feats = eager.features(probe_wave(0.2))[:, :MIN_ONNX_FRAMES]
    a, b = eager.net(feats)[0].numpy(), onnx.net(feats)[0].numpy()
    assert float(a @ b / np.linalg.norm(a) / np.linalg.norm(b)) >= 0.99999
    with pytest.raises(EncoderError, match="shorter than the exported graph handles"):
        onnx.net(feats[:, : MIN_ONNX_FRAMES - 1])


def test_runtime_choice(monkeypatch) -> None:
    # auto: the card's measured CPU choice
    assert load_encoder("CAM++").runtime == "onnxruntime"
    assert load_encoder("GE2E").runtime == "onnxruntime"
    assert load_encoder("mfcc-stats").runtime == "eager"
    assert load_encoder("GE2E", options={"runtime": "eager"}).runtime == "eager"
    with pytest.raises(EncoderError, match="runtime onnxruntime is not offered"):
        load_encoder("mfcc-stats", options={"runtime": "onnxruntime"})
    with pytest.raises(EncoderError, match="runtime option 'tensorrt'"):
        load_encoder("CAM++", options={"runtime": "tensorrt"})
    monkeypatch.setenv("INTERBIAS_RUNTIME", "eager")
    assert load_encoder("CAM++").runtime == "eager"
    assert load_encoder("GE2E", options={"runtime": "onnxruntime"}).runtime == "onnxruntime"  # option wins
    monkeypatch.setenv("INTERBIAS_RUNTIME", "onnxruntime")  # applies where offered
    assert load_encoder("GE2E").runtime == "onnxruntime"
    assert load_encoder("mfcc-stats").runtime == "eager"
    monkeypatch.setenv("INTERBIAS_RUNTIME", "fast")
    with pytest.raises(EncoderError, match="INTERBIAS_RUNTIME 'fast'"):
        load_encoder("CAM++")
