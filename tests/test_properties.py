"""Property-based tests (hypothesis): metric invariances and bounds against brute force, and
manifest / trial-list files that read back exactly what was written."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from interbias.corpora.manifest import Manifest, Utterance
from interbias.metrics import verification as M
from interbias.trials.external import parse_trial_file
from interbias.utils.errors import ManifestError, TrialError

SETTINGS = settings(
    max_examples=int(__import__("os").environ.get("IB_EXAMPLES", 60)),
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


# ---- metrics ---------------------------------------------------------------------------------


@st.composite
def trials(draw, max_n: int = 40) -> tuple[np.ndarray, np.ndarray]:
    """Integer scores in a small range (many ties) with at least one target and one non-target."""
    n_t = draw(st.integers(1, max_n))
    n_n = draw(st.integers(1, max_n))
    scores = draw(st.lists(st.integers(-30, 30), min_size=n_t + n_n, max_size=n_t + n_n))
    labels = np.r_[np.ones(n_t, int), np.zeros(n_n, int)]
    order = draw(st.permutations(range(n_t + n_n)))
    return np.asarray(scores, float)[list(order)], labels[list(order)]


def _all(s: np.ndarray, lab: np.ndarray, **dcf) -> tuple[float, ...]:
    return M.eer(s, lab), M.eer_legacy(s, lab), M.min_dcf(s, lab, **dcf), M.auc(s, lab)


@SETTINGS
@given(trials(), st.integers(1, 1000), st.integers(-12, 12), st.integers(-(10**6), 10**6))
def test_metrics_ignore_positive_affine_maps(t, mant: int, exp2: int, shift: int) -> None:
    s, lab = t
    a = mant * 2.0**exp2  # a·s + b is exact in float64 for these integers, so no ties merge
    assert _all(a * s + shift, lab) == _all(s, lab)


@SETTINGS
@given(trials(), st.randoms(use_true_random=False))
def test_metrics_depend_on_the_score_order_only(t, rnd) -> None:
    s, lab = t
    uniq = np.unique(s)
    new = np.sort(np.array([rnd.uniform(-1e3, 1e3) for _ in uniq]))
    assume(len(np.unique(new)) == len(uniq))
    mapped = new[np.searchsorted(uniq, s)]  # any strictly increasing map
    assert _all(mapped, lab) == _all(s, lab)


@SETTINGS
@given(trials(), st.floats(0.001, 0.999), st.floats(0.1, 10), st.floats(0.1, 10))
def test_swapping_labels_and_negating_scores_mirrors_the_metrics(t, p: float, c_miss: float, c_fa: float) -> None:
    s, lab = t
    assert M.eer(-s, 1 - lab) == pytest.approx(M.eer(s, lab), abs=1e-12)
    assert M.auc(-s, 1 - lab) == M.auc(s, lab)
    mirrored = M.min_dcf(-s, 1 - lab, p_target=1 - p, c_miss=c_fa, c_fa=c_miss)
    assert mirrored == pytest.approx(M.min_dcf(s, lab, p_target=p, c_miss=c_miss, c_fa=c_fa), rel=1e-12, abs=1e-15)
    assert M.auc(-s, lab) == pytest.approx(1 - M.auc(s, lab), abs=1e-12)  # reversed scores


def _brute_dcf(s: np.ndarray, lab: np.ndarray, p: float, c_miss: float, c_fa: float) -> float:
    """Cost at every threshold (each score and +inf), by counting, divided by the better trivial
    system's cost."""
    tgt, non = s[lab == 1], s[lab == 0]
    costs = [c_miss * p * np.mean(tgt < t) + c_fa * (1 - p) * np.mean(non >= t) for t in [*np.unique(s), np.inf]]
    return min(costs) / min(c_miss * p, c_fa * (1 - p))


