"""The kind of an experiment follows from its typed kind sections (``countermeasures:``,
``tracks:``); the conditions' CM and tracks experiments parse to their kinds."""

from __future__ import annotations

import pytest
from cm_fixtures import TRACK_FACTORS

from interbias.experiments.kinds import CountermeasureSpec, parse_countermeasures, parse_tracks
from interbias.experiments.schema import load_experiment
from interbias.utils.errors import ConfigError
from interbias.utils.paths import conditions_dir


def _load(tmp_path, section: str):
    path = tmp_path / "E90.yaml"
    path.write_text(f"name: E90\nuse: contrast\ncorpus: synthetic\n{section}{TRACK_FACTORS}")
    return load_experiment(path)


def test_kinds_of_the_conditions_experiments():
    cond = conditions_dir()
    assert load_experiment(next(cond.glob("E19*.yaml"))).kind == "countermeasure"
    tracks = load_experiment(next(cond.glob("E23*.yaml")))
    assert tracks.kind == "tracks" and [i.track for i in tracks.tracks.items] == [2]
    assert tracks.tracks.items[0].as_dict()["track"] == 2
    assert load_experiment(next(cond.glob("E16*.yaml"))).kind == "verification"


def test_countermeasures_section_is_a_record_with_defaults(tmp_path):
    exp = _load(tmp_path, "countermeasures: {models: [AASIST]}\n")
    assert exp.kind == "countermeasure" and exp.countermeasures == CountermeasureSpec(("AASIST",), 200, "eer")
    assert exp.tracks is None


@pytest.mark.parametrize(
    ("raw", "match"),
    [
        ({}, "needs models"),
        ({"models": "AASIST"}, "needs models"),
        ({"models": ["A"], "boot": 3}, "unknown key 'boot'"),
    ],
)
def test_countermeasures_refusals_are_one_line(raw, match):
    with pytest.raises(ConfigError, match=match):
        parse_countermeasures(raw, "E90.yaml")


@pytest.mark.parametrize("raw", [[], {"track": 2}, [{"model": "x"}], [3]])
def test_tracks_refusals_are_one_line(raw):
    with pytest.raises(ConfigError, match="tracks: needs a list"):
        parse_tracks(raw, "E90.yaml")


def test_both_kind_sections_are_refused(tmp_path):
    with pytest.raises(ConfigError, match="one kind"):
        _load(tmp_path, "countermeasures: {models: [AASIST]}\ntracks: [{track: 2}]\n")
