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
        gap = re.search(rf"gender gap, {model}: (\d+) of (\d+) resolved; largest: EER for (\w+) is (\w+) than", text)
        assert gap and gap.group(4) in ("higher", "lower"), text
        assert re.search(
            rf"gender × noise, {model}: \d+ of \d+ resolved; largest: at \w+, \w+, EER is (above|below)", text
        )
    # the "big" model's male cells score far lower target means: men's EER is higher there
    assert re.search(
        r"gender gap, big: [1-9]\d* of \d+ resolved; largest: EER for male is higher than for female", text
    )
    assert max(len(line) for line in tail) <= 80
    assert sum(line.startswith("wrote ") for line in out.output.splitlines()) == 1