def _brute_eer_bracket(s: np.ndarray, lab: np.ndarray) -> tuple[float, float]:
    """The interpolated EER lies between max(FNR, FPR) at the last threshold with FNR < FPR and
    min(FNR, FPR) at the first with FNR >= FPR, on either side of the crossing."""
    tgt, non = s[lab == 1], s[lab == 0]
    pts = [(np.mean(tgt < t), np.mean(non >= t)) for t in [*np.unique(s), np.inf]]
    k = next(i for i, (fnr, fpr) in enumerate(pts) if fnr >= fpr)
    if k == 0:
        return pts[0][0], pts[0][0]
    (fnr0, fpr0), (fnr1, fpr1) = pts[k - 1], pts[k]
    return min(fnr0, fpr1), max(fpr0, fnr1)


@SETTINGS
@given(trials(), st.floats(0.001, 0.999), st.floats(0.1, 10), st.floats(0.1, 10))
def test_bounds_and_brute_force(t, p: float, c_miss: float, c_fa: float) -> None:
    s, lab = t
    e, legacy, dcf, auc = _all(s, lab, p_target=p, c_miss=c_miss, c_fa=c_fa)
    for value in (e, legacy, dcf, auc):
        assert 0.0 <= value <= 1.0
    # minDCF: never worse than accepting or rejecting everything, and equal to the sweep
    assert dcf * min(c_miss * p, c_fa * (1 - p)) <= min(c_miss * p, c_fa * (1 - p)) * (1 + 1e-12)
    assert dcf == pytest.approx(_brute_dcf(s, lab, p, c_miss, c_fa), rel=1e-12, abs=1e-15)
    lo, hi = _brute_eer_bracket(s, lab)
    assert lo - 1e-12 <= e <= hi + 1e-12
    wins = sum((a > b) + 0.5 * (a == b) for a in s[lab == 1] for b in s[lab == 0])
    assert auc == pytest.approx(wins / (lab.sum() * (1 - lab).sum()), abs=1e-12)


@SETTINGS
@given(st.integers(1, 30), st.integers(1, 30), st.floats(-5, 5), st.floats(0.01, 5))
def test_separated_and_reversed_systems(n_t: int, n_n: int, low: float, gap: float) -> None:
    lab = np.r_[np.ones(n_t, int), np.zeros(n_n, int)]
    s = np.r_[np.full(n_t, low + gap), np.full(n_n, low)]
    assert (M.eer(s, lab), M.min_dcf(s, lab), M.auc(s, lab)) == (0.0, 0.0, 1.0)
    assert (M.eer(-s, lab), M.auc(-s, lab)) == (1.0, 0.0)


# ---- manifests -------------------------------------------------------------------------------

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12) | st.sampled_from(
    [" a", "b ", "a,b", '"q"', "x\ny", "1", "nan", "NULL", "é"]
)
NAME = st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,8}", fullmatch=True).filter(
    lambda k: k not in {"id", "path", "speaker", "gender", "age", "age_band", "accent", "style", "session", "text",
                        "duration_s", "sample_rate_hz", "sha256", "attrs"}
)  # fmt: skip


@st.composite
def utterances(draw) -> list[Utterance]:
    n = draw(st.integers(1, 6))
    ids = draw(st.lists(TEXT, min_size=n, max_size=n, unique=True))
    out = []
    for uid in ids:
        out.append(
            Utterance(
                id=uid,
                path=draw(TEXT),
                speaker=draw(TEXT),
                gender=draw(st.none() | TEXT),
                age=draw(st.none() | st.floats(0, 120, allow_nan=False)),
                accent=draw(st.none() | TEXT),
                text=draw(st.none() | TEXT),
                duration_s=draw(st.none() | st.floats(0.001, 1e4, allow_nan=False)),
                sample_rate_hz=draw(st.none() | st.integers(1, 384000)),
                attrs=draw(st.dictionaries(NAME, TEXT, max_size=3)),
            )
        )
    return out


