"""``interbias analyze`` ends with the answer: at 80×24 its last lines state the experiment's
question and, per effect the question names, the direction of the largest effect in words; the
file list is one line above them."""

from __future__ import annotations

import json
import re

import pytest
from synthetic_runs import gender_noise_run
from typer.testing import CliRunner

from interbias.cli import app

MEANS = {
    "big": {("female", "clean"): 3.0, ("female", "n10"): 2.5, ("male", "clean"): 0.8, ("male", "n10"): 0.3},
    "flat": {("female", "clean"): 1.5, ("female", "n10"): 1.5, ("male", "clean"): 1.5, ("male", "n10"): 1.2},
}
ASKED = {"text": "Does noise widen the gap between women and men?", "effects": ["gender gap", "gender × noise"]}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    run = gender_noise_run(tmp_path_factory.mktemp("answer") / "run", MEANS, n=12, m=4)
    path = run / "experiment.resolved.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "question": ASKED}))
    return run


def test_the_last_20_lines_hold_the_question_and_a_direction(run_dir, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    out = CliRunner().invoke(app, ["analyze", str(run_dir), "--bootstrap", "200"])
    assert out.exit_code == 0, out.output
    tail = [line for line in out.output.splitlines() if line.strip()][-20:]
    text = " ".join(line.strip() for line in tail)
    assert "answer: Does noise widen the gap between women and men?" in text
    for model in MEANS:
        gap = re.search(
            rf"gender gap, {model}: (\d+) of (\d+) resolved; largest: [^:]+: EER for (\w+) is (\w+) than", text
        )
        assert gap and gap.group(4) in ("higher", "lower"), text
        ie = (
            rf"gender × noise, {model}: \d+ of \d+ resolved; largest: gender × noise at \w+, \w+: with noise \w+ "
            r"the male − female EER difference is (higher|lower) than with clean by"
        )
        assert re.search(ie, text), text
    # the "big" model's male cells score far lower target means: men's EER is higher there
    big = r"gender gap, big: [1-9]\d* of \d+ resolved; largest: gender male − female at \w+: EER for male is higher"
    assert re.search(big, text), text
    assert max(len(line) for line in tail) <= 80
    assert sum(line.startswith("wrote ") for line in out.output.splitlines()) == 1


def test_one_name_per_effect_in_findings_report_and_answer(run_dir) -> None:
    """findings.csv's ``label``, the report's effect tables and the answer write each effect with
    the same string (:func:`effect_name`); ``effect`` keeps its long form."""
    import pandas as pd

    from interbias.analysis.reporting.answer import answer, key_brief
    from interbias.analysis.reporting.report import labelled

    out = CliRunner().invoke(app, ["analyze", str(run_dir), "--bootstrap", "200"])
    assert out.exit_code == 0, out.output
    found = pd.read_csv(run_dir / "findings.csv", keep_default_na=False)
    assert list(found.columns[found.columns.get_loc("effect") : found.columns.get_loc("effect") + 2]) == [
        "effect", "label"
    ]  # fmt: skip
    labels = set(found["label"])
    assert labels.isdisjoint(set(found["effect"]))  # the long form stays as it was
    assert "gender × noise at male, n10" in labels and "gender male − female at n10" in labels
    assert set(labelled(found.drop(columns="label"))["effect"]) == labels  # the report's tables
    resolved = json.loads((run_dir / "experiment.resolved.json").read_text())
    ans = answer(found, resolved, "eer", "95%")
    texts = {"gap": "gender gap", "interaction": "gender × noise"}
    for (kind, model), grp in found[found["kind"].isin(list(texts))].groupby(["kind", "model"]):
        res = grp[grp["resolved"].astype(str) == "True"]
        pool = res if len(res) else grp
        top = pool.loc[pool["estimate"].astype(float).abs().idxmax(), "label"]
        brief = [x for x in key_brief(found, resolved, "eer") if x.startswith(f"{texts[kind]}, {model}:")]
        # an interaction of gender with noise is worded as the change of the gender gap it is
        said = "EER " if kind == "gap" else "with noise "
        assert len(brief) == 1 and f"; largest: {top}: {said}" in brief[0], brief
        key = [x for x in ans.key if x.startswith(f"{texts[kind]}, {model}:")]
        largest = grp.loc[grp["estimate"].astype(float).abs().idxmax(), "label"]
        assert len(key) == 1 and f": {largest}: {said}" in key[0], key


def test_the_report_opens_with_the_same_short_answer_then_the_forest_plot(run_dir, tmp_path) -> None:
    """report.md's Answer (what a browser shows first at 1280×800): the question, the terminal's
    answer lines "In short", the central statement, then the forest plot; the named effects in
    detail and the per-model kind lines come after the figure."""
    out = CliRunner().invoke(app, ["report", str(run_dir), "--bootstrap", "200", "--out", str(tmp_path)])
    assert out.exit_code == 0, out.output
    md = (tmp_path / "report.md").read_text()
    answer = md.split("## Answer\n\n", 1)[1].split("\n## ", 1)[0]
    blocks = answer.split("\n\n")
    assert blocks[0] == f"Question: {ASKED['text']}" and blocks[1] == "In short:"
    analyzed = CliRunner().invoke(app, ["analyze", str(run_dir), "--bootstrap", "200", "--wide"])
    tail = analyzed.output.split("\nanswer: ", 1)[1].splitlines()[1:]
    assert blocks[2].splitlines() == [f"- {line.strip()}" for line in tail if line.strip()]  # the terminal's lines
    assert blocks[3].startswith(("Answer: ", "Not resolved: ")) and blocks[4].startswith("Metric: ")
    forest = answer.index("(report_figures/forest.png)")
    assert forest < answer.index("The effects the question names") < answer.index("- big — main effects: ")
