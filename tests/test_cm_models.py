"""The CM model registry: AASIST's key layout, strict loading, ResNet18-<frontend> networks."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from interbias.cm import models as cm_models
from interbias.cm.aasist import AASIST, AASIST_L, AASISTConfig
from interbias.cm.frontends import CQT, InputPolicy, LogSpec, cqt_kernels, fix_length, tile_cut
from interbias.cm.models import CM_MODELS, load_cm, load_strict
from interbias.cm.network import build_network, seeded_init
from interbias.utils.errors import AudioError, EncoderError
from interbias.utils.seeding import derive_rng
from tests.encoder_fixtures import make_transformers

PUBLISHED = json.loads((Path(__file__).parent / "data" / "aasist_published_keys.json").read_text())


def _randomise(module: torch.nn.Module, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in module.state_dict().items():
            if p.dtype.is_floating_point:
                p.copy_(
                    (0.5 + torch.rand(p.shape, generator=g))
                    if name.endswith("running_var")
                    else torch.randn(p.shape, generator=g) * 0.1
                )


@pytest.mark.parametrize(("label", "cfg"), [("AASIST", AASISTConfig()), ("AASIST-L", AASIST_L)])
def test_aasist_has_the_published_keys_and_shapes(label, cfg):
    ours = {k: list(v.shape) for k, v in AASIST(cfg).state_dict().items()}
    assert ours == PUBLISHED[label]


def _published_like(tmp_path: Path, label: str, cfg: AASISTConfig) -> tuple[Path, AASIST]:
    """A checkpoint in the published layout (plain state dict, published key names), written from our definition."""
    model = AASIST(cfg)
    _randomise(model, 7)
    state = {k: model.state_dict()[k] for k in PUBLISHED[label]}  # the published key names, in their order
    folder = tmp_path / label
    folder.mkdir()
    torch.save(state, folder / f"{label}.pth")
    return folder, model.eval()


def test_aasist_checkpoint_loads_strictly_and_scores_the_same(tmp_path, monkeypatch):
    folder, model = _published_like(tmp_path, "AASIST", AASISTConfig())
    sha = cm_models.sha256_file(folder / "AASIST.pth")
    monkeypatch.setitem(CM_MODELS._entries, "AASIST", dataclasses.replace(CM_MODELS.get("AASIST"), pinned_sha256=sha))
    cm = load_cm("AASIST", path=folder)
    assert cm.checkpoint_sha256 == sha and cm.n_samples == 64600
    x = np.stack([np.sin(np.arange(64600) * f / 16000 * 2 * np.pi).astype(np.float32) * 0.1 for f in (200, 900)])
    with torch.no_grad():
        want = torch.softmax(model(torch.from_numpy(x)).double(), 1)[:, 1].numpy()
    got = cm.score(list(x))
    assert np.allclose(got, want, atol=1e-6) and ((got > 0) & (got < 1)).all()
    # AASIST's input policy is the authors' tile/cut: a short waveform is repeated, a long one cut
    assert cm.policy.pad == "tile" and cm.provenance()["input"]["pad"] == "tile"
    short = x[0][:30000]
    assert np.allclose(cm.score([short]), cm.score([np.concatenate([short, short, short[:4600]])]))
    zero_padded = np.concatenate([short, np.zeros(34600, np.float32)])
    assert not np.array_equal(cm.logits([short]), cm.logits([zero_padded]))


def test_aasist_refuses_a_file_that_is_not_the_published_one(tmp_path):
    folder, _ = _published_like(tmp_path, "AASIST", AASISTConfig())
    with pytest.raises(
        EncoderError, match=r"AASIST: .*AASIST.pth has sha256 .*not the published checkpoint's 51d2d9cf07"
    ):
        load_cm("AASIST", path=folder)


def test_strict_loading_names_missing_extra_and_shape(tmp_path):
    model = AASIST(AASIST_L)
    state = dict(AASIST(AASISTConfig()).state_dict())  # AASIST weights into the AASIST-L definition
    with pytest.raises(EncoderError, match=r"93 shape mismatch\(es\) \(first: pos_S \(1, 23, 64\) vs \(1, 23, 24\)\)"):
        load_strict(model, state, "AASIST-L", tmp_path / "x.pth")
    state = dict(model.state_dict())
    state["GAT_layer_S.att_weight_renamed"] = state.pop("GAT_layer_S.att_weight")
    with pytest.raises(EncoderError, match=r"1 missing key\(s\) \(first: GAT_layer_S.att_weight\); 1 unexpected"):
        load_strict(model, state, "AASIST-L", tmp_path / "x.pth")


def test_weights_only_refuses_a_pickled_object(tmp_path):
    folder = tmp_path / "AASIST"
    folder.mkdir()
    torch.save({"model": AASIST(AASIST_L)}, folder / "checkpoint.pt")  # a pickled module, not tensors
    with pytest.raises(EncoderError, match="is not a loadable checkpoint"):
        cm_models.read_checkpoint(folder / "checkpoint.pt", "AASIST")


@pytest.mark.parametrize("label", ["AASIST", "ResNet18-logspec", "ResNet18-wavlm"])
def test_missing_weights_say_how_to_get_them(tmp_path, monkeypatch, label):
    monkeypatch.setenv("INTERBIAS_MODELS", str(tmp_path))
    with pytest.raises(EncoderError) as err:
        load_cm(label)
    msg = str(err.value)
    assert "\n" not in msg and str(tmp_path / "cm" / label) in msg
    assert ("github.com/clovaai/aasist" in msg) if label == "AASIST" else (f"interbias cm train --model {label}" in msg)


def test_registry_lists_every_label():
    assert CM_MODELS.names() == sorted(
        [
            "AASIST",
            "AASIST-L",
            "ResNet18-logspec",
            "ResNet18-cqt",
            "ResNet18-lfcc",
            "ResNet18-wavlm",
            "ResNet18-wav2vec2",
        ]
        + ["LCNN-lfcc", "LCNN-wav2vec2", "GMM-lfcc"]
    )


def test_logspec_and_cqt_shapes_and_peak_bin():
    x = torch.from_numpy(np.sin(2 * np.pi * 440 * np.arange(64000) / 16000).astype(np.float32)).unsqueeze(0)
    ls = LogSpec()(x)
    assert ls.shape == (1, 257, 401)
    assert int(ls[0, :, 200].argmax()) == round(440 / (16000 / 512))
    c = CQT()(x)
    assert c.shape == (1, 84, 1 + (64000 - 1) // 256)  # odd kernel, centred: ⌊(n − 1) / hop⌋ + 1
    freqs = 32.70 * 2 ** (np.arange(84) / 12)
    assert int(c[0, :, 125].argmax()) == int(np.argmin(np.abs(np.log(freqs / 440))))


def test_cqt_kernels_are_normalised_and_refuse_nyquist():
    k = cqt_kernels(16000, 32.70, 84, 12)
    assert k.shape[0] == 168 and k.shape[-1] % 2 == 1
    with pytest.raises(EncoderError, match="Nyquist"):
        cqt_kernels(16000, 4000.0, 24, 12)


def authors_pad(x: np.ndarray, max_len: int = 64600) -> np.ndarray:
    """A restatement of ``pad`` in the AASIST authors' data_utils.py (github.com/clovaai/aasist)."""
    x_len = x.shape[0]
    if x_len >= max_len:
        return x[:max_len]
    num_repeats = int(max_len / x_len) + 1
    return np.tile(x, (1, num_repeats))[:, :max_len][0]