@SETTINGS
@given(utterances(), st.sampled_from([".csv", ".jsonl"]))
def test_manifest_files_read_back_what_was_written(utts: list[Utterance], suffix: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"m{suffix}"
        try:
            Manifest("m", Path(tmp), tuple(utts)).write(path)
            back = Manifest.read(path)
        except ManifestError as exc:
            # two spellings of one speaker ('0' and '00', 'a' and 'A') are refused by design, and
            # so is a path that names no file ("/", "a/", "..")
            nameless = [u.path for u in utts if u.path.replace("\\", "/").split("/")[-1] in ("", ".", "..")]
            if nameless:
                assert "has no file name" in str(exc)
            else:
                assert "spelled more than one way" in str(exc)
            return
        assert back.utterances == tuple(utts)
        assert back.sha256() == Manifest("x", Path("/elsewhere"), tuple(utts)).sha256()


@pytest.mark.parametrize("path", ["/", "a/", "a/b/", "..", "a/..", ".", "a/.", "a\\"])
@pytest.mark.parametrize("with_id", [False, True])
def test_a_manifest_path_without_a_file_name_is_a_manifest_error(tmp_path: Path, path: str, with_id: bool) -> None:
    """'/' once reached pathlib's ValueError through the default id; any nameless path is refused
    as a ManifestError that names the path, whether or not the row carries its own id."""
    row = {"id": "u1"} if with_id else {}
    (tmp_path / "m.jsonl").write_text(json.dumps({**row, "path": path, "speaker": "s1"}) + "\n", encoding="utf-8")
    with pytest.raises(ManifestError, match="has no file name") as info:
        Manifest.read(tmp_path / "m.jsonl")
    assert repr(path) in str(info.value)


def test_a_manifest_path_with_a_file_name_still_reads(tmp_path: Path) -> None:
    (tmp_path / "m.jsonl").write_text(json.dumps({"path": "a/b.wav", "speaker": "s1"}) + "\n", encoding="utf-8")
    assert [u.id for u in Manifest.read(tmp_path / "m.jsonl").utterances] == ["a/b"]


# ---- trial lists -----------------------------------------------------------------------------

TOKEN = st.sampled_from(["0", "1", "target", "nontarget", "id10001/1zcIwhmdeo4/00001.wav"]) | st.text(
    st.characters(blacklist_categories=("Cs", "Cc", "Zs", "Zl", "Zp")), min_size=1, max_size=10
).filter(lambda x: len(x.split()) == 1 and x.split()[0] == x)


@st.composite
def listed(draw) -> list[tuple[str, str, int]]:
    return draw(st.lists(st.tuples(TOKEN, TOKEN, st.integers(0, 1)), min_size=1, max_size=8))


@SETTINGS
@given(listed(), st.sampled_from(["voxceleb", "kaldi"]), st.lists(st.sampled_from(["", " ", "\t"]), max_size=3))
def test_trial_lists_read_back_in_both_formats(rows, fmt: str, pads: list[str]) -> None:
    pad = "".join(pads)
    lines = []
    for enrol, test, label in rows:
        if fmt == "voxceleb":
            lines.append(f"{pad}{label} {enrol}{pad or ' '}{test}{pad}")
        else:
            lines.append(f"{enrol} {test}\t{'target' if label else 'nontarget'}{pad}")
        lines.append(pad)  # blank (or blank-looking) lines are skipped
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trials.txt"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        got_fmt, got = parse_trial_file(path, fmt)
        assert got_fmt == fmt
        assert [(t.enrol, t.test, t.label) for t in got] == rows
        assert [t.line for t in got] == list(range(1, 2 * len(rows), 2))
        other = [e in ("0", "1") if fmt == "kaldi" else t in ("target", "nontarget") for e, t, _ in rows]
        if all(other):  # a list that reads both ways is refused, never guessed
            with pytest.raises(TrialError, match="fits both"):
                parse_trial_file(path, "auto")
        else:
            assert parse_trial_file(path, "auto") == (got_fmt, got)
