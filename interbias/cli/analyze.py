"""``interbias analyze``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from interbias.cli import app, guarded
from interbias.cli.tables import print_frame
from interbias.utils.progress import Reporter

if TYPE_CHECKING:
    from interbias.analysis.suite import Analysis

#: Options shared by ``analyze`` and ``report``.
MetricOpt = Annotated[
    str,
    typer.Option(help="eer, eer_legacy, min_dcf, or at the run's shared calibration: act_dcf, calibration_loss, cllr."),
]
SeedOpt = Annotated[int, typer.Option(help="Master seed of bootstrap replicates and permutations.")]
UnitOpt = Annotated[str, typer.Option(help="Bootstrap resampling unit: speaker (clustered) or trial.")]
PermOpt = Annotated[int, typer.Option(help="Speaker-level permutations per subgroup gap (0: no test); needs scores.")]
TolOpt = Annotated[float, typer.Option(help="Additivity tolerance on |observed − predicted| (metric units).")]
FloorOpt = Annotated[
    float, typer.Option(help="Ratio amplification is flagged when |reference-condition gap| is below this.")
]
AdjustOpt = Annotated[
    str,
    typer.Option(
        help="Multiplicity adjustment of the findings' p-values over each experiment's effects: holm "
        "(family-wise error), bh (false discovery rate) or none."
    ),
]
DesignOpt = Annotated[
    str,
    typer.Option(
        "--bootstrap-design",
        help="corrected: speaker bootstrap with its pair-variance correction (SE matches the sampling SD); "
        "speaker: the plain speaker bootstrap (conservative, for comparison).",
    ),
]
SimpleOpt = Annotated[
    bool,
    typer.Option(
        "--simple", help="Also report simple effects (one factor within one setting of the others), outside the family."
    ),
]
GroupOpt = Annotated[
    str | None, typer.Option(help="Factor whose levels are compared as groups (default: a population factor).")
]


def _findings(a: Analysis, folder: Path) -> list[Path]:
    """Print the findings first; write findings.csv when there are intervals."""
    from interbias.analysis.headline import headline
    from interbias.utils import atomic

    found = headline(a)
    typer.echo("findings:")
    for line in found.lines:
        typer.echo(line)
    if found.findings is None:
        return []
    atomic.write_csv(folder / "findings.csv", found.findings)
    return [folder / "findings.csv"]


@app.command(epilog="Example: interbias analyze results/<run_id>/results.csv --bootstrap 1000")
@guarded
def analyze(
    results: Annotated[Path, typer.Argument(help="results.csv (or a run directory).")],
    out: Annotated[Path | None, typer.Option(help="Output folder (default: beside the results).")] = None,
    metric: MetricOpt = "eer",
    bootstrap: Annotated[
        int, typer.Option(help="Bootstrap replicates for percentile CIs (0: none); needs per-trial scores.")
    ] = 0,
    seed: SeedOpt = 0,
    unit: UnitOpt = "speaker",
    ci_level: Annotated[float, typer.Option(help="Confidence level of the percentile intervals.")] = 0.95,
    permutations: PermOpt = 0,
    tolerance: TolOpt = 0.01,
    gap_floor: FloorOpt = 0.01,
    group_factor: GroupOpt = None,
    adjust: AdjustOpt = "holm",
    bootstrap_design: DesignOpt = "corrected",
    simple: SimpleOpt = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Do not print tables or progress.")] = False,
) -> None:
    """Contrasts (IE, NLI), summaries, subgroup gaps, additivity and bootstrap CIs of a run's results.csv."""
    from interbias.analysis.bootstrap import check_replicates
    from interbias.analysis.suite import Options, analyse, write_tables

    check_replicates(bootstrap, bootstrap_design if unit == "speaker" else unit)
    opts = Options(
        metric,
        bootstrap,
        seed,
        unit,
        ci_level,
        permutations,
        tolerance,
        gap_floor,
        group_factor,
        adjust,
        bootstrap_design,
        simple,
    )
    a = analyse(results, opts, Reporter(quiet=quiet))
    folder = out or (results if results.is_dir() else results.parent)
    paths = write_tables(a, folder) + _findings(a, folder)
    c = a.contrasts.contrasts
    if not quiet:
        _print_tables(a, metric, tolerance)
    typer.echo(f"{len(c)} contrast(s), {len(a.contrasts.missing)} setting(s) with missing terms")
    if len(a.above_chance):
        typer.echo(f"{len(a.above_chance)} cell(s) with {metric} above chance (0.5): listed in above_chance.csv")
    if a.replicates is not None:
        typer.echo(f"intervals: {a.replicates.describe()}")
    typer.echo("wrote " + ", ".join(p.name for p in paths) + f" in {folder}")


def _print_tables(a: Analysis, metric: str, tolerance: float) -> None:
    """Contrasts, their summary, subgroup gaps, additivity and the macro metric per model."""
    from interbias.analysis.contrasts import R_NOTE

    c = a.contrasts.contrasts
    ci = ["ie_lo", "ie_hi"] if a.replicates is not None else []
    print_frame(
        c,
        f"contrasts ({metric})",
        ["model", "contrast", "level_a", "level_b", "level_c", "predicted", "ie", *ci, "nli", "flags"],
    )
    lohi = ["mean_ie_lo", "mean_ie_hi"] if a.replicates is not None else []
    print_frame(
        a.summary,
        "summary by experiment × contrast × family",
        [
            "experiment",
            "contrast",
            "family",
            "n",
            "mean_ie",
            *lohi,
            "sd_ie",
            "pct_positive",
            "mean_nli",
            "n_nli",
            "mean_predicted",
            "r_predicted_ie",
        ],
    )
    typer.echo(f"r_predicted_ie: {R_NOTE}")
    glohi = ["mean_abs_gap_lo", "mean_abs_gap_hi"] if a.replicates is not None else []
    print_frame(
        a.gaps.summary,
        "subgroup gaps over models (gap = group level − reference group)",
        [
            "experiment",
            "group_level",
            "condition",
            "n_models",
            "mean_gap",
            "mean_abs_gap",
            *glohi,
            "max_abs_gap",
            "n_ratio_flagged",
        ],
    )
    print_frame(
        a.additivity.summary,
        f"additivity (leave-one-setting-out, tolerance {tolerance:g})",
        ["experiment", "model", "n_settings", "n_estimable", "share_within", "mean_abs_error", "max_abs_error"],
    )
    for r in a.additivity.summary.itertuples(index=False):
        typer.echo(f"worst settings, {r.model}: {r.worst_settings}")
    mlohi = ["lo", "hi"] if a.replicates is not None else []
    print_frame(
        a.macro[a.macro["scope"] == "macro"],
        f"macro {metric} per model",
        ["model", "family", "n_experiments", "n_cells", "value", *mlohi],
    )
