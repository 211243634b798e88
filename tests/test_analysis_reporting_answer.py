"""The answer a report opens with: the experiment's question, one line per model and effect
kind (counts, the largest resolved harm, the median MDE and speakers needed of the unresolved),
and a plain statement on the central effect (interaction for contrast experiments, gap for gap
experiments). Kinds are read from the findings, so `simple` rows and rows without an interval
(NaN lo/hi with a note) need no change."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from synthetic_runs import gender_noise_run

from interbias.analysis.reporting.answer import answer, central_line, question
from interbias.analysis.reporting.headline import headline
from interbias.analysis.suite import Options, analyse

MEANS = {
    "big": {("female", "clean"): 3.0, ("female", "n10"): 2.5, ("male", "clean"): 0.8, ("male", "n10"): 0.3},
    "flat": {("female", "clean"): 1.5, ("female", "n10"): 1.5, ("male", "clean"): 1.5, ("male", "n10"): 1.5},
}


@pytest.fixture(scope="module")
def findings(tmp_path_factory) -> pd.DataFrame:
    run = gender_noise_run(tmp_path_factory.mktemp("answer") / "run", MEANS, n=16)
    return headline(analyse(run, Options(n_boot=200))).findings


def test_question_from_the_yaml_else_derived() -> None:
    assert question({"question": " Does noise widen the gap? "}, "eer") == "Does noise widen the gap?"
    factors = [{"name": "emotion", "type": "population"}, {"name": "noise", "type": "acoustic"}]
    assert question({"use": "contrast", "factors": factors}, "eer").startswith("Do emotion and noise interact")
    assert question({"use": "gap", "factors": factors}, "eer").startswith(
        "How large is the EER gap between levels of emotion"
    )


def test_catalogue_questions_are_one_line() -> None:
    from interbias.experiments.schema import load_experiment
    from interbias.utils.paths import conditions_dir

    for path in sorted(conditions_dir().glob("E*.yaml")):
        exp = load_experiment(path)
        assert exp.question and "\n" not in exp.question and exp.question.endswith("?"), path.name


def test_kind_lines_count_and_name_the_largest_harm(findings: pd.DataFrame) -> None:
    ans = answer(findings, {"use": "gap", "factors": []}, "eer", "95%")
    assert [(m, k) for m, k, _ in ans.lines] == [
        (m, k) for m in ("big", "flat") for k in ("main", "interaction", "gap")
    ]
    big_gap = dict(((m, k), line) for m, k, line in ans.lines)[("big", "gap")]
    gaps = findings[(findings.model == "big") & (findings.kind == "gap")]
    assert gaps.resolved.all() and big_gap.startswith(
        f"subgroup gaps: {len(gaps)} of {len(gaps)} resolved; largest harm: "
    )
    top = gaps.loc[gaps.estimate.abs().idxmax()]
    assert f"({top.estimate:+.3f}, 95% CI [{top.lo:+.3f}, {top.hi:+.3f}])" in big_gap
    flat = dict(((m, k), line) for m, k, line in ans.lines)[("flat", "gap")]
    part = findings[(findings.model == "flat") & (findings.kind == "gap")]
    need = math.ceil(float(np.median(part.speakers_per_stratum_needed)))  # rounded up, as plan
    assert f"median MDE {np.median(part.mde):.3f}" in flat and f"a median {need} speakers per stratum" in flat
    assert ans.central.startswith(f"Answer: {int(findings[findings.kind == 'gap'].resolved.sum())} of 4 subgroup gaps")


def test_central_effect_not_resolved_says_what_would_resolve_it(findings: pd.DataFrame) -> None:
    ie = findings[findings.kind == "interaction"]
    assert not ie.resolved.any()
    line = central_line(findings, "contrast")
    need = ie.speakers_per_stratum_needed.astype(float)
    assert line.startswith(f"Not resolved: none of the {len(ie)} interactions is resolved for any model")
    assert f"a median {math.ceil(need.median())} speakers per stratum (at most {int(need.max())}" in line
    assert "interbias plan" in line and central_line(findings, "descriptive") == ""


def test_new_kinds_and_rows_without_interval_drop_in(findings: pd.DataFrame) -> None:
    extra = findings[findings.kind == "main"].head(2).copy()
    extra["kind"], extra["lo"], extra["hi"], extra["resolved"] = "simple", math.nan, math.nan, math.nan
    extra["note"] = "no interval: the replicates do not move"
    frame = pd.concat([findings, extra], ignore_index=True)
    ans = answer(frame, {"use": "gap"}, "eer", "95%")
    simple = [line for m, k, line in ans.lines if k == "simple"]
    assert simple and simple[0].startswith("simple effects: 0 of ")
    kinds = [k for m, k, _ in ans.lines if m == extra.model.iloc[0]]
    assert kinds.index("simple") == kinds.index("main") + 1


def test_an_mde_above_the_bound_is_explained_on_the_same_line(findings: pd.DataFrame) -> None:
    """'median MDE 0.189' beside 'within ±0.177' read as a contradiction: when the median MDE
    of the unresolved effects exceeds the simultaneous bound, the line says why both hold."""
    from interbias.analysis.reporting.answer import bound, kind_line

    grp = findings[(findings.model == "flat") & (findings.kind == "gap")].copy()
    b = bound(grp)
    assert np.isfinite(b)
    for scale, explained in ((2.0, True), (0.5, False)):
        grp["mde"] = b * scale  # every unresolved gap's MDE above (below) the bound
        line = kind_line(grp, "gap", "eer", "95%")
        mde = f"{b * scale:.3f}"
        assert f"median MDE {mde} (a true effect this large is resolved in 80 % of runs this size)" in line
        assert f"within ±{b:.3f} (simultaneous 95%: larger effects ruled out)" in line
        said = (
            f"the median MDE {mde} exceeds ±{b:.3f}: for a typical effect here, one of ±{b:.3f} is resolved in fewer than 80 % "
            f"of runs this size, so this run cannot reliably tell 0 from ±{b:.3f}"
        )
        assert (said in line) is explained, line
