"""``interbias analyze``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from interbias.cli import app, guarded
from interbias.cli.tables import print_frame


@app.command()
@guarded
def analyze(
    results: Annotated[Path, typer.Argument(help="results.csv (or a run directory).")],
    out: Annotated[Path | None, typer.Option(help="Output folder (default: beside the results).")] = None,
    metric: Annotated[str, typer.Option(help="eer, eer_legacy or min_dcf.")] = "eer",
    bootstrap: Annotated[
        int, typer.Option(help="Bootstrap replicates for percentile CIs (0: none); needs per-trial scores.")
    ] = 0,
    seed: Annotated[int, typer.Option(help="Master seed of bootstrap replicates and permutations.")] = 0,
    unit: Annotated[str, typer.Option(help="Bootstrap resampling unit: speaker (clustered) or trial.")] = "speaker",
    ci_level: Annotated[float, typer.Option(help="Confidence level of the percentile intervals.")] = 0.95,
    permutations: Annotated[
        int, typer.Option(help="Speaker-level permutations per subgroup gap (0: no test); needs scores.")
    ] = 0,
    tolerance: Annotated[
        float, typer.Option(help="Additivity tolerance on |observed − predicted| (metric units).")
    ] = 0.01,
    gap_floor: Annotated[
        float, typer.Option(help="Ratio amplification is flagged when |reference-condition gap| is below this.")
    ] = 0.01,
    group_factor: Annotated[
        str | None, typer.Option(help="Factor whose levels are compared as groups (default: a population factor).")
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Do not print tables.")] = False,
) -> None:
    """Contrasts (IE, NLI), per-model and macro summaries, subgroup gaps, additivity validation,
    and with --bootstrap speaker-cluster CIs, from a DESIGN.md results CSV."""
    from interbias.analysis.suite import Options, analyse, write_tables

    opts = Options(metric, bootstrap, seed, unit, ci_level, permutations, tolerance, gap_floor, group_factor)
    a = analyse(results, opts)
    folder = out or (results if results.is_dir() else results.parent)
    paths = write_tables(a, folder)
    c = a.contrasts.contrasts
    if not quiet:
        ci = ["ie_lo", "ie_hi"] if a.replicates is not None else []
        print_frame(
            c,
            f"contrasts ({metric})",
            ["model", "contrast", "level_a", "level_b", "level_c", "predicted", "ie", *ci, "nli", "flags"],
        )
        print_frame(a.summary, "summary by experiment × contrast × family")
        print_frame(a.gaps.summary, "subgroup gaps over models")
        print_frame(a.additivity.summary, f"additivity (leave-one-setting-out, tolerance {tolerance:g})")
        print_frame(a.macro[a.macro["scope"] == "macro"], f"macro {metric} per model")
    typer.echo(f"{len(c)} contrast(s), {len(a.contrasts.missing)} setting(s) with missing terms")
    if len(a.above_chance):
        typer.echo(f"{len(a.above_chance)} cell(s) with {metric} above chance (0.5): listed in above_chance.csv")
    if a.replicates is not None:
        typer.echo(f"intervals: {a.replicates.describe()}")
    typer.echo("wrote " + ", ".join(p.name for p in paths) + f" in {folder}")
