"""A YAML's ``question`` may name its key effects (``{text, effects: [...]}``); the plain string
stays valid; the answer states the named effects first with their intervals, and names the
largest resolved benefit beside the largest harm."""

from __future__ import annotations

import pandas as pd
import pytest
from synthetic_runs import gender_noise_run

from interbias.analysis.reporting.answer import answer, key_lines, kind_line, question
from interbias.analysis.reporting.headline import headline
from interbias.analysis.suite import Options, analyse
from interbias.experiments.question_spec import KeyEffect, parse_question
from interbias.utils.errors import ConfigError

MEANS = {
    "big": {("female", "clean"): 3.0, ("female", "n10"): 2.5, ("male", "clean"): 0.8, ("male", "n10"): 0.3},
    "flat": {("female", "clean"): 1.5, ("female", "n10"): 1.5, ("male", "clean"): 1.5, ("male", "n10"): 1.2},
}
ASKED = {"text": "Does noise widen the gap?", "effects": ["gender × noise", "gender gap"]}


def test_parse_plain_and_typed_question() -> None:
    assert parse_question(" Why? ", "E.yaml").text == "Why?" and parse_question("Why?", "E.yaml").effects == ()
    spec = parse_question(
        {**ASKED, "effects": ["vad x noise", "noise", "gender gap"]}, "E.yaml", ["vad", "noise", "gender"]
    )
    assert spec.effects == (
        KeyEffect("interaction", ("vad", "noise"), "vad x noise"),
        KeyEffect("main", ("noise",), "noise"),
        KeyEffect("gap", ("gender",), "gender gap"),
    )
    with pytest.raises(ConfigError, match="'snr', not a factor"):
        parse_question({"text": "Q?", "effects": ["snr × noise"]}, "E.yaml", ["noise", "vad"])
    with pytest.raises(ConfigError, match="unknown key 'effect' at question"):
        parse_question({"text": "Q?", "effect": []}, "E.yaml")


def test_catalogue_names_key_effects() -> None:
    from interbias.experiments.schema import load_experiment
    from interbias.utils.paths import conditions_dir

    texts = {e: [k.text for k in load_experiment(conditions_dir() / f"{e}.yaml").key_effects] for e in
             ("E14", "E16", "E22", "E24")}  # fmt: skip
    assert texts["E22"] == ["enrolment × noise", "vad × noise"] and texts["E14"] == ["emotion × noise"]
    assert all(texts.values())


@pytest.fixture(scope="module")
def findings(tmp_path_factory) -> pd.DataFrame:
    run = gender_noise_run(tmp_path_factory.mktemp("key") / "run", MEANS, n=12, m=4)
    return headline(analyse(run, Options(n_boot=200))).findings


def test_answer_states_the_named_effects_first_with_intervals(findings: pd.DataFrame) -> None:
    resolved = {"use": "gap", "question": ASKED, "factors": []}
    assert question(resolved, "eer") == ASKED["text"]
    ans = answer(findings, resolved, "eer", "95%")
    assert [line.split(":")[0] for line in ans.key] == [
        "gender × noise, big", "gender × noise, flat", "gender gap, big", "gender gap, flat"
    ]  # fmt: skip
    ie = findings[(findings.kind == "interaction") & (findings.model == "flat")].iloc[0]
    word, ends = ("above", (ie.lo, ie.hi)) if ie.estimate > 0 else ("below", (-ie.hi, -ie.lo))
    assert (
        f"gender × noise at male, n10: EER is {word} the additive prediction by {abs(ie.estimate):.3f} "
        f"(95% CI [{ends[0]:.3f}, {ends[1]:.3f}])" in ans.key[1]
    )
    assert key_lines(findings, {"question": "plain"}, "eer", "95%") == []


def test_largest_benefit_beside_largest_harm(findings: pd.DataFrame) -> None:
    part = findings[findings.model == "big"].copy()
    main = part[part.kind == "main"].index
    part.loc[main, "resolved"] = True
    part.loc[main[-1], ["estimate", "lo", "hi"]] = [-0.05, -0.08, -0.02]
    line = kind_line(part, "main", "eer", "95%")
    assert "; largest harm: " in line and "; largest benefit: " in line and "(-0.050, 95% CI [-0.080, -0.020])" in line


def test_direction_turns_a_negative_effect_into_words_and_a_size(findings: pd.DataFrame) -> None:
    """A gap below zero reads "lower … by |estimate| [-hi, -lo]"; the brief names every key effect
    and model once, with its count resolved."""
    from interbias.analysis.reporting.answer import direction, key_brief

    gap = findings[findings.kind == "gap"].iloc[0].copy()
    gap[["estimate", "lo", "hi"]] = [-0.031, -0.050, -0.012]
    text = direction(gap, "eer")
    at = gap.condition.split("=")[-1]
    assert text == f"gender male − female at {at}: EER for male is lower than for female by 0.031 [0.012, 0.050]"
    gap[["estimate", "lo", "hi"]] = [0.031, 0.012, 0.050]
    assert "is higher than for female" in direction(gap, "eer") and "[0.012, 0.050]" in direction(gap, "eer")
    brief = key_brief(findings, {"question": ASKED}, "eer")
    assert [line.split(":")[0] for line in brief] == [
        "gender × noise, big", "gender × noise, flat", "gender gap, big", "gender gap, flat"
    ]  # fmt: skip
    gaps = findings[(findings.kind == "gap") & (findings.model == "big")]
    n_res = int(gaps.resolved.astype(bool).sum())
    assert brief[2].startswith(f"gender gap, big: {n_res} of {len(gaps)} resolved; largest: gender male − female at ")
    assert ": EER for male is higher than for female by " in brief[2]


