"""Speaker-level attributes are constant per speaker, or the manifest is refused naming the
speakers and values (issue 14, section 2); manifest text problems are one line (sections 3, 4)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from conftest import tiny_experiment
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from interbias.corpora import check_manifest, speaker_attributes
from interbias.corpora.manifest import (
    SPEAKER_LEVEL,
    Manifest,
    Utterance,
    check_speaker_attributes,
    speaker_attribute_conflicts,
)
from interbias.experiments.schema import load_experiment
from interbias.utils.errors import ManifestError

FAST = settings(
    max_examples=60, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck)
)


def _manifest(rows: list[dict], *, utterance_level: frozenset[str] = frozenset()) -> Manifest:
    utts = tuple(Utterance.from_dict({"path": f"u{i}.wav", **r}) for i, r in enumerate(rows))
    return Manifest("m", Path("/tmp"), utts, utterance_level)


def test_a_female_speaker_with_one_male_row_is_refused_naming_speaker_and_values() -> None:
    m = _manifest(
        [{"speaker": "s1", "gender": "female"}] * 3
        + [{"speaker": "s1", "gender": "male"}, {"speaker": "s2", "gender": "male"}]
    )
    with pytest.raises(ManifestError) as info:
        check_speaker_attributes(m, SPEAKER_LEVEL)
    assert str(info.value) == (
        "manifest 'm': speaker-level attribute(s) not constant per speaker: 'gender' differs within 1 speaker(s) "
        "('s1': 'female', 'male') (correct the rows, or declare an attribute that describes recordings with "
        "utterance_attributes: [NAME] in the experiment)"
    )


def test_utterance_level_attributes_may_vary_and_missing_values_are_ignored() -> None:
    m = _manifest(
        [
            {"speaker": "s1", "gender": "female", "style": "read", "emotion": "angry", "session": "a"},
            {"speaker": "s1", "style": "spont", "emotion": "calm", "session": "b"},
        ]
    )
    check_speaker_attributes(m, SPEAKER_LEVEL)


def test_the_experiment_decides_custom_and_exempt_attributes(tmp_path: Path) -> None:
    exp_path = tiny_experiment(
        tmp_path,
        name="S",
        speaker_attributes=["dialect"],
        utterance_attributes=["age"],
        population={"region": "north"},
    )
    exp = load_experiment(exp_path)
    m = _manifest([{"speaker": "s1", "dialect": "a", "age": "30", "region": "north", "style": "x"}])
    attrs = speaker_attributes(exp, m)
    assert "dialect" in attrs and "region" in attrs and "gender" in attrs
    assert "age" not in attrs and "style" not in attrs
    # a corpus that records age per recording (VoxCeleb1) exempts it too
    assert "age_band" not in speaker_attributes(exp, _manifest([], utterance_level=frozenset({"age_band"})))


def test_check_manifest_refuses_a_population_factor_attribute_that_varies(tmp_path: Path) -> None:
    data = yaml.safe_load(tiny_experiment(tmp_path, name="P").read_text())
    data["factors"][0]["attribute"] = "tribe"
    data["factors"][0]["levels"] = {"x": "x", "y": "y"}
    data["factors"][0]["reference"] = "x"
    p = tmp_path / "P.yaml"
    p.write_text(yaml.safe_dump(data))
    exp = load_experiment(p)
    m = _manifest([{"speaker": "s1", "tribe": "x"}, {"speaker": "s1", "tribe": "y"}])
    with pytest.raises(
        ManifestError, match=r"P: corpus 'm': .*'tribe' differs within 1 speaker\(s\) \('s1': 'x', 'y'\)"
    ):
        check_manifest(exp, m)


def test_the_synthetic_corpus_passes(tiny_corpus, tmp_path: Path) -> None:
    check_manifest(load_experiment(tiny_experiment(tmp_path)), tiny_corpus)


@FAST
@given(
    st.lists(
        st.tuples(st.sampled_from(["s1", "s2", "s3"]), st.sampled_from(["female", "male", None])),
        min_size=1,
        max_size=12,
    )
)
def test_generated_manifests_are_refused_exactly_when_a_speaker_disagrees(rows: list[tuple[str, str | None]]) -> None:
    m = _manifest([{"speaker": s, **({"gender": g} if g else {})} for s, g in rows])
    values: dict[str, set[str]] = {}
    for s, g in rows:
        if g:
            values.setdefault(s, set()).add(g)
    bad = sorted(s for s, v in values.items() if len(v) > 1)
    conflicts = speaker_attribute_conflicts(m.utterances, ["gender"])
    assert sorted(conflicts.get("gender", {})) == bad
    if bad:
        with pytest.raises(ManifestError) as info:
            check_speaker_attributes(m, ["gender"])
        for s in bad[:5]:
            assert repr(s) in str(info.value)
    else:
        check_speaker_attributes(m, ["gender"])


# ---- manifest text --------------------------------------------------------------------------------


def _audio(tmp_path: Path) -> None:
    (tmp_path / "a.wav").write_bytes(b"RIFF0000")


def test_a_bom_manifest_is_read(tmp_path: Path) -> None:
    _audio(tmp_path)
    p = tmp_path / "m.csv"
    p.write_bytes(b"\xef\xbb\xbfpath,speaker\na.wav,s1\n")
    assert [u.speaker for u in Manifest.read(p)] == ["s1"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        # a duplicated header column
        (
            b"path,speaker,gender,gender\na.wav,s1,female,male\n",
            " column 'gender' appears twice in the header (columns 3 and 4)",
        ),
        # a row with more fields than the header
        (b"path,speaker\na.wav,s1,extra\n", "2: 3 field(s), the header has 2 (a value holding a comma must be quoted)"),
        # Latin-1, not UTF-8
        (
            "path,speaker\nJosé.wav,s1\n".encode("latin-1"),
            " manifest is not UTF-8 text (byte 0xe9 at offset 16); save it as UTF-8",
        ),
    ],
    ids=["duplicated-column", "ragged-row", "latin1"],
)
def test_a_malformed_manifest_is_one_line(tmp_path: Path, data: bytes, message: str) -> None:
    p = tmp_path / "m.csv"
    p.write_bytes(data)
    with pytest.raises(ManifestError) as info:
        Manifest.read(p)
    assert str(info.value) == f"{p}:{message}"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"path": 5, "speaker": "s"}', "'path' must be text, got a number 5"),
        (
            '{"path": "a.wav", "speaker": "s", "sample_rate_hz": "inf"}',
            "'sample_rate_hz' must be a finite number, got 'inf'",
        ),
        ('{"path": "a.wav", "speaker": ["s"]}', "'speaker' must be text or a number, got a list"),
        ('{"path": "a.wav", "speaker": "s", "age": "x"}', "'age' must be a number, got 'x'"),
        ('{"path": "a.wav", "speaker": "s", "attrs": 3}', "'attrs' must be an object, got a number"),
    ],
)
def test_jsonl_values_of_the_wrong_type_are_one_line(tmp_path: Path, line: str, message: str) -> None:
    p = tmp_path / "m.jsonl"
    p.write_text(line + "\n")
    with pytest.raises(ManifestError) as info:
        Manifest.read(p)
    assert str(info.value) == f"{p}:1: {message}"


def test_symlink_loops_are_named(tmp_path: Path) -> None:
    os.symlink(tmp_path / "loop_b.csv", tmp_path / "loop_a.csv")
    os.symlink(tmp_path / "loop_a.csv", tmp_path / "loop_b.csv")
    with pytest.raises(ManifestError) as info:
        Manifest.read(tmp_path / "loop_a.csv")
    assert str(info.value) == f"manifest {tmp_path / 'loop_a.csv'} is a symbolic-link loop"
    os.symlink(tmp_path / "x_b.wav", tmp_path / "x_a.wav")
    os.symlink(tmp_path / "x_a.wav", tmp_path / "x_b.wav")
    p = tmp_path / "m.csv"
    p.write_text("path,speaker\nx_a.wav,s1\n")
    with pytest.raises(ManifestError, match=r"line 2 'x_a.wav' \(a symbolic-link loop\)"):
        Manifest.read(p, check_files=True)
