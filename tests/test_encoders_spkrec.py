"""SpeechBrain backend: tiny spkrec folders loaded through the real loader."""

from __future__ import annotations

import dataclasses
import hashlib
import shutil
from importlib.util import find_spec
from pathlib import Path

import numpy as np
import pytest
import torch
from encoder_fixtures import make_speechbrain

from interbias.encoders import ENCODERS, load_encoder, load_from_layouts, probe_wave
from interbias.utils.errors import EncoderError

# not imported at collection: speechbrain's lazy modules break hypothesis's module scan
pytestmark = pytest.mark.skipif(find_spec("speechbrain") is None, reason="speechbrain is not installed")

FILES = ["classifier.ckpt", "embedding_model.ckpt", "hyperparams.yaml", "label_encoder.txt", "mean_var_norm_emb.ckpt"]


@pytest.fixture(scope="module")
def sb_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("spkrec")
    return make_speechbrain(root / "ecapa", "ECAPA_TDNN"), make_speechbrain(root / "xvect", "Xvector")


def tiny(label: str):
    """The real card with the tiny fixture's dimension."""
    return dataclasses.replace(ENCODERS.get(label), embedding_dim=12)


def test_ecapa_folder_loads_with_dimension_determinism_and_hashes(sb_dirs) -> None:
    folder = sb_dirs[0]
    enc = load_from_layouts(tiny("ECAPA-TDNN"), path=str(folder))
    enc.check_dimension()
    w = probe_wave(1.5)
    a, b = enc.embed([w, w[:16000]]), enc.embed([w, w[:16000]])
    assert a.shape == (2, 12) and a.tobytes() == b.tobytes()
    shas = {n: hashlib.sha256((folder / n).read_bytes()).hexdigest() for n in FILES}
    assert enc.files == shas
    lines = "".join(f"{n}\t{shas[n]}\n" for n in FILES)
    assert enc.checkpoint_sha256 == hashlib.sha256(lines.encode()).hexdigest()
    assert [f["path"] for f in enc.provenance()["files"]] == FILES
    # the same numbers as SpeechBrain's own call on the loaded modules
    ref = enc.classifier.encode_batch(torch.from_numpy(w)[None], torch.ones(1)).reshape(-1).numpy()
    np.testing.assert_allclose(a[0], ref / np.linalg.norm(ref), rtol=1e-5, atol=1e-6)
    assert not any(p.requires_grad for p in enc.classifier.mods.parameters())
    assert not enc.classifier.mods.embedding_model.training


def test_xvector_is_deterministic_with_pooling_noise_removed(sb_dirs) -> None:
    enc = load_from_layouts(tiny("X-Vector"), path=str(sb_dirs[1]))
    w = probe_wave(1.2)
    assert enc.embed([w]).tobytes() == enc.embed([w]).tobytes()
    assert enc.config["stats_pooling_noise"] == 0 and enc.config["class"] == "Xvector"


def test_padded_batch_matches_single_for_equal_lengths(sb_dirs) -> None:
    enc = load_from_layouts(tiny("ECAPA-TDNN"), path=str(sb_dirs[0]))
    w = probe_wave(1.0)
    batch = enc._embed_batch([w, w[::-1].copy()])
    np.testing.assert_allclose(batch[0], enc._embed_one(w), rtol=1e-4, atol=1e-5)


def test_real_label_refuses_wrong_dimension_and_wrong_model(sb_dirs, monkeypatch) -> None:
    ecapa, _ = sb_dirs
    monkeypatch.setenv("INTERBIAS_MODEL_ECAPA_TDNN", str(ecapa))
    with pytest.raises(EncoderError, match=r"^ECAPA-TDNN: the checkpoint in .* gives 12-dimensional embeddings; "):
        load_encoder("ECAPA-TDNN")
    with pytest.raises(EncoderError) as info:
        load_encoder("X-Vector", options={"path": str(ecapa)})
    assert str(info.value) == (
        f"X-Vector: embedding_model is a ECAPA_TDNN, not the Xvector that X-Vector names in {ecapa.resolve()} "
        "(expected [hyperparams.yaml + embedding_model.ckpt + mean_var_norm_emb.ckpt + classifier.ckpt + "
        "label_encoder.txt])"
    )


def test_corrupt_and_missing_files(sb_dirs, tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    shutil.copytree(sb_dirs[0], bad)
    data = (bad / "embedding_model.ckpt").read_bytes()
    (bad / "embedding_model.ckpt").write_bytes(data[: len(data) // 2])
    with pytest.raises(EncoderError, match=r"^ECAPA-TDNN: cannot load embedding_model.ckpt \(") as info:
        load_from_layouts(tiny("ECAPA-TDNN"), path=str(bad))
    assert str(bad) in str(info.value) and "(expected [hyperparams.yaml + embedding_model.ckpt" in str(info.value)
    (bad / "embedding_model.ckpt").write_bytes(data)
    (bad / "classifier.ckpt").unlink()
    with pytest.raises(EncoderError) as info:
        load_from_layouts(tiny("ECAPA-TDNN"), path=str(bad))
    assert str(info.value).startswith(f"ECAPA-TDNN: speechbrain: missing classifier.ckpt in {bad} (expected [")


def test_hparams_pointing_outside_the_folder_is_refused(sb_dirs, tmp_path: Path) -> None:
    inside, elsewhere = tmp_path / "inside", tmp_path / "elsewhere"
    shutil.copytree(sb_dirs[0], inside)
    shutil.copytree(sb_dirs[0], elsewhere)
    text = (inside / "hyperparams.yaml").read_text()
    text = text.replace("!ref <pretrained_path>/embedding_model.ckpt", f"{elsewhere}/embedding_model.ckpt")
    (inside / "hyperparams.yaml").write_text(text)
    with pytest.raises(
        EncoderError, match=r"hyperparams\.yaml loads files outside the folder: .*elsewhere/embedding_model\.ckpt"
    ):
        load_from_layouts(tiny("ECAPA-TDNN"), path=str(inside))


def test_non_tensor_pickle_is_refused_by_weights_only(sb_dirs, tmp_path: Path) -> None:
    bad = tmp_path / "pickle"
    shutil.copytree(sb_dirs[0], bad)
    torch.save({"weights": Path("/etc")}, bad / "classifier.ckpt")  # loads only with weights_only=False
    with pytest.raises(EncoderError, match=r"^ECAPA-TDNN: cannot load classifier.ckpt \(UnpicklingError"):
        load_from_layouts(tiny("ECAPA-TDNN"), path=str(bad))


def test_unloadable_lazy_proxies_are_dropped_from_sys_modules(sb_dirs) -> None:
    """speechbrain's proxies for missing optional packages raise ImportError on attribute access;
    after a load none is left for tools that walk sys.modules (inspect, hypothesis)."""
    import sys

    from speechbrain.utils.importutils import LazyModule

    from interbias.encoders import drop_unloadable_lazy_modules

    name = "speechbrain.integrations.interbias_missing_backend"
    sys.modules[name] = LazyModule(name, "interbias_no_such_package", None)
    assert drop_unloadable_lazy_modules() == [name]
    assert name not in sys.modules
    load_from_layouts(tiny("ECAPA-TDNN"), path=str(sb_dirs[0]))
    for module in list(sys.modules.values()):
        getattr(module, "__file__", None)  # raised ImportError for the k2 proxy before the fix
