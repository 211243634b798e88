"""``interbias scores fairness``."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from interbias.cli import guarded
from interbias.cli.analysis_options import TimeOpt
from interbias.cli.numeric import check_numbers
from interbias.cli.options import ForceOpt, json_flag, quiet_flag
from interbias.cli.scores import scores_app
from interbias.cli.tables import echo_wrapped, print_frame

if TYPE_CHECKING:
    from interbias.analysis.groups.fairness import FairnessReport


class Test(StrEnum):
    speaker = "speaker"
    trial_z = "trial-z"


class Positive(StrEnum):
    accept = "accept"
    spoof = "spoof"


GroupOption = Annotated[
    list[str] | None,
    typer.Option(
        "--group",
        help="Group attribute (repeatable): a column, or enrol_COLUMN and test_COLUMN (a trial "
        "belongs to a group when both sides do; other pairs are reported as 'mixed'); "
        "gender×age_band crosses attributes into one grouping of crossed cells.",
    ),
]
CrossOption = Annotated[
    bool,
    typer.Option(
        "--cross",
        help="Cross the --group attributes into one grouping (gender×age_band): every crossed "
        "cell with its speakers, Holm over the crossed family.",
    ),
]


@scores_app.command(epilog="Example: interbias scores fairness eval.csv --group gender --dev dev.csv")
@guarded
def fairness(
    scores: Annotated[
        Path,
        typer.Argument(
            help="Evaluation scores: a CSV/parquet with score (higher = more target-like / bona fide), label "
            "(1/target/bonafide = should be accepted, 0/nontarget/spoof = should be rejected) and the group "
            "column(s); or a run directory with dev trials."
        ),
    ],
    group: GroupOption = None,
    cross: CrossOption = False,
    dev: Annotated[
        Path | None, typer.Option(help="Development scores (score, label) the threshold is chosen on.")
    ] = None,
    positive: Annotated[
        Positive, typer.Option(help="Positive class: accept (speaker verification) or spoof (countermeasure).")
    ] = Positive.accept,
    threshold_rule: Annotated[
        str | None,
        typer.Option(help="eer (dev EER threshold), fixed:X, or far:X (lowest dev threshold with FAR <= X)."),
    ] = None,
    alpha: Annotated[float, typer.Option(help="Significance level of the Holm-adjusted tests.")] = 0.05,
    test: Annotated[
        Test,
        typer.Option(
            help="speaker: z = difference / speaker-bootstrap SE (trials clustered by their speakers; needs "
            "speaker columns in a score file); trial-z: the two-proportion z-test on trial counts, which "
            "assumes independent trials (the deepfake gender-fairness study's test)."
        ),
    ] = Test.speaker,
    bootstrap: Annotated[int, typer.Option(help="Replicates of the speaker bootstrap (at least 50).")] = 1000,
    out: Annotated[
        Path | None,
        typer.Option(
            help="Folder to write the report into: its comparisons and per-group values, named as in a run directory."
        ),
    ] = None,
    as_json: Annotated[bool, json_flag("Print the report as JSON.")] = False,
    quiet: Annotated[bool, quiet_flag("Do not print tables.")] = False,
    wide: Annotated[bool, typer.Option("--wide", help="Print every column and row of both tables.")] = False,
    force: ForceOpt = False,
    no_time_limit: TimeOpt = False,
) -> None:
    """Group fairness at one dev-chosen threshold: FAR/FRR, five group metrics, Holm-corrected tests
    clustered by speaker (or trial-level z-tests with --test trial-z)."""
    check_numbers("scores fairness", alpha=alpha, bootstrap=bootstrap)
    from interbias.analysis.groups.fairness import fairness_for_files, fairness_for_run
    from interbias.analysis.groups.fairness_cross import crossed
    from interbias.run.outputs import check_output_folder
    from interbias.run.rundir import FAIRNESS, FAIRNESS_GROUPS
    from interbias.utils.budget import TIME_LIMIT_S
    from interbias.utils.errors import AnalysisError

    check_output_folder(out, (FAIRNESS, FAIRNESS_GROUPS), force=force)
    if cross:
        group = crossed(group or [])
    common: dict[str, Any] = {"alpha": alpha, "test": test.value, "n_boot": bootstrap}
    common["time_limit_s"] = None if no_time_limit else TIME_LIMIT_S
    if scores.is_dir():
        if dev is not None or positive is not Positive.accept:
            raise AnalysisError(
                "a run directory holds its own dev trials and is scored as verification: drop --dev/--positive"
            )
        report = fairness_for_run(scores, groups=group or None, rule=threshold_rule, **common)
        if report is None:
            raise AnalysisError(f"{scores}: the run has no dev trials (set trials.dev_share in the experiment)")
    else:
        rule = threshold_rule or "eer"
        report = fairness_for_files(scores, group or [], dev=dev, rule=rule, positive=positive.value, **common)
    _show(report, out, as_json, quiet, wide)


#: Columns a narrow terminal shows first (the rest follow in the table's order while they fit).
GROUP_FIRST = ("model", "condition", "group", "n", "speakers", "far", "frr")
COMPARISON_FIRST = ("model", "condition", "metric", "difference", "p_holm", "significant", "group_a", "group_b")


def _first(columns: tuple[str, ...], first: tuple[str, ...], wide: bool) -> list[str]:
    return list(columns) if wide else [*first, *(c for c in columns if c not in first)]


def _show(report: FairnessReport, out: Path | None, as_json: bool, quiet: bool, wide: bool = False) -> None:
    """Write the report's CSVs into ``out``; print it as JSON or as two tables."""
    from interbias.analysis.groups.fairness import COMPARISON_TABLE, GROUP_TABLE

    if out is not None:
        paths = report.write(out)
    if as_json:
        typer.echo(report.to_json())
    elif not quiet:
        from interbias.run.rundir import FAIRNESS, FAIRNESS_GROUPS

        where = FAIRNESS_GROUPS if out is not None else f"--out DIR writes {FAIRNESS_GROUPS}"
        title = f"groups at the threshold (positive class: {report.positive})"
        print_frame(report.groups, title, _first(GROUP_TABLE, GROUP_FIRST, wide), wide=wide, full=where)
        where = FAIRNESS if out is not None else f"--out DIR writes {FAIRNESS}"
        title = "group differences (Holm across the report)"
        print_frame(report.comparisons, title, _first(COMPARISON_TABLE, COMPARISON_FIRST, wide), wide=wide, full=where)
        echo_wrapped(report.family, wide=wide)
    if out is not None and not as_json:
        typer.echo(f"wrote {', '.join(str(p) for p in paths)}")