@pytest.mark.parametrize("length", [1, 7, 600, 601, 1199, 1200, 1201, 5000])
def test_tile_cut_is_the_aasist_authors_pad(length):
    x = derive_rng("tile-cut", length).standard_normal(length).astype(np.float32)
    assert np.array_equal(tile_cut(x, 1200), authors_pad(x, 1200))
    assert np.array_equal(InputPolicy(1200, "tile").fit(x), authors_pad(x, 1200))


def test_tile_cut_refuses_an_empty_waveform():
    with pytest.raises(AudioError, match="empty waveform"):
        tile_cut(np.zeros(0, np.float32), 10)


def test_small_aasist_shaped_model_sees_the_authors_input(tmp_path):
    """A small AASIST (input 8000 samples) fed through the CM's input policy equals the network
    on the authors' padded input, for inputs shorter and longer than the input length."""
    cfg = dataclasses.replace(AASIST_L, n_samples=8000)
    model = AASIST(cfg)
    _randomise(model, 3)
    model.eval()
    cm = cm_models.LoadedCM(CM_MODELS.get("AASIST-L"), model, InputPolicy(8000, "tile"), tmp_path, "x", {})
    rng = derive_rng("small-aasist")
    waves = [(0.1 * rng.standard_normal(n)).astype(np.float32) for n in (2500, 3999, 8000, 11000)]
    with torch.no_grad():
        want = model(torch.from_numpy(np.stack([authors_pad(w, 8000) for w in waves]))).double().numpy()
    got = cm.logits(waves)
    assert np.abs(got - want).max() < 1e-5
    assert np.allclose(cm.score(waves), np.exp(want[:, 1]) / np.exp(want).sum(1), atol=1e-12)


