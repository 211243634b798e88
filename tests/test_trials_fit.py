"""Whether a manifest serves an experiment (interbias.trials.fit): one shortfall per missing
thing, speakers counted per stratum with the dev split, as the sampler would use them."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from interbias.cli import app
from interbias.corpora.manifest import Manifest, Utterance
from interbias.experiments.schema import load_experiment
from interbias.trials.fit import catalogue_fit, corpus_strata, judge_manifest, serves
from interbias.utils.paths import conditions_dir


def _manifest(female: int, male: int, per: int = 3, *, gender: bool = True) -> Manifest:
    utts = []
    for g, n in (("female", female), ("male", male)):
        for s in range(n):
            for k in range(per):
                spk = f"{g[0]}{s}"
                utts.append(Utterance(f"{spk}/{k}", f"{spk}/{k}.wav", spk, gender=g if gender else None))
    return Manifest("calls", Path("."), tuple(utts))


def test_too_few_speakers_is_one_line_with_totals_per_gender() -> None:
    exp = load_experiment(conditions_dir() / "E16.yaml")
    (short,) = judge_manifest(exp, _manifest(20, 26), label="calls.csv")
    assert short.line().startswith(
        "E16 needs ≥ 22 speakers per gender (15 evaluation + 7 dev); calls.csv has 20 female, 26 male: "
    )
    assert serves(exp, _manifest(22, 22)) and not serves(exp, _manifest(21, 30))


def test_speakers_with_one_utterance_do_not_count_and_are_named() -> None:
    exp = load_experiment(conditions_dir() / "E16.yaml")
    (short,) = judge_manifest(exp, _manifest(22, 22, per=1), label="calls.csv")
    assert "calls.csv has 0 female, 0 male (speakers with ≥ 2 utterances; 44 have fewer)" in short.line()


def test_a_missing_attribute_is_named_with_its_fix_and_never_a_public_corpus() -> None:
    exp = load_experiment(conditions_dir() / "E14.yaml")
    lines = [s.line() for s in judge_manifest(exp, _manifest(30, 30, gender=False), label="calls.csv")]
    assert lines == [
        "E14 selects by style (angry, calm, disgust, fearful, happy, neutral, sad, surprised); calls.csv has no "
        "style column: add a style column to the manifest"
    ]


def test_corpus_strata_counts_what_the_corpus_offers() -> None:
    exp = load_experiment(conditions_dir() / "E16.yaml")
    assert corpus_strata(exp, _manifest(3, 4, per=2)) == {
        "gender=female": {"speakers": 3, "utterances": 6},
        "gender=male": {"speakers": 4, "utterances": 8},
    }


def test_labels_the_experiment_does_not_use_are_named_with_the_values_there() -> None:
    exp = load_experiment(conditions_dir() / "E16.yaml")
    utts = [Utterance(f"s{i}/{k}", f"s{i}/{k}.wav", f"s{i}", gender="FM"[i % 2]) for i in range(30) for k in range(3)]
    lines = [s.line() for s in judge_manifest(exp, Manifest("calls", Path("."), tuple(utts)), label="calls.csv")]
    assert lines == [
        "E16 stratifies by gender = female, male; no utterance of calls.csv has it (gender values there: F, M): "
        "relabel them, or copy the experiment file and name your values in its levels"
    ]


def test_catalogue_fit_lists_what_a_gender_labelled_corpus_serves() -> None:
    fit = catalogue_fit(_manifest(24, 24), label="calls.csv")
    assert sorted(fit) == sorted(p.stem for p in conditions_dir().glob("*.yaml"))
    assert fit["E16"] == [] and fit["E10"] == []
    assert [s.line() for s in fit["E24"]][0].startswith("E24 needs ≥ 32 speakers per gender (22 evaluation + 10 dev)")
    assert fit["E14"][0].line().startswith("E14 selects by style (")


def _calls_csv(tmp: Path, per_gender: int) -> Path:
    rows = ["path,speaker,gender"]
    for g in ("female", "male"):
        for s in range(per_gender):
            rows += [f"{g}{s:02d}/u{u}.wav,{g}{s:02d},{g}" for u in range(6)]
    path = tmp / "calls.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def test_data_info_says_which_catalogue_experiments_a_manifest_serves(tmp_path: Path) -> None:
    calls = _calls_csv(tmp_path, 24)
    res = CliRunner().invoke(app, ["data", "info", str(calls), "--no-audio"])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert "catalogue experiments (interbias run NAME --manifest ...):" in lines
    serves = " ".join(lines[lines.index("catalogue experiments (interbias run NAME --manifest ...):") + 1 :])
    assert serves.startswith("  serves: ") and "E16" in serves.split("E03")[0]
    assert any(line.startswith("  E14: E14 selects by style") for line in lines)
    assert "Common Voice" not in res.output
    assert max(len(line) for line in lines) <= 80
    as_json = CliRunner().invoke(app, ["data", "info", str(calls), "--no-audio", "--json"])
    data = json.loads(as_json.output)["catalogue"]
    assert data["E16"] == [] and data["E14"][0]["need"].startswith("E14 selects by style")


def test_too_few_speakers_is_what_the_catalogue_lists(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["data", "info", str(_calls_csv(tmp_path, 20)), "--no-audio", "--json"])
    assert res.exit_code == 0, res.output
    e16 = json.loads(res.output)["catalogue"]["E16"]
    assert [s["need"] for s in e16] == ["E16 needs ≥ 22 speakers per gender (15 evaluation + 7 dev)"]
    assert e16[0]["have"] == "calls has 20 female, 20 male"
