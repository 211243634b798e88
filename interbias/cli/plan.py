"""``interbias plan``: speakers per stratum needed to resolve an effect, from a pilot run."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from interbias.cli import app, guarded
from interbias.cli.analyze import GroupOpt, MetricOpt, SeedOpt
from interbias.cli.tables import print_frame

if TYPE_CHECKING:
    import pandas as pd

    from interbias.analysis.planner import Settings


@app.command(epilog="Example: interbias plan results/<run_id> --effect 0.01 --power 0.8")
@guarded
def plan(
    run_dir: Annotated[Path, typer.Argument(help="Pilot run directory (results/<run_id>/) with per-trial scores.")],
    effect: Annotated[float, typer.Option(help="Effect to detect, in metric units (0.01 = one point of EER).")] = 0.01,
    power: Annotated[float, typer.Option(help="Wanted power (probability the interval excludes zero).")] = 0.8,
    alpha: Annotated[
        float,
        typer.Option(
            help="The family's level: each effect is planned at alpha/m, Holm's worst case over the experiment's "
            "family of m effects (the findings' test), unless --per-effect."
        ),
    ] = 0.05,
    per_effect: Annotated[
        bool, typer.Option("--per-effect", help="Plan each effect alone at alpha (no family adjustment).")
    ] = False,
    metric: MetricOpt = "eer",
    bootstrap: Annotated[int, typer.Option(help="Speaker-bootstrap replicates for the pilot's SEs.")] = 1000,
    seed: SeedOpt = 0,
    group_factor: GroupOpt = None,
    out: Annotated[Path | None, typer.Option(help="Folder for plan.csv (default: the run directory).")] = None,
) -> None:
    """Minimum detectable effect of the run as it is, and speakers per stratum needed for --effect
    at --power to be resolved in the findings, for every effect of the family; writes plan.csv."""
    from interbias.analysis import planner
    from interbias.analysis.suite import Options, analyse
    from interbias.utils import atomic
    from interbias.utils.errors import AnalysisError

    settings = planner.Settings(effect, power, alpha, family=not per_effect)
    if bootstrap < 2:
        raise AnalysisError(f"--bootstrap must be at least 2 to estimate a standard error, got {bootstrap}")
    opts = Options(metric, bootstrap, seed, "speaker", 1 - alpha, group_factor=group_factor)
    a = analyse(run_dir, opts)
    frame = planner.plan(a, settings)
    pilot = planner.pilot_of(a.run.design())
    folder = out or (run_dir if run_dir.is_dir() else run_dir.parent)
    atomic.write_csv(folder / "plan.csv", frame)
    typer.echo(f"pilot: {pilot.describe()}")
    typer.echo(f"model: {planner.MODEL}")
    typer.echo(f"assumptions: {planner.ASSUMPTIONS}")
    typer.echo(f"standard errors: {a.replicates.describe()}")
    typer.echo(_level_line(frame, settings))
    print_frame(
        planner.recommendation(frame),
        f"speakers per stratum to detect {effect:g} with power {power:g} "
        f"({'alpha ' + format(alpha, 'g') if per_effect else 'family alpha ' + format(alpha, 'g') + ', per effect alpha/m'})",
        None,
    )
    print_frame(
        frame,
        "per effect",
        ["model", "effect", "estimate", "lo", "hi", "mde", "speakers_per_stratum_needed", "note"],
    )
    reason = planner.no_plan_reason(frame)
    if reason is not None:
        typer.echo(f"follow-up: {reason}")
    else:
        typer.echo(
            f"a follow-up of the planned size: interbias run {follow_up_experiment((a.run.resolved or {}).get('name'))} --plan {folder / 'plan.csv'} "
            f"(the most any effect needs: {_largest(frame)}; equal strata, the pilot's trials per speaker)"
        )
    typer.echo(f"wrote {folder / 'plan.csv'} ({len(frame)} effect(s))")


def _largest(frame: object) -> str:
    """The trials: block of the effect with the largest need (what ``run --plan`` will draw)."""
    need = frame["speakers_per_stratum_needed"]  # type: ignore[index]
    if not need.notna().any():
        return "no effect could be planned"
    top = frame.loc[need.idxmax()]  # type: ignore[attr-defined]
    n_dev = int(top["dev_speakers_per_stratum_needed"])
    dev = (
        f"; and {n_dev} dev speakers per stratum, {int(top['speakers_per_stratum_needed']) + n_dev} in all"
        if n_dev
        else ""
    )
    return (
        f"trials: {{speakers_per_stratum: {int(top['speakers_per_stratum_needed'])}, "
        f"targets: {int(top['target_trials_per_stratum_needed'])}, "
        f"nontargets: {int(top['nontarget_trials_per_stratum_needed'])}}}{dev}"
    )


def _level_line(frame: pd.DataFrame, settings: Settings) -> str:
    """The level each effect is planned at, and why."""
    if not settings.family:
        return (
            f"level: each effect alone at alpha {settings.alpha:g} "
            "(--per-effect: the findings' adjustment over the family is not planned for)"
        )
    sizes = sorted({int(m) for m in frame["family_size"]}) if len(frame) else []
    per = ", ".join(f"{settings.alpha:g}/{m} = {settings.alpha / m:.3g}" for m in sizes) or "no effects"
    return (
        f"level: family alpha {settings.alpha:g}; each effect planned at alpha/m ({per}), Holm's worst case "
        "over the experiment's family of m effects, so the planned power is the power to be resolved"
    )


def follow_up_experiment(name: str | None) -> str:
    """What to type after ``interbias run`` for the run's experiment ``name``: the name where the
    catalogue (``conditions/``) has it, else a placeholder for the user's YAML file."""
    from interbias.utils.paths import conditions_dir

    if name and (conditions_dir() / f"{name}.yaml").is_file():
        return name
    return "EXPERIMENT.yaml"
