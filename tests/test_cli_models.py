"""``interbias encoders fetch|verify|status`` against a fake hub on 127.0.0.1 (no network).

The fake hub (:mod:`fake_hub`) serves tiny randomly initialised models written in each
backend's exact on-disk layout (:mod:`encoder_fixtures`) under the real repository names of
the encoder catalogue; ``HF_ENDPOINT`` points at it, ``HF_HUB_CACHE`` at a temporary folder.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
from encoder_fixtures import make_rawnet3, make_speechbrain, make_transformers, make_wespeaker
from fake_hub import FakeHub
from typer.testing import CliRunner

from interbias.cli import app
from interbias.encoders import ENCODERS, env_var, load_from_layouts, probe_wave
from interbias.encoders.hub import SOURCES, HubSource
from interbias.encoders.models_lock import read_models_lock
from interbias.utils.errors import EncoderError

pytest.importorskip("huggingface_hub")
runner = CliRunner()

#: Card overrides so each tiny model passes its label's architecture checks (dimension, names).
TINY = {
    "X-Vector": {"embedding_dim": 12},
    "ECAPA-TDNN": {"embedding_dim": 12},
    "ECAPA-TDNN-Large": {"embedding_dim": 8, "expect": {"model": "ResNet18"}},
    "ResNet34": {"embedding_dim": 8, "expect": {"model": "ResNet18"}},
    "RawNet3": {"embedding_dim": 8},
    "WavLM-Base": {"embedding_dim": 32, "expect": {"model_type": "wavlm", "layers": 2}},
    "WavLM-Base+": {"embedding_dim": 32, "expect": {"model_type": "wavlm", "layers": 2}},
    "WavLM-Large": {"embedding_dim": 32, "expect": {"model_type": "wavlm", "layers": 2}},
    "UniSpeech-SAT": {"embedding_dim": 32, "expect": {"model_type": "unispeech-sat", "layers": 2}},
    "HuBERT-Large": {"embedding_dim": 32, "expect": {"model_type": "hubert", "layers": 2}},
}
NEMO = b"stand-in for a .nemo archive (NeMo is not installed here)"


@pytest.fixture(scope="module")
def zoo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, bytes]]:
    """Each hub label's repository content: its files in the backend's layout, plus a README."""
    root = tmp_path_factory.mktemp("zoo")
    resnet = make_wespeaker(root / "resnet", "ResNet18", feat_dim=80, embed_dim=8)
    folders = {
        "X-Vector": make_speechbrain(root / "xvect", "Xvector", "speechbrain/spkrec-xvect-voxceleb"),
        "ECAPA-TDNN": make_speechbrain(root / "ecapa", "ECAPA_TDNN"),
        "ECAPA-TDNN-Large": resnet,
        "ResNet34": resnet,
        "RawNet3": make_rawnet3(root / "rawnet3"),
        "WavLM-Base": make_transformers(root / "wavlm", "wavlm"),
        "WavLM-Base+": make_transformers(root / "wavlm", "wavlm"),
        "WavLM-Large": make_transformers(root / "wavlm-large", "wavlm", layer_norm=True),
        "UniSpeech-SAT": make_transformers(root / "usat", "unispeech-sat"),
        "HuBERT-Large": make_transformers(root / "hubert", "hubert", layer_norm=True),
    }
    out = {label: {p.name: p.read_bytes() for p in folder.iterdir()} for label, folder in folders.items()}
    out["TitaNet"] = {"speakerverification_en_titanet_large.nemo": NEMO}
    for files in out.values():
        files["README.md"] = b"# model card\n"
    return out


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    server = FakeHub(lifetime=240)
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("INTERBIAS_MODELS", str(tmp_path / "models"))
    monkeypatch.setenv("INTERBIAS_HUB_TIMEOUT", "10")
    monkeypatch.delenv("HF_TOKEN", raising=False)
    for label in ENCODERS.names():
        monkeypatch.delenv(env_var(label), raising=False)
    try:
        yield server
    finally:
        server.stop()


def publish(hub: FakeHub, zoo: dict[str, dict[str, bytes]], *labels: str) -> dict[str, str]:
    return {label: hub.publish(SOURCES[label].repo, zoo[label]) for label in labels}


def tiny(label: str):
    return dataclasses.replace(ENCODERS.get(label), **TINY[label])


def cli(*args: str):
    return runner.invoke(app, list(args))


def one_error_line(res) -> str:
    assert res.exit_code == 1, res.output
    lines = [ln for ln in res.output.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1, res.output
    return lines[0]


def test_fetch_all_fills_every_hub_label_pins_it_and_each_label_embeds(hub: FakeHub, zoo, tmp_path: Path) -> None:
    commits = publish(hub, zoo, *zoo)
    res = cli("encoders", "fetch", "--all")
    assert res.exit_code == 0, res.output
    assert "ReDimNet: fetch by hand:" in res.output and "torch.onnx.export(" in res.output
    assert "titanet-large.nemo loads with NeMo" in res.output
    lock = read_models_lock(tmp_path / "models" / "models.lock")
    assert set(lock) == set(zoo) == {k for k, v in SOURCES.items() if isinstance(v, HubSource)}
    for label, entry in lock.items():
        assert (entry.repo, entry.commit, entry.revision, entry.folder) == (
            SOURCES[label].repo,
            commits[label],
            "main",
            label,
        )
        names = {SOURCES[label].rename.get(n, n): n for n in zoo[label] if n != "README.md"}
        assert {f.name: (f.sha256, f.size) for f in entry.files} == {
            local: (hashlib.sha256(zoo[label][remote]).hexdigest(), len(zoo[label][remote]))
            for local, remote in names.items()
        }
        folder = tmp_path / "models" / label
        assert sorted(p.name for p in folder.iterdir()) == sorted(names)  # the README was not fetched
    wave = probe_wave(1.0)
    for label in TINY:
        enc = load_from_layouts(tiny(label))
        x = enc.embed([wave])
        assert x.shape == (1, TINY[label]["embedding_dim"]) and np.isfinite(x).all()
        assert enc.provenance()["models_lock"] == {
            "repo": SOURCES[label].repo,
            "commit": commits[label],
            "digest": lock[label].digest,
        }
    states = {s["label"]: s for s in json.loads(cli("encoders", "status", "--json").output)}
    assert {s["state"] for label, s in states.items() if label in zoo} == {"fetched"}
    assert states["TitaNet"]["detail"].startswith(f"{SOURCES['TitaNet'].repo}@{commits['TitaNet'][:12]} (main)")
    if importlib.util.find_spec("nemo") is None:  # fetched, but its .nemo layout needs NeMo
        assert (
            "; TitaNet: onnx: missing model.onnx; nemo: nemo_toolkit (NeMo) is not installed"
            in states["TitaNet"]["detail"]
        )
    assert (states["ReDimNet"]["state"], states["ReDimNet"]["fetch"]) == ("missing", "by hand")
    assert states["CAM++"]["state"] == "packaged"
    assert cli("encoders", "verify").exit_code == 0
    assert any(p.startswith("/cdn/") for m, p in hub.requests if m == "GET")  # weights came via the redirect
    asked = len(hub.requests)
    again = cli("encoders", "fetch", "--all")
    assert again.exit_code == 0 and again.output.count("up to date") == len(zoo)
    assert len(hub.requests) == asked  # pinned files all present: the hub is not even asked


def test_a_tampered_file_is_refused_on_load_and_by_verify_and_fetch_restores_it(hub: FakeHub, zoo, tmp_path) -> None:
    publish(hub, zoo, "RawNet3", "WavLM-Base")
    assert cli("encoders", "fetch", "RawNet3", "WavLM-Base").exit_code == 0
    lock = read_models_lock(tmp_path / "models" / "models.lock")
    target = tmp_path / "models" / "WavLM-Base" / "config.json"
    target.write_text(target.read_text().replace('"hidden_act": "gelu"', '"hidden_act": "relu"'))
    found = hashlib.sha256(target.read_bytes()).hexdigest()
    locked = next(f.sha256 for f in lock["WavLM-Base"].files if f.name == "config.json")
    with pytest.raises(EncoderError) as info:
        load_from_layouts(tiny("WavLM-Base"))
    assert str(info.value) == (
        f"WavLM-Base: {target} does not match models.lock: locked sha256 {locked}, found {found}; run "
        "`interbias encoders fetch WavLM-Base` to restore the locked files or `interbias encoders fetch --update "
        "WavLM-Base` to re-pin"
    )
    res = cli("encoders", "verify")
    assert one_error_line(res) == f"error: 1 label(s) differ from {tmp_path / 'models' / 'models.lock'}: WavLM-Base"
    assert f"WavLM-Base: lock mismatch: {target} does not match models.lock" in res.output
    assert "RawNet3: ok: jungjee/RawNet3@" in res.output
    (tmp_path / "models" / "RawNet3" / "model.pt").unlink()
    states = {s["label"]: s["state"] for s in json.loads(cli("encoders", "status", "--json").output)}
    assert (states["WavLM-Base"], states["RawNet3"]) == ("lock mismatch", "lock mismatch")
    res = cli("encoders", "fetch", "WavLM-Base", "RawNet3")
    assert res.exit_code == 0 and res.output.count(": fetched ") == 2, res.output
    assert read_models_lock(tmp_path / "models" / "models.lock") == lock
    assert cli("encoders", "verify").exit_code == 0
    assert load_from_layouts(tiny("WavLM-Base")).embed([probe_wave(0.5)]).shape == (1, 32)


def test_update_re_pins_and_a_pinned_label_refuses_another_revision(hub: FakeHub, zoo, tmp_path: Path) -> None:
    old = publish(hub, zoo, "RawNet3")["RawNet3"]
    assert cli("encoders", "fetch", "RawNet3").exit_code == 0
    wave = probe_wave(1.0)
    before = load_from_layouts(tiny("RawNet3")).embed([wave])
    newer = make_rawnet3(tmp_path / "newer", channels=24)
    new = hub.publish("jungjee/RawNet3", {"model.pt": (newer / "model.pt").read_bytes()})
    assert "up to date" in cli("encoders", "fetch", "RawNet3").output  # the lock binds, not the branch
    assert one_error_line(cli("encoders", "fetch", "RawNet3", "--revision", new)) == (
        f"error: RawNet3: models.lock pins jungjee/RawNet3@{old} (main); pass --update to re-pin to {new}"
    )
    res = cli("encoders", "fetch", "RawNet3", "--update")
    assert res.exit_code == 0 and f"fetched jungjee/RawNet3@{new[:12]}" in res.output
    entry = read_models_lock(tmp_path / "models" / "models.lock")["RawNet3"]
    assert (
        entry.commit == new and entry.files[0].sha256 == hashlib.sha256((newer / "model.pt").read_bytes()).hexdigest()
    )
    enc = load_from_layouts(tiny("RawNet3"))
    assert enc.config["channels"] == 24 and not np.allclose(enc.embed([wave]), before)
    res = cli("encoders", "fetch", "RawNet3", "--update", "--revision", old)
    assert res.exit_code == 0 and read_models_lock(tmp_path / "models" / "models.lock")["RawNet3"].revision == old
    np.testing.assert_array_equal(load_from_layouts(tiny("RawNet3")).embed([wave]), before)


def test_an_interrupted_fetch_leaves_no_folder_that_loads(hub: FakeHub, zoo, tmp_path: Path) -> None:
    publish(hub, zoo, "X-Vector")
    hub.status[("GET", "/classifier.ckpt")] = 500  # after hyperparams and two checkpoints arrived
    line = one_error_line(cli("encoders", "fetch", "X-Vector"))
    assert line.startswith("error: X-Vector: downloading classifier.ckpt from speechbrain/spkrec-xvect-voxceleb@")
    assert "(HTTP 500: " in line and line.endswith("; nothing was placed")
    models = tmp_path / "models"
    assert sorted(p.name for p in models.iterdir()) == []  # no folder, no staging folder, no lock
    with pytest.raises(EncoderError, match=r"^X-Vector: model folder .* does not exist"):
        load_from_layouts(tiny("X-Vector"))
    staging = models / ".X-Vector.fetch-killed"  # what a killed fetch leaves: hidden, never loaded
    staging.mkdir()
    for name, data in zoo["X-Vector"].items():
        (staging / name).write_bytes(data)
    assert {s["label"]: s["state"] for s in json.loads(cli("encoders", "status", "--json").output)}[
        "X-Vector"
    ] == "missing"
    del hub.status[("GET", "/classifier.ckpt")]
    assert cli("encoders", "fetch", "X-Vector").exit_code == 0
    assert sorted(p.name for p in models.iterdir()) == ["X-Vector", "models.lock"]  # the stale staging went too
    commit = read_models_lock(models / "models.lock")["X-Vector"].commit
    hub.publish("speechbrain/spkrec-xvect-voxceleb", {**zoo["X-Vector"], "classifier.ckpt": b"newer"})
    hub.status[("GET", "/classifier.ckpt")] = 500
    one_error_line(cli("encoders", "fetch", "X-Vector", "--update"))  # a failed update keeps the pinned folder
    assert read_models_lock(models / "models.lock")["X-Vector"].commit == commit
    assert load_from_layouts(tiny("X-Vector")).embed([probe_wave(0.5)]).shape == (1, 12)


@pytest.mark.parametrize("fault", ["404", "500", "timeout"])
def test_server_failures_are_one_clear_line(hub: FakeHub, zoo, fault: str, monkeypatch) -> None:
    if fault != "404":
        publish(hub, zoo, "RawNet3")
    if fault == "500":
        hub.status[("GET", "/revision/main")] = 500
    if fault == "timeout":
        monkeypatch.setenv("INTERBIAS_HUB_TIMEOUT", "0.5")
        hub.delay["/api/"] = 2.0
    line = one_error_line(cli("encoders", "fetch", "RawNet3"))
    head = f"error: RawNet3: cannot resolve jungjee/RawNet3@main on {hub.url} ("
    assert line.startswith(head), line
    reason = line[len(head) :]
    expected = {"404": "HTTP 404: ", "500": "HTTP 500: ", "timeout": "no answer within 0.5 s ("}[fault]
    assert reason.startswith(expected), line


def test_a_hand_placed_folder_loads_without_a_pin_and_list_says_so(hub: FakeHub, tmp_path: Path) -> None:
    make_rawnet3(tmp_path / "models" / "RawNet3")
    states = {s["label"]: s for s in json.loads(cli("encoders", "status", "--json").output)}
    assert states["RawNet3"]["state"] == "placed by hand"
    assert states["WavLM-Base"]["state"] == "missing"
    enc = load_from_layouts(tiny("RawNet3"))
    assert "models_lock" not in enc.provenance()
    assert one_error_line(cli("encoders", "verify")).startswith("error: ") and not hub.requests


def test_usage_errors_are_one_line(hub: FakeHub) -> None:
    for cmd in (["encoders", "--help"], ["encoders", "fetch", "--help"], ["encoders", "status", "--help"]):
        assert cli(*cmd).exit_code == 0
    assert one_error_line(cli("encoders", "fetch")) == "error: give one or more labels, or --all"
    assert one_error_line(cli("encoders", "fetch", "X-Vector", "--all")) == "error: give labels or --all, not both"
    assert one_error_line(cli("encoders", "fetch", "WavLM")).startswith("error: unknown encoder 'WavLM'; valid: ")
    res = cli("encoders", "fetch", "CAM++")
    assert res.exit_code == 0 and res.output == "CAM++: packaged with interbias; nothing to fetch\n"
    assert not hub.requests


def test_bytes_that_differ_from_the_hub_listing_are_refused_and_a_damaged_cache_copy_is_replaced(
    hub: FakeHub, zoo, tmp_path: Path
) -> None:
    publish(hub, zoo, "RawNet3")
    hub.corrupt.add("model.pt")
    line = one_error_line(cli("encoders", "fetch", "RawNet3"))
    sha = hashlib.sha256(zoo["RawNet3"]["model.pt"]).hexdigest()
    assert line.startswith("error: RawNet3: model.pt has sha256 ") and line.endswith(f"; the hub lists {sha}")
    assert not (tmp_path / "models" / "RawNet3").exists()
    hub.corrupt.clear()
    blob = tmp_path / "hf-cache" / "models--jungjee--RawNet3" / "blobs" / sha
    assert blob.is_file()  # the damaged download is still in the hub cache; the next fetch replaces it
    assert cli("encoders", "fetch", "RawNet3").exit_code == 0
    assert hashlib.sha256(blob.read_bytes()).hexdigest() == sha
    assert load_from_layouts(tiny("RawNet3")).embed([probe_wave(0.5)]).shape == (1, 8)


def test_every_label_with_files_has_a_source_and_each_hub_source_fills_one_of_its_layouts() -> None:
    with_files = {label for label, card in ENCODERS.items() if card.layouts}
    assert set(SOURCES) == with_files
    for label, source in SOURCES.items():
        if not isinstance(source, HubSource):
            continue
        names = {source.rename.get(n, n) for entry in source.files for n in entry.split("|")}
        layouts = ENCODERS.get(label).layouts
        assert any(all(set(f.split("|")) & names for f in layout.files) for layout in layouts), label


def test_hf_token_goes_to_the_hub_and_not_to_the_cdn(hub: FakeHub, zoo, monkeypatch) -> None:
    publish(hub, zoo, "RawNet3")
    monkeypatch.setenv("HF_TOKEN", "hf_fake_token")
    assert cli("encoders", "fetch", "RawNet3").exit_code == 0
    hub_side = [a for p, a in hub.auth if not p.startswith("/cdn/")]
    cdn_side = [a for p, a in hub.auth if p.startswith("/cdn/")]
    assert hub_side and set(hub_side) == {"Bearer hf_fake_token"}
    assert cdn_side and set(cdn_side) == {""}
