"""The black-box voice axis: variants that change only the voice, per-group invariance ratios with
speaker-bootstrap intervals, the worst-to-best ratio, and the refusal on one voice per group."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from interbias.audits.blackbox import analyze, read_protocol, score_with
from interbias.cli import app

runner = CliRunner()
SPEAKERS = [("f0", "female", "a"), ("f1", "female", "b"), ("f2", "female", "c")]
SPEAKERS += [("m0", "male", "d"), ("m1", "male", "e"), ("m2", "male", "f")]
STYLES = ("neutral", "sad")


@pytest.fixture(scope="module")
def tones(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """6 speakers × 2 styles × 3 sentences of 0.25 s tones (each speaker its own pitch)."""
    import soundfile as sf

    root = tmp_path_factory.mktemp("bbvoice")
    rows = []
    tt = np.arange(4000) / 16000
    for k, (spk, gender, tag) in enumerate(SPEAKERS):
        for style in STYLES:
            for si in range(1, 4):
                rel = f"{spk}/{style}/s{si}.flac"
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                wave = 0.1 * np.sin(2 * np.pi * (120 + 20 * k + 3 * si) * tt)
                sf.write(root / rel, wave.astype(np.float32), 16000, subtype="PCM_16")
                row = {"id": rel[:-5], "path": rel, "speaker": spk, "gender": gender, "tag": tag}
                rows.append(row | {"style": style, "text": f"s{si}"})
    (root / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def _prepare(tones: Path, out: Path, groups: str, voice: int = 1) -> object:
    args = ["audit", "blackbox", "prepare", "--manifest", str(tones / "manifest.jsonl"), "--groups", groups]
    args += ["--noise-snr", "", "--voice-variants", str(voice), "--out", str(out), "--cache-dir", str(out.parent)]
    return runner.invoke(app, args)


@pytest.fixture(scope="module")
def protocol(tones: Path, tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    out = tmp_path_factory.mktemp("bbv") / "protocol.csv"
    res = _prepare(tones, out, "gender")
    assert res.exit_code == 0, res.output
    return read_protocol(out)


def test_voice_variants_change_only_the_voice_within_and_across_groups(protocol: pd.DataFrame) -> None:
    gender = {s: g for s, g, _ in SPEAKERS}
    base = protocol[protocol["axis"] == "base"].set_index("family")
    voice = protocol[protocol["axis"] == "voice"]
    assert len(voice) == 2 * len(base)  # one within-group and one across-group variant per family
    for _, row in voice.iterrows():
        ref = base.loc[row["family"]]
        kind, spk = row["level"].split(":")
        assert (row["text"], row["style"], row["label"], row["test_speaker"]) == (
            ref["text"],
            ref["style"],
            ref["label"],
            spk,
        )
        assert spk not in {ref["enrol_speaker"], ref["test_speaker"]}
        assert (gender[spk] == gender[ref["test_speaker"]]) == (kind == "within")
        if row["label"] == "target":  # both sides re-spoken by the new voice, same enrolment text
            assert row["enrol_speaker"] == spk and row["enrol"] == f"{spk}/neutral/s1"
        else:
            assert row["enrol"] == ref["enrol"]


def test_an_invariant_scorer_gives_zero_on_every_axis_and_group(protocol: pd.DataFrame) -> None:
    speaker_of = dict(zip(protocol["enrol_path"], protocol["enrol_speaker"], strict=True))
    speaker_of.update(zip(protocol["test_path"], protocol["test_speaker"], strict=True))
    names = sorted(set(speaker_of.values()))
    scores = score_with(protocol, lambda path: np.eye(len(names))[names.index(speaker_of[path])] + 0.1)
    table = analyze(protocol.merge(scores, on="trial_id"), ["gender"], threshold=None, n_perm=10, seed=0).table
    inv = table[table["metric"] == "invariance_violation"].set_index("axis")
    assert set(inv.index) == {"style", "text", "noise", "voice", "voice:within", "voice:across"}
    finite = inv.dropna(subset=["value"])  # no noise variants in this protocol: nan, n = 0
    assert set(finite.index) == {"style", "text", "voice", "voice:within", "voice:across"}
    assert (finite["value"] == 0).all() and (finite["n"] > 0).all()
    groups = table[table["metric"] == "invariance_violation_group"]
    assert set(groups["axis"]) == {"style", "text", "voice", "voice:within", "voice:across"}
    assert set(groups["group"]) == {"female", "male"}
    assert (groups["value"] == 0).all() and (groups["ci_low"] == 0).all() and (groups["ci_high"] == 0).all()
    ratio = table[table["metric"] == "invariance_worst_to_best"]
    assert ratio["value"].isna().all() and ratio["note"].str.startswith("undefined").all()


def test_group_ratios_and_worst_to_best_match_a_direct_count(protocol: pd.DataFrame) -> None:
    gender = {s: g for s, g, _ in SPEAKERS}
    # accepts every trial whose test voice is female: voice changes across gender flip decisions
    frame = protocol.assign(decision=[gender[s] == "female" for s in protocol["test_speaker"]])
    table = analyze(frame, ["gender"], threshold=None, n_perm=10, seed=0).table
    base = frame[frame["axis"] == "base"].set_index("family")
    var = frame[frame["axis"] == "voice"]
    flips = var["decision"].to_numpy() != base.loc[var["family"], "decision"].to_numpy()
    group = base.loc[var["family"], "gender"].to_numpy()
    rows = table[(table["metric"] == "invariance_violation_group") & (table["axis"] == "voice")].set_index("group")
    want = {g: flips[group == g].mean() for g in ("female", "male")}
    for g, v in want.items():
        assert rows.loc[g, "value"] == pytest.approx(v)
        assert rows.loc[g, "ci_low"] <= v <= rows.loc[g, "ci_high"]
    within = var["level"].str.startswith("within").to_numpy()
    assert flips[within].sum() == 0 and flips[~within].all()
    ratio = table[(table["metric"] == "invariance_worst_to_best") & (table["axis"] == "voice")].iloc[0]
    assert ratio["value"] == pytest.approx(max(want.values()) / min(want.values()))
    again = analyze(frame, ["gender"], threshold=None, n_perm=10, seed=0).table
    pd.testing.assert_frame_equal(table, again)


def test_a_voice_axis_with_one_voice_per_group_is_refused_in_one_line(tones: Path, tmp_path: Path) -> None:
    res = _prepare(tones, tmp_path / "p.csv", "tag")
    assert res.exit_code == 1
    assert res.output == (
        "error: blackbox prepare: a voice axis needs at least 2 speakers in every group of tag; "
        "6 of 6 groups have one (first: 'a'); pass coarser --groups\n"
    )
    res = _prepare(tones, tmp_path / "p.csv", "gender", voice=-1)
    assert (
        res.exit_code == 1
        and res.output.count("\n") == 1
        and "error: --voice-variants must be a whole number >= 0, got -1" in res.output
    )
