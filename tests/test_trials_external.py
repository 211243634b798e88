"""External trial lists: formats, matching to the manifest, strata, and every error by its text."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import yaml
from conftest import gender_factor

from interbias.corpora.manifest import Manifest, Utterance
from interbias.experiments.schema import load_experiment, parse_experiment, with_data
from interbias.trials.external import external_trials, parse_trial_file, read_trial_list
from interbias.utils.errors import ConfigError, TrialError


def corpus() -> Manifest:
    """Two female (fa, fb) and two male (ma, mb) speakers, two utterances each, VoxCeleb-like paths."""
    utts = []
    for spk, gender in (("fa", "female"), ("fb", "female"), ("ma", "male"), ("mb", "male")):
        for k in (1, 2):
            utts.append(Utterance(f"{spk}-{k}", f"wav/{spk}/yt{k}/0000{k}.wav", spk, gender=gender, accent="us"))
    return Manifest("demo", Path("/data"), tuple(utts))


def gender_exp(**extra) -> object:
    data = {
        "name": "G1",
        "corpus": "x",
        "factors": [gender_factor()],
    }
    data.update(extra)
    return parse_experiment(data, where="G1.yaml")


def write(tmp_path: Path, text: str, name: str = "list.txt") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


VOX = """1 fa/yt1/00001.wav fa/yt2/00002.wav
0 fa/yt1/00001.wav fb/yt1/00001.wav
1 ma/yt1/00001.wav ma/yt2/00002.wav
0 mb/yt2/00002.wav ma/yt1/00001.wav
"""


def test_voxceleb_list_matched_by_path_suffix_and_assigned_to_strata(tmp_path: Path) -> None:
    path = write(tmp_path, VOX)
    tl = read_trial_list(path, corpus(), gender_exp())
    f = tl.frame
    assert f.trial_id.tolist() == [0, 1, 2, 3]
    assert f.stratum.tolist() == ["gender=female"] * 2 + ["gender=male"] * 2
    assert f.enrol.tolist() == ["fa-1", "fa-1", "ma-1", "mb-2"]
    assert f.test.tolist() == ["fa-2", "fb-1", "ma-2", "ma-1"]
    assert f.label.tolist() == [1, 0, 1, 0]
    assert f.enrol_name.tolist()[0] == "fa/yt1/00001.wav"
    assert tl.source == "file" and tl.info["format"] == "voxceleb"
    assert tl.info["matched_by"] == {"id": 0, "path": 0, "suffix": 6}
    assert tl.info["file_sha256"] == hashlib.sha256(VOX.encode()).hexdigest()
    st = tl.strata["gender=male"]
    assert (st.n_target, st.n_nontarget, st.n_speakers, st.n_enrol_utterances, st.n_test_utterances) == (1, 1, 2, 2, 2)


def test_kaldi_list_by_id_and_full_path_gives_the_same_trials(tmp_path: Path) -> None:
    vox = read_trial_list(write(tmp_path, VOX), corpus(), gender_exp())
    kaldi = write(
        tmp_path,
        "fa-1 fa-2 target\nfa-1 wav/fb/yt1/00001.wav nontarget\nma-1 ma-2 target\nmb-2 ma-1 nontarget\n",
        "k.txt",
    )
    tl = read_trial_list(kaldi, corpus(), gender_exp())
    assert tl.info["format"] == "kaldi" and tl.info["matched_by"] == {"id": 5, "path": 1, "suffix": 0}
    # the sha256 covers (stratum, enrol id, test id, label): the same trials, the same hash
    assert tl.sha256 == vox.sha256
    assert read_trial_list(kaldi, corpus(), gender_exp(), fmt="kaldi").sha256 == vox.sha256


def test_file_order_is_kept_within_a_stratum_and_the_hash_follows_it(tmp_path: Path) -> None:
    lines = VOX.splitlines()
    swapped = write(tmp_path, "\n".join([lines[1], lines[0], *lines[2:]]) + "\n", "s.txt")
    a = read_trial_list(write(tmp_path, VOX), corpus(), gender_exp())
    b = read_trial_list(swapped, corpus(), gender_exp())
    assert b.frame.enrol_name.tolist()[:2] == ["fa/yt1/00001.wav"] * 2 and b.frame.label.tolist()[:2] == [0, 1]
    assert a.sha256 != b.sha256


def test_unmatched_names_are_listed_never_skipped(tmp_path: Path) -> None:
    path = write(tmp_path, VOX + "1 fa/yt9/00009.wav fa/yt1/00001.wav\n0 zz/1.wav fa/yt1/00001.wav\n")
    with pytest.raises(TrialError) as exc:
        read_trial_list(path, corpus(), gender_exp())
    assert str(exc.value) == (
        f"trial list {path}: 2 of 8 utterance name(s) match no entry of manifest 'demo' (8 utterances) by id, "
        "relative path or path suffix; first: 'fa/yt9/00009.wav' (line 5), 'zz/1.wav' (line 6)"
    )


def test_ambiguous_suffix_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, "1 00001.wav fa/yt2/00002.wav\n")
    with pytest.raises(
        TrialError, match=r"1 utterance name\(s\) match several manifest paths; .*'00001.wav' \(line 1\)"
    ):
        read_trial_list(path, corpus(), gender_exp())


@pytest.mark.parametrize(
    ("text", "fmt", "message"),
    [
        ("", "auto", "trial list {p} is empty"),
        (
            "fa-1 fa-2 0.5\n",
            "auto",
            "trial list {p}: line 1 'fa-1 fa-2 0.5' is neither VoxCeleb ('1|0 enrol test') nor Kaldi/WeSpeaker "
            "('enrol test target|nontarget') format",
        ),
        (
            "1 fa-1 fa-2\n\n2 fa-1 fa-2\n1 fa-1\nfa-1 fa-2 target\n",
            "auto",
            "trial list {p}: 3 line(s) not in voxceleb format ('1|0 enrol test'); first: line 3 '2 fa-1 fa-2', "
            "line 4 '1 fa-1', line 5 'fa-1 fa-2 target'",
        ),
        (
            "1 fa-1 fa-2\n",
            "kaldi",
            "trial list {p}: 1 line(s) not in kaldi format ('enrol test target|nontarget'); first: line 1 '1 fa-1 fa-2'",
        ),
    ],
)
def test_malformed_lists(tmp_path: Path, text: str, fmt: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(TrialError) as exc:
        parse_trial_file(path, fmt)
    assert str(exc.value) == message.format(p=path)


def test_missing_list(tmp_path: Path) -> None:
    with pytest.raises(TrialError, match=r"^trial list .*nope.txt does not exist$"):
        parse_trial_file(tmp_path / "nope.txt")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1 fa-1 fa-1\n0 fa-1 fb-1\n", "1 trial(s) pair an utterance with itself; first: line 1 ('fa-1')"),
        (
            "1 fa-1 fa-2\n0 fa-1 fb-1\n1 fa-1 fa-2\n",
            "1 trial(s) repeat an earlier (enrol, test) pair; first: line 3 (as line 1)",
        ),
        (
            "0 fa-1 fa-2\n1 fa-1 fb-1\n",
            "2 trial(s) have a label that disagrees with the manifest's speakers; first: line 1 (nontarget, "
            "speakers 'fa' and 'fa'), line 2 (target, speakers 'fa' and 'fb')",
        ),
    ],
)
def test_inconsistent_trials(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(TrialError) as exc:
        read_trial_list(path, corpus())
    assert str(exc.value) == f"trial list {path}: {message}"


def test_cross_stratum_trials_error_or_excluded_and_counted(tmp_path: Path) -> None:
    path = write(tmp_path, VOX + "0 fa-1 ma-1\n0 mb-1 fb-2\n")
    with pytest.raises(TrialError) as exc:
        read_trial_list(path, corpus(), gender_exp())
    assert str(exc.value) == (
        f"trial list {path}: 2 of 6 trial(s) cannot be assigned to a stratum of G1: 2 in no stratum of "
        "gender=female, gender=male (first: line 5 (enrol gender=female; test gender=male), line 6 (enrol "
        "gender=male; test gender=female)). Edit the list, or set trials.unassigned: exclude to score only the "
        "assigned trials (the excluded ones are counted in trials.json)"
    )
    tl = read_trial_list(path, corpus(), gender_exp(), unassigned="exclude")
    assert len(tl.frame) == 4 and tl.info["n_excluded"] == 2
    assert tl.info["excluded"] == {"outside_population": 0, "no_stratum": 2}
    assert tl.info["excluded_first"][0] == "line 5 (enrol gender=female; test gender=male)"
    # without population factors everything is one stratum
    assert read_trial_list(path, corpus()).frame.stratum.unique().tolist() == ["all"]


def test_population_filter_applies_to_listed_trials(tmp_path: Path) -> None:
    exp = gender_exp(population={"gender": "female"})
    path = write(tmp_path, VOX)
    with pytest.raises(TrialError, match=r"2 outside the population filter \{gender: \['female'\]\} \(first: line 3"):
        read_trial_list(path, corpus(), exp)
    with pytest.raises(TrialError, match="stratum gender=male gets 0 target and 0 non-target trial"):
        read_trial_list(path, corpus(), exp, unassigned="exclude")


def test_stratum_without_nontargets(tmp_path: Path) -> None:
    path = write(tmp_path, "1 fa-1 fa-2\n1 ma-1 ma-2\n0 ma-1 mb-1\n")
    with pytest.raises(TrialError) as exc:
        read_trial_list(path, corpus(), gender_exp())
    assert str(exc.value) == (
        f"trial list {path}: stratum gender=female gets 1 target and 0 non-target trial(s); "
        "each stratum needs both for its metrics"
    )


def test_overlapping_levels_are_ambiguous(tmp_path: Path) -> None:
    exp = parse_experiment(
        {
            "name": "G2",
            "corpus": "x",
            "factors": [
                {
                    "name": "g",
                    "type": "population",
                    "attribute": "gender",
                    "reference": "any",
                    "levels": {"any": "*", "female": "female"},
                }
            ],
        },
        where="G2.yaml",
    )
    path = write(tmp_path, VOX)
    with pytest.raises(
        TrialError, match=r"line 1 falls in 2 strata \(g=any, g=female\); the population factors' levels overlap"
    ):
        read_trial_list(path, corpus(), exp)


def test_yaml_trial_list_key_resolves_against_the_yaml_folder(tmp_path: Path) -> None:
    (tmp_path / "lists").mkdir()
    write(tmp_path / "lists", VOX, "vox.txt")
    data = {
        "name": "G3",
        "corpus": {"manifest": "m.csv"},
        "factors": [{"name": "n", "type": "acoustic", "apply_to": "test", "reference": "c", "levels": {"c": []}}],
        "trials": {"list": "lists/vox.txt", "format": "voxceleb"},
    }
    (tmp_path / "G3.yaml").write_text(yaml.safe_dump(data))
    exp = load_experiment(tmp_path / "G3.yaml")
    assert exp.trials.list_file == str(tmp_path / "lists" / "vox.txt") and exp.trials.list_format == "voxceleb"
    assert exp.corpus.manifest == str(tmp_path / "m.csv")
    assert exp.resolved()["trials"]["list"] == str(tmp_path / "lists" / "vox.txt")
    tl = external_trials(exp, corpus())
    assert tl is not None and len(tl.frame) == 4
    with pytest.raises(TrialError, match="--max-trials cannot be combined with an external trial list"):
        external_trials(exp, corpus(), max_trials=10)


@pytest.mark.parametrize(
    ("trials", "message"),
    [
        (
            {"list": "l.txt", "targets": 10},
            "G4.yaml: trials: targets only apply to sampled trials, not to an external list",
        ),
        ({"list": "l.txt", "format": "nist"}, "G4.yaml: trials.format: 'nist' is not one of auto, voxceleb, kaldi"),
        ({"list": "l.txt", "unassigned": "drop"}, "G4.yaml: trials.unassigned: 'drop' is not one of error, exclude"),
        ({"format": "kaldi"}, "G4.yaml: trials: format and unassigned apply to an external list (trials.list)"),
        ({"list": 3}, "G4.yaml: trials.list: a path to a trial list file, got 3"),
    ],
)
def test_trial_spec_errors(trials: dict, message: str) -> None:
    data = {
        "name": "G4",
        "corpus": "x",
        "factors": [{"name": "n", "type": "acoustic", "apply_to": "test", "reference": "c", "levels": {"c": []}}],
        "trials": trials,
    }
    with pytest.raises(ConfigError) as exc:
        parse_experiment(data, where="G4.yaml")
    assert str(exc.value) == message


def test_with_data_overrides_and_its_errors(tmp_path: Path) -> None:
    exp = gender_exp(trials={"targets": 50})
    out = with_data(exp, manifest=Path("m.csv"), data_root=tmp_path, trials=Path("l.txt"))
    assert out.corpus.manifest == str(Path("m.csv").resolve()) and out.corpus.root == str(tmp_path.resolve())
    assert out.trials.list_file == str(Path("l.txt").resolve()) and out.trials.list_format == "auto"
    assert out.resolved()["corpus"] == {"manifest": str(Path("m.csv").resolve()), "root": str(tmp_path.resolve())}
    assert out.resolved()["trials"] == {"list": str(Path("l.txt").resolve()), "format": "auto", "unassigned": "error"}
    with pytest.raises(ConfigError, match=r"^--data-root applies to a manifest"):
        with_data(exp, data_root=tmp_path)
    with pytest.raises(ConfigError, match=r"^--trials-format applies to an external trial list"):
        with_data(exp, trials_format="kaldi")
    with pytest.raises(ConfigError, match=r"^--trials-format: 'csv' is not one of auto, voxceleb, kaldi$"):
        with_data(exp, trials=Path("l.txt"), trials_format="csv")
