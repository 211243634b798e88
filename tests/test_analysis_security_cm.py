"""Countermeasure metrics of ADD 2023 against hand-computed values, the paper's tables and sklearn."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import precision_score, recall_score
from typer.testing import CliRunner

from interbias.analysis.security.cm import (
    dsr_at_eer,
    location_scores,
    open_set_f1,
    parse_segment_line,
    read_cm_scores,
    read_segment_labels,
    weighted_eer,
)
from interbias.cli import app
from interbias.metrics.verification import eer
from interbias.utils.errors import MetricError

REF = """\
u1 0.00-1.00-T/1.00-2.00-F/2.00-3.00-T 0
u2 0.00-2.50-T 1
u3 0.00-0.50-F/0.50-2.00-T 0
u4 0.00-1.00-T/1.00-1.50-F 0
"""
PRED = """\
u1 0.00-1.50-T/1.50-2.50-F/2.50-3.00-T 0
u2 0.00-2.00-T/2.00-2.50-F 0
u3 0.00-2.00-T 1
u4 0.00-1.20-T/1.20-1.50-F 0
"""


@pytest.mark.parametrize(
    ("r1", "r2", "published"),
    [(11.56, 13.05, 12.45), (21.11, 15.82, 17.93), (23.44, 21.26, 22.13), (36.90, 63.80, 53.04), (38.06, 100.0, 75.22)],
)
def test_weighted_eer_reproduces_add2023_table6(r1: float, r2: float, published: float) -> None:
    # Table 6 rounds inputs and output to 0.01 per cent: the weighted sum agrees within 0.01
    assert 100 * weighted_eer([r1 / 100, r2 / 100]) == pytest.approx(published, abs=0.01)


def test_weighted_eer_errors() -> None:
    with pytest.raises(MetricError) as exc:
        weighted_eer([0.1, 0.2], [0.5, 0.6])
    assert str(exc.value) == "weighted EER: weights must be >= 0 and sum to 1, got [0.5, 0.6]"
    with pytest.raises(MetricError) as exc:
        weighted_eer([0.1, 0.2, 0.3])
    assert str(exc.value) == "weighted EER: 3 round(s) but 2 weight(s)"
    assert weighted_eer([0.1, 0.2, 0.3], [0.2, 0.3, 0.5]) == pytest.approx(0.02 + 0.06 + 0.15)


def test_location_hand_computed(tmp_path: Path) -> None:
    (tmp_path / "ref.txt").write_text(REF)
    (tmp_path / "pred.txt").write_text(PRED)
    res = location_scores(
        read_segment_labels(tmp_path / "ref.txt", reference=True),
        read_segment_labels(tmp_path / "pred.txt", reference=False),
    )
    # sentences (fake = positive): u1 TP, u2 FP, u3 FN, u4 TP
    assert (res.sentence_tp, res.sentence_tn, res.sentence_fp, res.sentence_fn) == (2, 0, 1, 1)
    assert res.sentence_accuracy == 0.5
    # seconds over reference-fake utterances: u1 TP .5 FP .5 FN .5; u3 FN .5; u4 TP .3 FN .2
    assert res.segment_tp_s == pytest.approx(0.8)
    assert res.segment_fp_s == pytest.approx(0.5)
    assert res.segment_fn_s == pytest.approx(1.2)
    assert res.segment_precision == pytest.approx(8 / 13)
    assert res.segment_recall == pytest.approx(2 / 5)
    assert res.segment_f1 == pytest.approx(16 / 33)
    assert res.score == pytest.approx(0.3 * 0.5 + 0.7 * 16 / 33)
    assert res.notes == ()


def test_location_zero_guards_are_reported() -> None:
    ref = {"a": parse_segment_line("a 0-1-T/1-2-F 0", where="x", reference=True)}
    pred = {"a": parse_segment_line("a 0-2-T 1", where="x", reference=False)}
    res = location_scores(ref, pred)
    assert res.segment_precision == 0 and res.segment_f1 == 0 and res.score == 0
    assert res.notes[0] == "no predicted fake duration in reference-fake utterances: segment precision set to 0"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("a 0-1-T", "f:1: expected 'UTT_ID START-END-T/START-END-F/... LABEL', got 'a 0-1-T'"),
        ("a 0-1-X 1", "f:1: segment '0-1-X' is not START-END-T or START-END-F (seconds)"),
        ("a 1-0.5-T 1", "f:1: segment '1-0.5-T' ends before it starts"),
        ("a 0-1-T/0.5-2-F 0", "f:1: segment '0.5-2-F' overlaps the previous one (which ends at 1 s)"),
        ("a 1-2-T/0-0.5-F 0", "f:1: segment '0-0.5-F' is out of order (starts before the previous segment)"),
        ("a 0-1-T/1-2-F 1", "f:1: label 1 disagrees with the segments (0 = fake exactly when a segment is F)"),
        ("a 0-1-T 2", "f:1: label '2' is not 1 (genuine) or 0 (fake)"),
    ],
)
def test_segment_parse_errors(line: str, message: str) -> None:
    with pytest.raises(MetricError) as exc:
        parse_segment_line(line, where="f:1", reference=True)
    assert str(exc.value) == message


def test_open_set_macro_f1_hand_and_sklearn() -> None:
    y_true = ["a", "a", "a", "b", "b", "c", "u", "u"]
    y_pred = ["a", "a", "b", "b", "a", "u", "a", "c"]
    res = open_set_f1(y_true, y_pred, ["a", "b", "c"])
    per = res.per_class.set_index("class")
    assert per.loc["a"][["tp", "fp", "fn"]].tolist() == [2, 2, 1]  # an unknown predicted as a is an FP of a
    assert per.loc["c"][["tp", "fp", "fn"]].tolist() == [0, 1, 1]  # c predicted unknown is an FN of c
    assert res.precision == pytest.approx(1 / 3) and res.recall == pytest.approx(7 / 18)
    assert res.f1 == pytest.approx(14 / 39)
    assert res.precision == pytest.approx(precision_score(y_true, y_pred, labels=["a", "b", "c"], average="macro"))
    assert res.recall == pytest.approx(recall_score(y_true, y_pred, labels=["a", "b", "c"], average="macro"))
    assert res.n_unknown == 2
    rng = np.random.default_rng(7)
    t = rng.integers(0, 8, 300).astype(str)  # 7 = unknown
    p = np.where(rng.random(300) < 0.6, t, rng.integers(0, 8, 300).astype(str))
    known = [str(i) for i in range(7)]
    r = open_set_f1(t, p, known)
    ps = precision_score(t, p, labels=known, average="macro", zero_division=0)
    rs = recall_score(t, p, labels=known, average="macro", zero_division=0)
    assert r.precision == pytest.approx(ps) and r.recall == pytest.approx(rs)
    assert r.f1 == pytest.approx(2 * ps * rs / (ps + rs))
    never = open_set_f1(["a", "b"], ["a", "a"], ["a", "b"])
    assert never.notes == ("class b: never predicted, precision term 0",)


def test_dsr_at_each_detectors_eer_threshold() -> None:
    det1 = (np.array([0.9, 0.8, 0.7, 0.1, 0.75, 0.2]), np.array([1, 1, 1, 0, 0, 0]))
    det2 = (np.array([0.6, 0.5, 0.4, 0.3, 0.2, 0.1]), np.array([1, 1, 1, 0, 0, 0]))
    res = dsr_at_eer([det1, det2])
    assert res["thresholds"] == [0.75, 0.4] and res["wrong"] == [1, 0]
    assert res["dsr"] == pytest.approx(1 / 6)


def test_cli_cm_eval(tmp_path: Path) -> None:
    r1 = tmp_path / "r1.txt"
    r1.write_text("a 0.9 bonafide\nb 0.8 bonafide\nc 0.3 spoof\nd 0.85 spoof\ne 0.1 spoof\n")
    r2 = tmp_path / "r2.csv"
    r2.write_text("score,label\n0.9,bonafide\n0.2,bonafide\n0.3,spoof\n0.1,spoof\n")
    runner = CliRunner()
    res = runner.invoke(app, ["scores", "cm-eval", "eer", str(r1), str(r2), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    e1 = eer(*read_cm_scores(r1))
    e2 = eer(*read_cm_scores(r2))
    assert [r["eer"] for r in out["rounds"]] == pytest.approx([e1, e2])
    assert out["weer"] == pytest.approx(0.4 * e1 + 0.6 * e2) and out["weights"] == [0.4, 0.6]
    res = runner.invoke(app, ["scores", "cm-eval", "eer", str(r1), str(r2), str(r1)])
    assert res.exit_code == 1
    assert res.stderr.strip() == "error: 3 rounds: give --weights (ADD 2023 defines 0.4,0.6 for two rounds)"
    for name, only in (("bona fide", "bonafide"), ("spoof", "spoof")):  # was: "no non-target trials"
        one = tmp_path / f"only-{only}.txt"
        one.write_text(f"a 0.9 {only}\nb 0.8 {only}\n")
        res = runner.invoke(app, ["scores", "cm-eval", "eer", str(one)])
        missing = "spoof" if name == "bona fide" else "bona fide"
        assert res.exit_code == 1 and res.stderr.strip() == (
            f"error: {one}: no {missing} trials (2 trial(s), all of one class): the EER is undefined"
        )
    (tmp_path / "ref.txt").write_text(REF)
    (tmp_path / "pred.txt").write_text(PRED)
    res = runner.invoke(
        app, ["scores", "cm-eval", "location", str(tmp_path / "ref.txt"), str(tmp_path / "pred.txt"), "--json"]
    )
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["score"] == pytest.approx(0.3 * 0.5 + 0.7 * 16 / 33)
    (tmp_path / "pred2.txt").write_text(PRED.replace("u4", "u5"))
    res = runner.invoke(app, ["scores", "cm-eval", "location", str(tmp_path / "ref.txt"), str(tmp_path / "pred2.txt")])
    assert res.stderr.strip() == (
        "error: location: 1 reference utterance(s) have no prediction (first: u4); "
        "1 prediction(s) are not in the reference (first: u5)"
    )
    (tmp_path / "t.txt").write_text("x1 a\nx2 a\nx3 a\nx4 b\nx5 b\nx6 c\nx7 7\nx8 7\n")
    (tmp_path / "p.txt").write_text("x1 a\nx2 a\nx3 b\nx4 b\nx5 a\nx6 7\nx7 a\nx8 c\n")
    res = runner.invoke(
        app,
        [
            "scores",
            "cm-eval",
            "recognition",
            str(tmp_path / "t.txt"),
            str(tmp_path / "p.txt"),
            "--unknown",
            "7",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["known"] == ["a", "b", "c"] and out["f1"] == pytest.approx(14 / 39) and out["n_unknown"] == 2
    res = runner.invoke(app, ["scores", "cm-eval", "dsr", str(r1), str(r1), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["n_models"] == 2 and out["n_samples"] == 3


#: ADD 2023 Track 2 at two resolutions. u1 fake [0.5, 1.0) predicted [0.73, 1.234); u2 genuine with a
#: false alarm [0.2, 0.6) (a sentence FP only: segments are counted on reference-fake utterances);
#: u3 genuine, correct; u4 fake [0, 0.3) missed.
RES_REF = "u1 0-0.5-T/0.5-1.0-F/1.0-2.0-T 0\nu2 0-1-T 1\nu3 0-1-T 1\nu4 0-0.3-F/0.3-1-T 0\n"
RES_PRED = "u1 0-0.73-T/0.73-1.234-F/1.234-2-T 0\nu2 0-0.2-T/0.2-0.6-F/0.6-1-T 0\nu3 0-1-T 1\nu4 0-1-T 1\n"


@pytest.mark.parametrize(
    ("resolution", "tp", "fp", "fn"),
    [
        # continuous: u1 TP [.73, 1) FP [1, 1.234) FN [.5, .73); u4 FN .3
        ("seconds", 0.27, 0.234, 0.23 + 0.3),
        # 0.1 s frames, fake when the centre (k + .5)/10 is inside: u1 ref frames 5..9, pred 7..11; u4 frames 0..2
        ("0.1", 0.3, 0.2, 0.2 + 0.3),
        # 10 ms: u1 ref frames 50..99, pred 73..122 (centre 1.225 < 1.234); u4 frames 0..29
        ("10ms", 0.27, 0.23, 0.23 + 0.3),
    ],
)
def test_location_at_two_resolutions_hand_computed(tmp_path: Path, resolution: str, tp, fp, fn) -> None:
    from interbias.analysis.security.cm import parse_resolution

    (tmp_path / "ref.txt").write_text(RES_REF)
    (tmp_path / "pred.txt").write_text(RES_PRED)
    ref = read_segment_labels(tmp_path / "ref.txt", reference=True)
    pred = read_segment_labels(tmp_path / "pred.txt", reference=False)
    res = location_scores(ref, pred, resolution_s=parse_resolution(resolution))
    assert (res.sentence_tp, res.sentence_tn, res.sentence_fp, res.sentence_fn) == (1, 1, 1, 1)
    assert res.sentence_accuracy == 0.5
    assert (res.segment_tp_s, res.segment_fp_s, res.segment_fn_s) == pytest.approx((tp, fp, fn), abs=1e-12)
    p, r = tp / (tp + fp), tp / (tp + fn)
    assert res.segment_precision == pytest.approx(p) and res.segment_recall == pytest.approx(r)
    assert res.score == pytest.approx(0.3 * 0.5 + 0.7 * 2 * p * r / (p + r))
    assert res.resolution == ("seconds" if resolution == "seconds" else f"{parse_resolution(resolution):g}")
    out = CliRunner().invoke(
        app, ["scores", "cm-eval", "location", str(tmp_path / "ref.txt"), str(tmp_path / "pred.txt"), "--resolution",
              resolution, "--json"],
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["segment_tp_s"] == pytest.approx(tp)


def test_frame_rule_at_a_centre_and_bad_resolutions() -> None:
    from interbias.analysis.security.cm import parse_resolution, to_frames

    # [0.05, 0.15) holds the centre 0.05 of frame 0 but not the centre 0.15 of frame 1
    assert to_frames([(0.05, 0.15), (0.0, 0.3)], 0.1) == [(0, 1), (0, 3)]
    assert parse_resolution("seconds") is None and parse_resolution("20ms") == pytest.approx(0.02)
    for bad, msg in (("fast", "give 'seconds' or a frame length"), ("0", "must lie in (0, 10]")):
        with pytest.raises(MetricError, match=re.escape(msg)):
            parse_resolution(bad)