def test_fix_length_pads_and_truncates():
    assert fix_length(np.ones(3), 5).tolist() == [1, 1, 1, 0, 0]
    assert fix_length(np.arange(7), 5).tolist() == [0, 1, 2, 3, 4]


def test_seeded_init_is_a_function_of_the_seed():
    a, b, c = (build_network("ResNet18-logspec", {"width": 8}, None) for _ in range(3))
    seeded_init(a.classifier, 1)
    seeded_init(b.classifier, 1)
    seeded_init(c.classifier, 2)
    sa, sb, sc = (m.classifier.state_dict() for m in (a, b, c))
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert not torch.equal(sa["stem.0.weight"], sc["stem.0.weight"])


@pytest.mark.parametrize("kind", ["wavlm", "wav2vec2"])
def test_ssl_frontends_load_local_folders(tmp_path, kind):
    folder = make_transformers(tmp_path / kind, kind, layer_norm=True)
    net = build_network(f"ResNet18-{kind}", {"width": 8}, folder)
    feats = net.features(
        torch.zeros(2, 16000) + 0.01 * torch.randn(2, 16000, generator=torch.Generator().manual_seed(0))
    )
    assert feats.shape[0] == 2 and feats.shape[1] == 32  # hidden size of the fixture
    assert net(torch.zeros(1, 16000)).shape == (1, 2)
    other = "wav2vec2" if kind == "wavlm" else "wavlm"
    with pytest.raises(EncoderError, match=f"holds a '{kind}' model, not '{other}'"):
        build_network(f"ResNet18-{other}", {"width": 8}, folder)


def test_models_list_shows_countermeasures(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from interbias.cli import app

    monkeypatch.setenv("INTERBIAS_MODELS", str(tmp_path))
    (tmp_path / "cm" / "ResNet18-cqt").mkdir(parents=True)
    (tmp_path / "cm" / "ResNet18-cqt" / "checkpoint.pt").write_bytes(b"x")
    res = CliRunner().invoke(app, ["encoders", "status", "--json", "--quick"])
    assert res.exit_code == 0, res.output
    cms = {s["label"]: s for s in json.loads(res.output) if s.get("kind") == "cm"}
    assert set(cms) == set(CM_MODELS.names()) | {"LCNN-LFCC-frames"}  # trained here only (issue 53 case 11)
    assert cms["LCNN-LFCC-frames"]["state"] == "train"
    assert cms["ResNet18-cqt"]["state"] == "present" and cms["AASIST"]["state"] == "missing"
    assert "github.com/clovaai/aasist" in cms["AASIST"]["detail"]
    text = CliRunner().invoke(app, ["cm", "models"]).output
    assert "ResNet18-logspec" in text and "train it: interbias cm train --model ResNet18-logspec" in text
