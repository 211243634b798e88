"""Issue 63's hostile round 5, the countermeasure, black-box and spoofing cases: each input
reproduced, its one-line refusal or its counted, reported outcome asserted."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from test_cm_score_files import aasist_l  # noqa: F401  (the fixture)
from typer.testing import CliRunner

from interbias.cli import app

runner = CliRunner()
RATE = 16000


def _notes(output: str) -> list[str]:
    """The ``note:`` lines of ``output``, each with its wrapped continuation lines joined."""
    notes: list[str] = []
    open_note = False
    for line in output.splitlines():
        if line.startswith("note: "):
            notes.append(line)
            open_note = True
        elif open_note and line.startswith("  "):
            notes[-1] += " " + line.strip()
        else:
            open_note = False
    return notes


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
    assert _notes(res.output) == [
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
    assert _notes(res.output) == [
        "note: --voice-variants 5 (within): 8 of 8 families got fewer (at most 1; the manifest has no more)",
        "note: --voice-variants 5 (across): 8 of 8 families got fewer (at most 2; the manifest has no more)",
    ], res.output


# ---- cm train: every setting checked before any data is read ------------------------------------


@pytest.mark.parametrize(
    ("model", "setting", "message"),
    [
        ("AASIST-L", "sample_rate_hz=0", "cm train: sample_rate_hz must be a finite number >= 1000, got 0"),
        (
            "AASIST-L",
            "duration_s=0.001",
            "cm train: duration_s 0.001 (16 samples at 16000 Hz) is shorter than AASIST-L takes: "
            "at least 2315 samples (0.1447 s)",
        ),
        ("GMM-lfcc", "sample_rate_hz=0", "cm train: sample_rate_hz must be a finite number in [1000, 192000], got 0"),
        (
            "GMM-lfcc",
            "duration_s=0.001",
            "cm train: duration_s 0.001 (16 samples at 16000 Hz) is shorter than GMM-lfcc needs: "
            "at least one full LFCC window of 480 samples",
        ),
        ("LCNN-LFCC-frames", "sample_rate_hz=0", "cm train: sample_rate_hz must be a finite number >= 1000, got 0"),
        ("LCNN-LFCC-frames", "width=0", "cm train: lr, batch_size, max_epochs, patience and width must be positive"),
    ],
)
def test_cm_train_refuses_a_spec_before_building_the_corpus(
    tmp_path: Path, model: str, setting: str, message: str
) -> None:
    """Every trainer (the loop, GMM-lfcc's EM, the Track 2 frame detector) checks first."""
    cache = tmp_path / "cache"
    cache.mkdir()
    args = ["cm", "train", "--model", model, "--config", "small", "--set", setting]
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
    assert "EER undefined (4 bona fide, 4 spoof)" in res.output.splitlines()[0]
    assert _notes(res.output) == [
        "note: EER undefined on the pooled scores: every score is 0.5: a constant score has no EER",
        "note: EER undefined in 2 of 2 rows by attack (first: every score is 0.5: a constant score has no EER)",
    ]
    res = runner.invoke(app, ["scores", "cm-eval", "track1", str(path), "--json"])
    pooled = json.loads(res.output)["pooled"]
    assert pooled["eer"] is None and pooled["eer_undefined"].endswith("has no EER")


# ---- recognition labels: a typo is refused with the valid set ----------------------------------


def _labels(path: Path, labels: list[str]) -> Path:
    path.write_text("".join(f"u{i} {lab}\n" for i, lab in enumerate(labels)))
    return path


def _recognition(ref: Path, pred: Path, *opts: str):
    return runner.invoke(app, ["scores", "cm-eval", "recognition", str(ref), str(pred), *opts])


def test_recognition_refuses_predicted_labels_outside_the_classes(tmp_path: Path) -> None:
    ref = _labels(tmp_path / "ref.txt", ["A", "A", "B", "unknown"])
    pred = _labels(tmp_path / "pred.txt", ["A", "C", "B", "unknwon"])
    res = _recognition(ref, pred, "--unknown", "unknown")
    _one_line(
        res,
        f"{pred}: 2 prediction(s) with a label that is neither a known class nor the unknown class "
        "(first: 'C'); valid: A, B, unknown",
    )
    # --known: the unknown class is the reference's other labels and the recognisers' 'unknown'
    res = _recognition(ref, pred, "--known", "A,B")
    assert res.exit_code == 1 and "valid: A, B, unknown" in res.output
    good = _labels(tmp_path / "good.txt", ["A", "unknown", "B", "unknown"])
    res = _recognition(ref, good, "--unknown", "unknown", "--json")
    assert res.exit_code == 0, res.output
    # A: tp 1, fn 1 (predicted unknown); B: tp 1: P = 1, R = 3/4
    assert json.loads(res.output)["f1"] == pytest.approx(2 * 1 * 0.75 / 1.75)


def test_recognition_refuses_an_unknown_or_known_label_in_neither_file(tmp_path: Path) -> None:
    ref = _labels(tmp_path / "ref.txt", ["A", "B", "unknown"])
    res = _recognition(ref, ref, "--unknown", "unknwon")
    _one_line(res, "--unknown: 'unknwon' is in neither file; the reference's labels are A, B, unknown")
    res = _recognition(ref, ref, "--known", "A,Bx")
    _one_line(res, "--known: class 'Bx' is in neither file; the reference's labels are A, B, unknown")


def test_recognition_names_the_reference_labels_pooled_as_unknown(tmp_path: Path) -> None:
    ref = _labels(tmp_path / "ref.txt", ["A", "B", "C", "unknown", "unknown"])
    pred = _labels(tmp_path / "pred.txt", ["A", "B", "unknown", "unknown", "unknown"])
    res = _recognition(ref, pred, "--known", "A,B")
    assert res.exit_code == 0, res.output
    assert res.output.splitlines()[-1] == "note: reference labels counted as the unknown class: C (1), unknown (2)"


# ---- a click: one audio-validity rule in cm score and in CM runs -------------------------------

CLICK = "only 0.020 s of its 1.000 s holds signal above -90 dBFS (the rest is digital silence), "
CLICK += "shorter than the minimum 0.5 s; nothing for a CM to judge"


def _click(path: Path) -> Path:
    x = np.zeros(RATE, np.float32)
    x[RATE // 2] = 0.5
    sf.write(path, x, RATE)
    return path


def test_cm_score_counts_a_click_a_failure_as_cm_runs_do(aasist_l, tmp_path: Path) -> None:  # noqa: F811
    from interbias.cm.scoring import degrade
    from interbias.corpora.manifest import Manifest, Utterance
    from interbias.operators import parse_chain

    folder, _ = aasist_l
    click = _click(tmp_path / "click.wav")
    speech = tmp_path / "noise.wav"
    sf.write(speech, 0.1 * np.random.default_rng(3).standard_normal(RATE // 2), RATE)  # 0.5 s: the minimum
    res = runner.invoke(app, ["cm", "score", "AASIST-L", str(click), str(speech), "--checkpoint", str(folder), "-q"])
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert res.stderr.strip().splitlines()[-1] == f"{click}: {CLICK}"
    assert [line.split(",")[2] for line in res.stdout.splitlines()[1:]] == ["noise"]  # the click has no row
    # a CM run's scoring stage: the same file, the same line, counted
    utts = [
        Utterance.from_dict({"id": p.stem, "path": p.name, "speaker": "s", "label": "bonafide"})
        for p in (click, speech)
    ]
    manifest = Manifest("clicks", tmp_path, tuple(utts))
    cell = degrade(manifest, list(manifest), parse_chain([], where="test"), tmp_path)
    assert cell.ids == ["noise"]
    assert cell.failed == [f"click: {click}: {CLICK}"]


# ---- a located region past the audio's end ------------------------------------------------------


def test_a_predicted_fake_region_past_the_audio_is_clipped_and_counted(tmp_path: Path) -> None:
    ref = tmp_path / "ref.txt"
    ref.write_text("u1 0.00-1.00-T/1.00-2.00-F/2.00-2.95-T 0\nu2 0.00-3.00-T 1\n")
    pred = tmp_path / "pred.txt"
    pred.write_text("u1 0.00-1.50-T/1.50-10.00-F 0\nu2 0.00-3.00-T 1\n")
    res = runner.invoke(app, ["scores", "cm-eval", "location", str(ref), str(pred), "--json"])
    assert res.exit_code == 0, res.output
    got = json.loads(res.output)
    # u1 ends at 2.95 s: predicted fake 1.50-2.95, of which 1.50-2.00 is fake in the reference
    assert got["segment_tp_s"] == pytest.approx(0.5)
    assert got["segment_fp_s"] == pytest.approx(0.95)  # 2.00-2.95, not 2.00-10.00
    assert got["segment_fn_s"] == pytest.approx(0.5)
    assert got["segment_precision"] == pytest.approx(0.5 / 1.45)
    assert got["notes"] == (
        "1 utterance(s) have predicted fake regions past the reference's end (first: u1): "
        "7.05 s of audio that does not exist clipped off, not counted"
    )
    # at a frame resolution the same cut applies
    res = runner.invoke(app, ["scores", "cm-eval", "location", str(ref), str(pred), "--json", "--resolution", "10ms"])
    assert json.loads(res.output)["segment_fp_s"] == pytest.approx(0.95)


# ---- add2023 bonafide_class: one of the label files' classes --------------------------------------


def test_add2023_refuses_a_bonafide_class_no_utterance_has(tmp_path: Path) -> None:
    from test_corpora_add2023 import tree

    from interbias.corpora.add2023 import prepare_add2023
    from interbias.utils.errors import CorpusError

    tree(tmp_path, 3, "train", ["x 0", "y 3", "z 5"], {"x": 0.1, "y": 0.1, "z": 0.1})
    with pytest.raises(CorpusError) as exc:
        prepare_add2023(tmp_path, tmp_path, {"track": 3, "bonafide_class": 9})
    assert str(exc.value) == (
        "add2023: bonafide_class '9' is no class of the label files (every utterance would be spoof); classes: 0, 3, 5"
    )
    labels = [u.get("label") for u in prepare_add2023(tmp_path, tmp_path, {"track": 3, "bonafide_class": 3})]
    assert labels == ["spoof", "bonafide", "spoof"]
    tree(tmp_path, 2, "train", ["b 0-1.0-T 1"], {"b": 1.0})
    with pytest.raises(CorpusError, match=r"^add2023: bonafide_class applies to Track 3"):
        prepare_add2023(tmp_path, tmp_path, {"track": 2, "bonafide_class": 0})


# ---- one audio in three ASVspoof 5 splits -------------------------------------------------------


def test_asvspoof5_refuses_the_same_audio_in_several_splits(tmp_path: Path) -> None:
    import shutil

    import fake_corpora

    from interbias.corpora.asvspoof5 import prepare_asvspoof5
    from interbias.utils.errors import ManifestError

    root = fake_corpora.asvspoof5(tmp_path / "a5")
    assert len(prepare_asvspoof5(root)) == 10  # distinct audio: accepted
    # the train bona fide file copied over a dev and an eval file (other names, other speakers)
    src = root / "flac_T" / "T_0000000001.flac"
    shutil.copy(src, root / "flac_D" / "D_0000000003.flac")
    shutil.copy(src, root / "flac_E_eval" / "E_0000000001.flac")
    with pytest.raises(ManifestError) as exc:
        prepare_asvspoof5(root)
    assert str(exc.value) == (
        f"asvspoof5 {root}: 1 audio(s) appear in more than one split (same file or identical bytes; "
        "train/dev/eval must not share audio); first: 'T_0000000001' (train) = 'D_0000000003' (dev) = "
        "'E_0000000001' (eval)"
    )
    # a link to one file from two splits: caught by its path, without reading it
    fake_corpora.asvspoof5(tmp_path / "b5")
    link = tmp_path / "b5" / "flac_D" / "D_0000000003.flac"
    link.unlink()
    link.symlink_to(tmp_path / "b5" / "flac_T" / "T_0000000003.flac")
    with pytest.raises(ManifestError, match=r"1 audio\(s\) appear in more than one split .*'D_0000000003' \(dev\)"):
        prepare_asvspoof5(tmp_path / "b5")


# ---- a QMF that could not be fitted: said on the console ------------------------------------------


def test_a_qmf_that_cannot_be_fitted_is_said_on_the_console(tmp_path: Path, tiny_corpus, session_cache, capsys) -> None:
    from conftest import tiny_experiment
    from run_helpers import isolated_cache
    from test_fairness_run import SPLIT

    from interbias.run.conductor import RunOptions, run

    # every utterance is cut to 0.5 s: the duration measure is the same on every trial
    scoring = {"calibration": {"kind": "qmf", "measures": ["duration"]}}
    exp = tiny_experiment(
        tmp_path, name="T63q", trials=SPLIT, scoring=scoring, frontend={"max_duration_s": 0.5, "min_duration_s": 0.25}
    )
    opts = RunOptions(
        experiment=str(exp), encoders=["mfcc-stats"], out=tmp_path / "r", quiet=True, command=["t"],
        cache_dir=isolated_cache(tmp_path, session_cache),
    )  # fmt: skip
    outcome = run(opts)
    err = capsys.readouterr().err.splitlines()
    line = (
        "mfcc-stats: QMF calibration not fitted: q_duration_min is the same on every fitting trial: no weight "
        "can be fitted for it; its qmf_ columns are empty"
    )
    assert line in err, err
    assert outcome.results["qmf_act_dcf"].isna().all()
    record = json.loads((outcome.run_dir / "calibration.json").read_text())["models"]["mfcc-stats"]["qmf"]
    assert record["error"] in line


def test_qmf_notices_count_the_cells_without_a_fit() -> None:
    from interbias.run.qmf import qmf_notices

    models = {
        "A": {"qmf": {"method": "m", "per_cell": {"c1": {"error": "no dev trials"}, "c2": {"weights": [1.0]}}}},
        "B": {"qmf": {"method": "m", "weights": [1.0]}},
        "C": {},
    }
    assert qmf_notices(models) == [
        "A: QMF calibration not fitted in 1 cell(s) (first: c1: no dev trials); their qmf_ columns are empty"
    ]
    assert qmf_notices(None) == []


# ---- CJK and emoji in LaTeX under T1 ------------------------------------------------------------


def test_t1_safe_transliterates_or_names_what_t1_cannot_set() -> None:
    from interbias.analysis.reporting.latex import escape, t1_safe

    tex, replaced = t1_safe(escape("编码器🙂 Łódź ő é_1 −2"))
    assert tex == r"{[U+7F16]}{[U+7801]}{[U+5668]}{[U+1F642]} {[U+0141]}ódz o é\_1 $-$2"
    assert replaced == ["编", "码", "器", "🙂", "Ł", "ź", "ő"]
    latin1 = "".join(map(chr, range(0xA0, 0x100)))
    assert t1_safe(latin1) == (latin1, [])


@pytest.mark.slow
def test_a_report_with_cjk_and_emoji_names_compiles_under_t1(tmp_path: Path) -> None:
    import shutil
    import subprocess

    from synthetic_runs import gender_noise_run

    cells = {("female", "clean"): 3.0, ("female", "n10"): 2.5, ("male", "clean"): 1.0, ("male", "n10"): 0.5}
    run = gender_noise_run(tmp_path / "run", {"编码器🙂": cells, "enc_b": dict(cells)}, n=6)
    out = tmp_path / "out"
    out.mkdir()
    res = runner.invoke(app, ["report", str(run), "--bootstrap", "200", "--out", str(out), "--latex"])
    assert res.exit_code == 0, res.output
    note = " ".join(res.output.split("note: ")[-1].split())
    assert note.endswith(
        "table(s), transliterated or written as [U+XXXX] (U+7F16, U+7801, U+5668, U+1F642)"
    ) and note.startswith("4 character(s) outside the T1 encoding, in ")
    models = (out / "tables" / "models.tex").read_text()
    assert models.startswith("% 4 character(s) outside the T1 encoding transliterated")
    assert "{[U+7F16]}" in models and "编" not in models
    if shutil.which("pdflatex") is None:
        pytest.skip("pdflatex missing: the compile is checked where it is installed")
    # a latin-1 table beside them compiles too
    (out / "tables" / "latin1.tex").write_text("".join(map(chr, range(0xA1, 0x100))) + "\n")
    doc = (out / "tables.tex").read_text().replace(r"\end{document}", "\\input{tables/latin1}\n\\end{document}")
    (out / "tables.tex").write_text(doc)
    done = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "tables.tex"],
        cwd=out, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:]


def test_a_cm_runs_track1_table_says_why_an_eer_is_empty() -> None:
    import pandas as pd

    from interbias.analysis.security.cm_track1 import run_table

    scores = pd.DataFrame(
        {
            "model": "m", "cell": "c", "split": "eval", "log_odds": 0.25,
            "label": ["bonafide", "bonafide", "spoof", "spoof"], "attack": ["", "", "A01", "A02"],
        }
    )  # fmt: skip
    table = run_table(scores)
    assert table["eer"].isna().all() and (table["min_dcf"] == 1.0).all()
    assert set(table["note"]) == {"every score is 0.25: a constant score has no EER"}


def test_region_scoring_refuses_a_click_by_the_cm_score_rule(tmp_path: Path) -> None:
    """ADD 2023 Track 3's region path loads audio by the rule of `cm score`: a click is a
    failure line and has no segment line; 0.5 s of signal is located."""
    from interbias.cm.lcnn_frames import FrameDetector, RegionRule, frame_network
    from interbias.cm.regions import score_region_files
    from interbias.cm.score_files import ScoreJob

    click = _click(tmp_path / "click.wav")
    speech = tmp_path / "noise.wav"
    sf.write(speech, 0.1 * np.random.default_rng(3).standard_normal(RATE // 2), RATE)
    detector = FrameDetector(frame_network(4).eval(), tmp_path / "untrained.pt", {})
    job = ScoreJob([(click, "click", "", ""), (speech, "noise", "", "")])
    n, failed = score_region_files(detector, job, RegionRule(0.5, 0.0).check(), tmp_path / "seg.txt")
    assert (n, failed) == (1, [f"{click}: {CLICK}"])
    assert [line.split()[0] for line in (tmp_path / "seg.txt").read_text().splitlines()] == ["noise"]


# ---- cm-eval eer on constant scores: no EER, said as Track 1 says it ------------------------------


def test_cm_eval_eer_on_constant_scores_has_no_eer_and_says_so(tmp_path: Path) -> None:
    const = tmp_path / "const.csv"
    const.write_text("score,label\n" + "0.5,bonafide\n" * 2 + "0.5,spoof\n" * 2)
    ranked = tmp_path / "ranked.csv"
    ranked.write_text("score,label\n0.1,bonafide\n0.9,bonafide\n0.3,spoof\n0.2,spoof\n")
    res = runner.invoke(app, ["scores", "cm-eval", "eer", str(const), str(ranked)])
    assert res.exit_code == 0, res.output
    # independent: accept score >= t; the one threshold where miss = false accept is 0.3 (1/2 each)
    bona, spoof = np.array([0.1, 0.9]), np.array([0.3, 0.2])
    equal = [t for t in (0.1, 0.2, 0.3, 0.9) if np.mean(bona < t) == np.mean(spoof >= t)]
    assert equal == [0.3] and np.mean(bona < 0.3) == 0.5
    assert res.output.splitlines()[:3] == [
        f"{const}: eer undefined (2 bona fide, 2 spoof)",
        f"{ranked}: eer 0.500000 at threshold 0.300000 (2 bona fide, 2 spoof)",
        "weer undefined (weights 0.4, 0.6)",
    ]
    assert _notes(res.output) == [
        f"note: EER undefined in {const}: every score is 0.5: a constant score has no EER",
        "note: weer undefined: 1 of 2 rounds have no EER",
    ]
    rounds = json.loads(runner.invoke(app, ["scores", "cm-eval", "eer", str(const), "--json"]).output)["rounds"]
    assert rounds[0]["eer"] is None and rounds[0]["eer_undefined"].endswith("a constant score has no EER")
