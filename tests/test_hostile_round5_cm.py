"""Issue 63's hostile round 5, the countermeasure, black-box and spoofing cases: each input
reproduced, its one-line refusal or its counted, reported outcome asserted."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from typer.testing import CliRunner

from interbias.cli import app

runner = CliRunner()
RATE = 16000


def _one_line(res, message: str) -> None:
    assert res.exit_code == 1, res.output
    assert "Traceback" not in res.output
    assert res.output.splitlines() == [f"error: {message}"], res.output


# ---- black-box prepare: counts the manifest cannot give are said -------------------------------


def _tones(root: Path, speakers: list[tuple[str, str]], texts: int = 3) -> Path:
    """Speakers (name, gender) × 2 styles × ``texts`` sentences of 0.1 s tones; the manifest."""
    rows = []
    tt = np.arange(1600) / RATE
    for k, (spk, gender) in enumerate(speakers):
        for style in ("neutral", "sad"):
            for si in range(1, texts + 1):
                rel = f"{spk}/{style}/s{si}.flac"
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                sf.write(root / rel, 0.1 * np.sin(2 * np.pi * (120 + 20 * k + 3 * si) * tt), RATE, subtype="PCM_16")
                rows.append(
                    {"id": rel[:-5], "path": rel, "speaker": spk, "gender": gender, "style": style} | {"text": f"s{si}"}
                )
    (root / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root / "manifest.jsonl"


def _prepare(manifest: Path, *extra: str):
    out = manifest.parent / "p.csv"
    args = ["audit", "blackbox", "prepare", "--manifest", str(manifest), "--groups", "gender", "--noise-snr", ""]
    return runner.invoke(app, [*args, "--out", str(out), "--cache-dir", str(manifest.parent), "--force", *extra])


def test_blackbox_prepare_says_which_counts_the_manifest_could_not_give(tmp_path: Path) -> None:
    speakers = [("f0", "female"), ("f1", "female"), ("m0", "male"), ("m1", "male")]
    manifest = _tones(tmp_path, speakers, texts=4)
    res = _prepare(manifest, "--nontargets", "1000000000", "--text-variants", "1000000000")
    assert res.exit_code == 0, res.output
    # 4 speakers: 3 non-targets each; 4 texts, the first enrols, one is the base test: 2 variants
    assert [line for line in res.output.splitlines() if line.startswith("note:")] == [
        "note: --nontargets 1000000000: 4 of 4 speakers got fewer (at most 3; the manifest has no more)",
        "note: --text-variants 1000000000: 16 of 16 families got fewer (at most 2; the manifest has no more)",
    ]
    assert "base/nontarget 12, base/target 4" in res.output
    # counts the manifest gives in full: no note
    res = _prepare(manifest, "--nontargets", "3", "--text-variants", "2")
    assert res.exit_code == 0 and "note:" not in res.output, res.output


def test_blackbox_voice_variants_beyond_the_voices_are_said(tmp_path: Path) -> None:
    # two voices per group: a target family (enrolled speaker = test speaker) has no other voice
    # within its group and 2 across; a non-target family's within pool is empty too
    manifest = _tones(tmp_path, [("f0", "female"), ("f1", "female"), ("m0", "male"), ("m1", "male")])
    res = _prepare(manifest, "--voice-variants", "5", "--nontargets", "1", "--text-variants", "1")
    assert res.exit_code == 0, res.output
    notes = [line for line in res.output.splitlines() if line.startswith("note:")]
    assert notes == [
        "note: --voice-variants 5 (within): 8 of 8 families got fewer (at most 1; the manifest has no more)",
        "note: --voice-variants 5 (across): 8 of 8 families got fewer (at most 2; the manifest has no more)",
    ], res.output


# ---- cm train: every setting checked before any data is read ------------------------------------


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("sample_rate_hz=0", "cm train: sample_rate_hz must be a finite number >= 1000, got 0"),
        (
            "duration_s=0.001",
            "cm train: duration_s 0.001 (16 samples at 16000 Hz) is shorter than AASIST-L takes: "
            "at least 2315 samples (0.1447 s)",
        ),
    ],
)
def test_cm_train_refuses_a_spec_before_building_the_corpus(tmp_path: Path, setting: str, message: str) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    args = ["cm", "train", "--model", "AASIST-L", "--config", "small", "--set", setting]
    res = runner.invoke(app, [*args, "--cache-dir", str(cache), "--out", str(tmp_path / "m")])
    _one_line(res, message)
    assert list(cache.iterdir()) == []  # no corpus was rendered


def test_aasists_stated_shortest_input_is_the_one_it_takes() -> None:
    import torch

    from interbias.cm.train import PRESETS, Trainer, shortest_input

    net = Trainer("AASIST-L", PRESETS["small"], Path(".")).network().eval()
    # the sinc convolution has 129 taps (128 samples lost); a max-pool of 3 and six residual
    # blocks' pools of 3 on time then need 3**7 samples for one frame
    assert net.classifier.min_samples == 128 + 3**7
    assert shortest_input(net, 16, RATE) == 128 + 3**7
    assert shortest_input(net, 128 + 3**7, RATE) is None
    with torch.inference_mode():
        assert net(torch.zeros(1, 128 + 3**7)).shape == (1, 2)
        with pytest.raises(RuntimeError):
            net(torch.zeros(1, 127 + 3**7))


def test_a_network_without_a_stated_minimum_is_probed() -> None:
    from interbias.cm.train import PRESETS, Trainer, shortest_input

    net = Trainer("ResNet18-logspec", PRESETS["small"], Path(".")).network()
    shortest = shortest_input(net, 16, RATE)
    # the centred STFT's reflection pad needs more than n_fft / 2 samples
    assert shortest == 257
    assert shortest_input(net, shortest, RATE) is None


# ---- Track 1 on constant scores: no EER, said -----------------------------------------------------


def test_track1_on_constant_scores_has_no_eer_and_says_so(tmp_path: Path) -> None:
    from interbias.metrics.spoof import track1_metrics

    got = track1_metrics(np.full(5, 0.5), np.full(7, 0.5))
    assert np.isnan(got["eer"]) and np.isnan(got["eer_threshold"])
    assert got["eer_undefined"] == "every score is 0.5: a constant score has no EER"
    # min DCF of a constant is the default cost (accept all or reject all): defined, 1
    assert got["min_dcf"] == 1.0
    # one class constant, the other not: the scores rank, the EER is defined
    assert track1_metrics(np.full(5, 0.5), np.array([0.1, 0.5, 0.2]))["eer_undefined"] == ""
    path = tmp_path / "const.csv"
    rows = ["0.5,bonafide,-" for _ in range(4)] + [f"0.5,spoof,A0{i % 2}" for i in range(4)]
    path.write_text("score,label,attack\n" + "\n".join(rows) + "\n")
    res = runner.invoke(app, ["scores", "cm-eval", "track1", str(path), "--by", "attack"])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert "EER undefined (4 bona fide, 4 spoof)" in lines[0]
    assert lines[-2:] == [
        "note: EER undefined on the pooled scores: every score is 0.5: a constant score has no EER",
        "note: EER undefined in 2 of 2 rows by attack (first: every score is 0.5: a constant score has no EER)",
    ]
    res = runner.invoke(app, ["scores", "cm-eval", "track1", str(path), "--json"])
    pooled = json.loads(res.output)["pooled"]
    assert pooled["eer"] is None and pooled["eer_undefined"].endswith("has no EER")
