"""``interbias audit blackbox``: prepare → score with a local encoder → analyze, against a white-box reference."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from interbias.audits.blackbox import analyze, read_answers, read_protocol, score_with
from interbias.cli import app
from interbias.metrics.verification import eer, eer_from_sweep, threshold_sweep
from interbias.utils.errors import AnalysisError

runner = CliRunner()
SPEAKERS = (("f0", "female", 200), ("f1", "female", 235), ("f2", "female", 180))
SPEAKERS += (("m0", "male", 100), ("m1", "male", 125), ("m2", "male", 140))
STYLES = (("neutral", 0.0), ("sad", 0.03), ("angry", 0.06))


@pytest.fixture(scope="module")
def tones(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """6 speakers (f0) × 3 styles (vibrato) × 4 sentences (spectral tilt) of 1 s harmonic tones."""
    import soundfile as sf

    root = tmp_path_factory.mktemp("bbtones")
    rows = []
    tt = np.arange(16000) / 16000
    for spk, gender, f0 in SPEAKERS:
        for style, vib in STYLES:
            for si, tilt in enumerate((0.5, 0.8, 1.1, 1.4), 1):
                phase = 2 * np.pi * f0 * (tt + vib * np.sin(2 * np.pi * 5 * tt) / (2 * np.pi * 5))
                wave = sum(np.sin(k * phase) / k**tilt for k in range(1, 12))
                rel = f"{spk}/{style}/s{si}.flac"
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                sf.write(root / rel, (0.1 * wave).astype(np.float32), 16000, subtype="PCM_16")
                rows.append(
                    {"id": rel[:-5], "path": rel, "speaker": spk, "gender": gender, "style": style, "text": f"s{si}"}
                )
    (root / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


@pytest.fixture(scope="module")
def protocol(tones: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bb") / "protocol.csv"
    args = ["audit", "blackbox", "prepare", "--manifest", str(tones / "manifest.jsonl"), "--groups", "gender"]
    res = runner.invoke(app, [*args, "--out", str(out), "--cache-dir", str(out.parent / "cache")])
    assert res.exit_code == 0, res.output
    return out


def test_protocol_families_differ_in_one_attribute(protocol: Path) -> None:
    p = read_protocol(protocol)
    assert set(p["axis"]) == {"base", "style", "text", "noise"}
    base = p[p["axis"] == "base"].set_index("family")
    assert len(base) == 6 * 3  # one target + two non-target families per speaker
    assert (base["label"] == "target").sum() == 6
    for _, row in p[p["axis"] != "base"].iterrows():
        ref = base.loc[row["family"]]
        assert (row["enrol"], row["label"], row["test_speaker"]) == (ref["enrol"], ref["label"], ref["test_speaker"])
        changed = {c for c in ("text", "style") if row[c] != ref[c]}
        if row["axis"] == "noise":  # the base test itself, rendered with noise
            assert not changed and row["test"] == f"{ref['test']}+{row['level']}" and row["level"] == "gaussian_15"
            assert Path(row["test_path"]).is_file() and row["test_path"] != ref["test_path"]
        else:
            assert changed == {row["axis"]}
    assert (p["label"] == "target").eq(p["enrol_speaker"] == p["test_speaker"]).all()


def whitebox_gaps(p: pd.DataFrame, scores: pd.Series) -> dict[str, float]:
    """EER per gender on the base trials and their gap, from the scores directly (no blackbox code)."""
    frame = p.assign(score=scores.to_numpy())
    base = frame[frame["axis"] == "base"]
    out = {}
    for g, sub in base.groupby("gender"):
        out[g] = eer(sub["score"].to_numpy(), (sub["label"] == "target").to_numpy())
    out["gap"] = max(out.values()) - min(out.values())
    return out


def test_round_trip_with_a_local_encoder_matches_the_whitebox_analysis(protocol: Path, tmp_path: Path) -> None:
    from interbias.audio.frontend import load
    from interbias.encoders import load_encoder

    res = runner.invoke(
        app, ["audit", "blackbox", "score", str(protocol), "--encoder", "mfcc-stats", "--out", str(tmp_path / "s.csv")]
    )
    assert res.exit_code == 0, res.output
    res = runner.invoke(
        app,
        ["audit", "blackbox", "analyze", str(tmp_path / "s.csv"), "--protocol", str(protocol), "--groups", "gender"]
        + ["--permutations", "50", "-q"],
    )
    assert res.exit_code == 0, res.output
    table = pd.read_csv(tmp_path / "blackbox.csv")
    # white box: the same trials scored from embeddings computed here
    p = read_protocol(protocol)
    enc = load_encoder("mfcc-stats")
    paths = sorted(set(p["enrol_path"]) | set(p["test_path"]))
    vec = {q: enc.embed([load(Path(q)).samples])[0].astype(np.float64) for q in paths}
    scores = pd.Series(
        [
            float(vec[e] @ vec[t] / np.linalg.norm(vec[e]) / np.linalg.norm(vec[t]))
            for e, t in zip(p["enrol_path"], p["test_path"], strict=True)
        ]
    )
    want = whitebox_gaps(p, scores)
    got = table[table["metric"] == "eer"].set_index("group")["value"]
    for g in ("female", "male"):
        assert got[g] == pytest.approx(want[g], abs=1e-6)
    gap = table[table["metric"] == "gap_eer"]["value"].iloc[0]
    assert gap == pytest.approx(want["gap"], abs=1e-6)
    # invariance violations, recomputed: decisions at the base trials' EER threshold
    base = p["axis"] == "base"
    thr = eer_from_sweep(threshold_sweep(scores[base], (p["label"] == "target")[base]))[1]
    dec = (scores >= thr).to_numpy()
    base_dec = dict(zip(p["family"][base], dec[base.to_numpy()], strict=True))
    for axis in ("style", "text", "noise"):
        sel = (p["axis"] == axis).to_numpy()
        ref = np.mean([d != base_dec[f] for d, f in zip(dec[sel], p["family"][sel], strict=True)])
        row = table[(table["metric"] == "invariance_violation") & (table["axis"] == axis)]
        assert row["value"].iloc[0] == pytest.approx(ref)


def test_a_scorer_invariant_by_construction_gives_zero_violations(protocol: Path) -> None:
    p = read_protocol(protocol)
    speaker_of = dict(zip(p["enrol_path"], p["enrol_speaker"], strict=True))
    speaker_of.update(zip(p["test_path"], p["test_speaker"], strict=True))
    names = sorted(set(speaker_of.values()))
    # an embedding that is a function of the speaker alone: one-hot identity plus a constant
    scores = score_with(p, lambda path: np.eye(len(names))[names.index(speaker_of[path])] + 0.1)
    result = analyze(read_answers_frame(p, scores), ["gender"], threshold=None, n_perm=20, seed=0)
    inv = result.table[result.table["metric"] == "invariance_violation"]
    assert list(inv["value"]) == [0.0, 0.0, 0.0]
    assert (inv["n"] > 0).all()
    # a style-sensitive scorer flips decisions on style variants only
    style_of = dict(zip(p["test_path"], p["style"], strict=True))
    sensitive = p.assign(
        score=[
            float(e == t and style_of[tp] == "neutral")
            for e, t, tp in zip(p["enrol_speaker"], p["test_speaker"], p["test_path"], strict=True)
        ]
    )
    result = analyze(sensitive, ["gender"], threshold=0.5, n_perm=20, seed=0)
    inv = result.table[result.table["metric"] == "invariance_violation"].set_index("axis")["value"]
    assert inv["style"] > 0 and inv["text"] == 0 and inv["noise"] == 0


def read_answers_frame(p: pd.DataFrame, scores: pd.DataFrame) -> pd.DataFrame:
    return p.merge(scores, on="trial_id")


def test_gap_permutation_p_matches_exact_enumeration() -> None:
    # 6 speakers, 3 per group, one base trial each: gender f always correct, m half wrong
    rows = []
    for i, (spk, g) in enumerate([("a", "f"), ("b", "f"), ("c", "f"), ("d", "m"), ("e", "m"), ("h", "m")]):
        for j in range(2):
            correct = g == "f" or (i + j) % 2 == 0
            rows.append(
                {
                    "family": f"{spk}{j}",
                    "axis": "base",
                    "label": "target",
                    "enrol_speaker": spk,
                    "gender": g,
                    "decision": "1" if correct else "0",
                    "trial_id": f"{spk}{j}",
                }
            )
    frame = pd.DataFrame(rows)
    frame["decision"] = frame["decision"] == "1"
    result = analyze(frame, ["gender"], threshold=None, n_perm=1000, seed=0).table
    gap_row = result[result["metric"] == "gap_accuracy"].iloc[0]
    acc = frame.groupby("enrol_speaker")["decision"].mean()
    spk = sorted(acc.index)

    def gap(members: tuple[str, ...]) -> float:
        a = np.mean([acc[s] for s in members])
        b = np.mean([acc[s] for s in spk if s not in members])
        return abs(a - b)

    observed = gap(("a", "b", "c"))
    exact = np.mean([gap(c) >= observed - 1e-12 for c in itertools.combinations(spk, 3)])
    assert gap_row["value"] == pytest.approx(observed)
    assert gap_row["p_value"] == pytest.approx(exact, abs=0.04)


def test_bad_answers_get_one_clear_error(protocol: Path, tmp_path: Path) -> None:
    p = read_protocol(protocol)
    path = tmp_path / "answers.csv"
    pd.DataFrame({"trial_id": p["trial_id"][:-1], "score": 0.5}).to_csv(path, index=False)
    with pytest.raises(AnalysisError, match="have no answer"):
        read_answers(path, p)
    pd.DataFrame({"trial_id": p["trial_id"], "decision": "maybe"}).to_csv(path, index=False)
    with pytest.raises(AnalysisError, match="decision values"):
        read_answers(path, p)
    pd.DataFrame({"id": p["trial_id"]}).to_csv(path, index=False)
    res = runner.invoke(app, ["audit", "blackbox", "analyze", str(path), "--protocol", str(protocol)])
    assert res.exit_code == 1 and "needs columns trial_id and score" in res.output
    extra = pd.DataFrame({"trial_id": [*p["trial_id"], "t999999", "x1"], "score": 0.5})
    extra.to_csv(path, index=False)  # every trial answered, plus two the protocol does not hold: refused
    res = runner.invoke(app, ["audit", "blackbox", "analyze", str(path), "--protocol", str(protocol)])
    assert res.exit_code == 1 and res.output == (
        f"error: {path}: 2 answer(s) for trial ids not in the protocol (an answers file of another protocol?); "
        "first: 't999999'\n"
    )
