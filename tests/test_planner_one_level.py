"""One planning level: the headline, findings.csv and `interbias plan` give the same speakers-
needed figure for the same effect (alpha/m, Holm's worst case); `plan --model/--kind/--speakers`
select and invert; a follow-up beyond the corpus says what would provide it; at 80 columns
no line is longer and no number is cut."""

from __future__ import annotations

import json
import math
import re
import shlex
import shutil
from pathlib import Path

import pandas as pd
import pytest
from conftest import wide_lines
from synthetic_runs import gender_noise_run
from typer.testing import CliRunner

from interbias.analysis import planner
from interbias.cli import app

MEANS = {
    "big": {("female", "clean"): 3.0, ("female", "n10"): 2.5, ("male", "clean"): 0.8, ("male", "n10"): 0.3},
    "flat": {("female", "clean"): 1.5, ("female", "n10"): 1.5, ("male", "clean"): 1.5, ("male", "n10"): 1.2},
}


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    return gender_noise_run(tmp_path_factory.mktemp("level") / "run", MEANS, n=12, m=4)


def _invoke(args: list[str]) -> str:
    done = CliRunner(env={"COLUMNS": "80"}).invoke(app, args)
    assert done.exit_code == 0, done.output
    return done.output


def test_headline_findings_and_plan_agree(run: Path, tmp_path: Path) -> None:
    text = _invoke(["analyze", str(run), "--bootstrap", "200", "-q"])
    _invoke(["plan", str(run), "--bootstrap", "200", "--out", str(tmp_path)])
    found = pd.read_csv(run / "findings.csv").set_index(["model", "effect"]).sort_index()
    plan = pd.read_csv(tmp_path / "plan.csv").set_index(["model", "effect"]).sort_index()
    shared = ["mde", "speakers_per_stratum_needed", "alpha_effect"]
    assert set(shared) <= set(found.columns) and set(shared) <= set(plan.columns)
    pd.testing.assert_frame_equal(found[shared], plan[shared])
    assert (found["alpha_effect"] == 0.05 / found["family_size"]).all()
    flat = " ".join(text.split())
    ie = found.xs("flat")[found.xs("flat")["kind"] == "interaction"]["speakers_per_stratum_needed"]
    assert f"would need a median {math.ceil(ie.median())} speakers per stratum" in flat
    assert "power 0.8, at alpha/m, Holm's worst case over the family of m, the level 'resolved' needs" in flat


def test_plan_selects_inverts_and_fits_80_columns(run: Path, tmp_path: Path) -> None:
    text = _invoke(["plan", str(run), "--bootstrap", "200", "--out", str(tmp_path), "--model", "flat", "--kind",
                    "interaction", "--speakers", "48"])  # fmt: skip
    plan = pd.read_csv(tmp_path / "plan.csv")
    assert set(plan["model"]) == {"flat"} and set(plan["kind"]) == {"interaction"}
    # MDE at N speakers: the pilot's MDE scaled by sqrt(n_pilot / N) (n_pilot 12)
    assert plan["mde_at_48_speakers"].to_numpy() == pytest.approx(plan["mde"].to_numpy() * math.sqrt(12 / 48))
    assert not wide_lines(text)
    for need in plan["speakers_per_stratum_needed"].astype(int):
        assert str(need) in text  # never cut
    done = CliRunner().invoke(app, ["plan", str(run), "--bootstrap", "200", "--out", str(tmp_path), "--kind", "x"])
    assert done.exit_code != 0 and "--kind 'x': valid: main, interaction, gap" in done.output


def test_a_follow_up_beyond_the_corpus_says_what_would_provide_it() -> None:
    text = planner.beyond_corpus(500.0, 120, "synthetic", groups=2, dev=7)
    assert "needs 500 (+ 7 dev) speakers per stratum, the synthetic corpus holds 120" in text
    # 2 voice-disjoint strata × 507 = 1014, rounded up to a multiple of the 24 cells: 1032
    assert "interbias data build synthetic --speakers 1032" in text and "plan narrower" in text
    assert planner.build_command(28039, 1).endswith("--speakers 28056")  # strata sharing one set of voices
    assert planner.beyond_corpus(100.0, 120, "synthetic") == "" and planner.beyond_corpus(500.0, None, "x") == ""
    frame = pd.DataFrame({"kind": ["main", "gap", "interaction"], "x": [1, 2, 3]})
    assert planner.central_first(frame, "contrast")["kind"].tolist() == ["interaction", "main", "gap"]
    assert planner.median_need([1.0, 2.0, float("nan")]) == 2.0


def test_voice_groups_count_strata_with_voices_of_their_own() -> None:
    disjoint = pd.DataFrame(
        {"stratum": ["g=f", "g=f", "g=m"], "enrol_speaker": ["f1", "f2", "m1"], "test_speaker": ["f1", "f1", "m2"]}
    )
    shared = pd.DataFrame(  # six emotions, one set of voices (E14)
        {"stratum": [f"emotion={e}" for e in "abcdef"] * 2, "enrol_speaker": ["v1"] * 6 + ["v2"] * 6,
         "test_speaker": ["v2"] * 6 + ["v1"] * 6}
    )  # fmt: skip
    assert planner.voice_groups(disjoint) == 2 and planner.voice_groups(shared) == 1


class _Built(Exception):
    """Raised in place of rendering: the spec data build would have rendered."""


def test_the_printed_build_command_is_accepted_as_printed(run: Path, tmp_path: Path, monkeypatch) -> None:
    pilot = tmp_path / "pilot"
    shutil.copytree(run, pilot)
    meta = json.loads((pilot / "trials.json").read_text())
    meta["strata"] = {"gender=female": {"n_speakers": 12}, "gender=male": {"n_speakers": 12}}  # every voice drawn
    (pilot / "trials.json").write_text(json.dumps(meta))
    resolved = json.loads((pilot / "experiment.resolved.json").read_text())
    (pilot / "experiment.resolved.json").write_text(json.dumps({**resolved, "variant": "synthetic"}))
    text = _invoke(["plan", str(pilot), "--bootstrap", "200", "--out", str(tmp_path)])
    lines = [
        line.strip()
        for line in text.splitlines()
        if re.fullmatch(r"interbias data build \S+ --speakers \d+", line.strip())
    ]
    assert len(lines) == 1, text
    need = int(pd.read_csv(tmp_path / "plan.csv")["speakers_per_stratum_needed"].max())
    flat = " ".join(text.split())
    assert f"needs {need} speakers per stratum, the synthetic corpus holds 12" in flat
    assert "interbias run EXPERIMENT.yaml --corpus synthetic --plan" in flat  # the pilot's variant

    def build(spec, *args, **kwargs):
        raise _Built(spec)

    monkeypatch.setattr("interbias.corpora.synthetic.build", build)  # the rendering, never the checks
    args = shlex.split(lines[0])
    done = CliRunner().invoke(app, args[1:])
    assert isinstance(done.exception, _Built), done.output  # option checks and the spec passed
    spec = done.exception.args[0]
    total = int(args[-1])
    assert spec.voices_per_cell * spec.n_cells() == total and total % spec.n_cells() == 0
    assert total // 2 >= need and total - 24 < 2 * need  # two gender strata each hold the need, no more than a cell row