def test_a_level_restricted_interaction_is_worded_as_the_gap_change(findings: pd.DataFrame, tmp_path) -> None:
    """``A=l × P`` keeps the interactions at A's level l; an interaction of a population factor P
    with another factor is the change of P's gap (IE = gap at A=l − gap at A's reference) and is
    worded so, with its interval, in the report's key lines and in analyze's brief (every row)."""
    from interbias.analysis.reporting.answer import key_brief

    asked = {"text": "Q?", "effects": ["noise=n10 × gender"]}
    spec = parse_question(asked, "E.yaml", {"gender": "population", "noise": "acoustic"})
    assert spec.effects == (KeyEffect("interaction", ("noise", "gender"), "noise=n10 × gender", (("noise", "n10"),)),)
    factors = [{"name": "gender", "type": "population", "reference": "female"},
               {"name": "noise", "type": "acoustic", "reference": "clean"}]  # fmt: skip
    resolved = {"use": "gap", "question": asked, "factors": factors}
    ie = findings[(findings.kind == "interaction") & (findings.model == "big")].iloc[0]
    gaps = findings[(findings.kind == "gap") & (findings.model == "big")].set_index("condition")["estimate"]
    assert ie.estimate == pytest.approx(gaps["noise=n10"] - gaps["noise=clean"])
    word, ends = ("higher", (ie.lo, ie.hi)) if ie.estimate > 0 else ("lower", (-ie.hi, -ie.lo))
    said = (
        f"gender × noise at male, n10: with noise n10 the male − female EER difference is {word} than with clean "
        f"by {abs(ie.estimate):.3f} (95% CI [{ends[0]:.3f}, {ends[1]:.3f}])"
    )
    assert said in answer(findings, resolved, "eer", "95%").key[0]
    brief = key_brief(findings, resolved, "eer", "95%")
    short = f"with noise n10 against clean, the male − female EER difference is {word} by {abs(ie.estimate):.3f} [{ends[0]:.3f}, {ends[1]:.3f}], not resolved after Holm over "
    assert brief[0].startswith("noise=n10 × gender, big: 0 of 1 resolved: ") and short in brief[0], brief[0]
    other = {**resolved, "question": {"text": "Q?", "effects": ["noise=n20 × gender"]}}
    assert key_brief(findings, other, "eer")[0].startswith("noise=n20 × gender: not in the findings")
    with pytest.raises(ConfigError, match="a level \\(A=l\\) restricts an interaction"):
        parse_question({"text": "Q?", "effects": ["noise=n10"]}, "E.yaml", ["noise", "gender"])


def test_a_yaml_level_restriction_names_a_level_of_its_factor(tmp_path, tiny_corpus) -> None:
    from conftest import tiny_experiment

    from interbias.experiments.schema import load_experiment

    ok = load_experiment(tiny_experiment(tmp_path, question={"text": "Q?", "effects": ["noise=n10 × gender"]}))
    assert ok.key_effects[0].levels == (("noise", "n10"),)
    for level in ("n20", "clean"):
        with pytest.raises(ConfigError, match=f"'{level}' is not a level of noise other than its reference clean"):
            load_experiment(tiny_experiment(tmp_path, question={"text": "Q?", "effects": [f"noise={level} × gender"]}))


def test_gap_changes_of_three_factors_state_the_reference_level_first() -> None:
    """E27's form: gender × noise × backend; the rows of ``backend=plda × gender`` are stated at
    each noise level, the reference first, then as the definition lists them; a negative change
    as "lower" with its turned interval."""
    from interbias.analysis.reporting.gap_change import gap_change_brief

    factors = [
        {"name": "gender", "type": "population", "reference": "female", "levels": {"female": 0, "male": 0}},
        {"name": "noise", "type": "acoustic", "reference": "clean", "levels": {"amr": 0, "clean": 0, "ct5": 0}},
        {"name": "backend", "type": "backend", "reference": "cosine", "levels": {"cosine": 0, "plda": 0}},
    ]
    rows = pd.DataFrame(
        {
            "kind": "interaction",
            "effect": [f"IE gender×backend at male, {n}, plda" for n in ("amr", "clean", "ct5")],
            "estimate": [-0.02, 0.01, 0.05],
            "lo": [-0.05, -0.01, 0.02],
            "hi": [0.01, 0.03, 0.08],
            "p_adjusted": [0.9, 1.0, 0.01],
            "resolved": [False, False, True],
            "adjustment": "holm",
            "family_size": 30,
        }
    )
    text = gap_change_brief(rows, {"factors": factors}, "eer")
    assert text == (
        "with backend plda against cosine, the male − female EER difference is at noise clean higher by 0.010 "
        "[-0.010, 0.030], not resolved after Holm over 30 (adjusted p 1.000); at noise amr lower by 0.020 "
        "[-0.010, 0.050], not resolved after Holm over 30 (adjusted p 0.900); at noise ct5 higher by 0.050 "
        "[0.020, 0.080], resolved after Holm over 30 (adjusted p 0.010)"
    )
    assert (
        gap_change_brief(rows.assign(effect="IE noise×backend at male, amr, plda"), {"factors": factors}, "eer") is None
    )
