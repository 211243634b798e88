"""``interbias plan``: speakers per stratum needed to resolve an effect, from a pilot run."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from interbias.cli import app, guarded
from interbias.cli.analysis_options import DesignOpt, GroupOpt, MetricOpt, SeedOpt, TimeOpt
from interbias.cli.numeric import check_numbers
from interbias.cli.options import JsonOpt, WideOpt
from interbias.cli.tables import echo_wrapped, print_frame

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
    bootstrap_design: DesignOpt = "corrected",
    group_factor: GroupOpt = None,
    model: Annotated[str | None, typer.Option(help="Plan for this model only (default: every model).")] = None,
    kind: Annotated[
        str | None, typer.Option(help="Plan for one kind of effect only: interaction, main or gap (default: all).")
    ] = None,
    speakers: Annotated[
        float | None,
        typer.Option(
            help="Also state the MDE each effect would have with this many speakers per stratum (a whole number)."
        ),
    ] = None,
    out: Annotated[Path | None, typer.Option(help="Folder for plan.csv (default: the run directory).")] = None,
    no_time_limit: TimeOpt = False,
    wide: WideOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Minimum detectable effect of the run as it is, and speakers per stratum needed for --effect
    at --power to be resolved in the findings, for every effect of the family; writes plan.csv."""
    check_numbers("plan", effect=effect, power=power, alpha=alpha, bootstrap=bootstrap, speakers=speakers)
    n_speakers = whole_speakers(speakers)
    from interbias.analysis import planner
    from interbias.analysis.findings_store import with_label
    from interbias.analysis.stats.bootstrap import check_replicates
    from interbias.analysis.suite import Options, analyse
    from interbias.utils import atomic
    from interbias.utils.budget import TIME_LIMIT_S
    from interbias.utils.errors import AnalysisError

    settings = planner.Settings(effect, power, alpha, family=not per_effect)
    if bootstrap == 0:
        raise AnalysisError("--bootstrap 0: a plan needs the pilot's standard errors (1000 replicates is usual)")
    opts = Options(
        metric,
        check_replicates(bootstrap, bootstrap_design),
        seed,
        "speaker",
        1 - alpha,
        group_factor=group_factor,
        design=bootstrap_design,
        time_limit_s=None if no_time_limit else TIME_LIMIT_S,
    )
    a = analyse(run_dir, opts)
    use = (a.run.resolved or {}).get("use")
    frame = planner.central_first(planner.select(planner.plan(a, settings), model, kind), use)
    if n_speakers is not None:
        frame[f"mde_at_{n_speakers}_speakers"] = planner.mde_at(frame, n_speakers)
    folder = out or (run_dir if run_dir.is_dir() else run_dir.parent)
    atomic.write_csv(folder / "plan.csv", with_label(frame))  # label: the effect's one name, as findings.csv
    reason = planner.no_plan_reason(frame)
    follow = _follow_up(a, frame, folder, reason)
    level = f"alpha {alpha:g}" if per_effect else f"family alpha {alpha:g}, per effect alpha/m"
    title = f"speakers per stratum to detect {effect:g} with power {power:g} ({level})"
    _print_plan(a, frame, settings, folder / "plan.csv", title, reason, follow, wide=wide, as_json=as_json)


def whole_speakers(value: float | None) -> int | None:
    """``--speakers`` as a whole number of speakers per stratum (None when not given); a
    fractional value is refused in one line before anything is read."""
    from interbias.utils.errors import ConfigError

    if value is None:
        return None
    if not float(value).is_integer():
        raise ConfigError(f"--speakers must be a whole number of speakers per stratum, got {value:g}")
    if value < 2:
        raise ConfigError(f"--speakers must be a whole number >= 2 (speakers per stratum), got {value:g}")
    return int(value)


def _follow_up(a: Any, frame: pd.DataFrame, folder: Path, reason: str | None) -> str:
    """The follow-up line: why there is no plan, or the ``run --plan`` command, and when the
    need is beyond the pilot's corpus, what would provide it (:func:`planner.beyond_corpus`)."""
    from interbias.analysis import planner

    follow = (
        reason
        if reason is not None
        else (
            f"interbias run {follow_up_experiment((a.run.resolved or {}).get('name'))}{_variant(a.run.resolved or {})} "
            f"--plan {folder / 'plan.csv'} "
            f"(the most any effect needs: {_largest(frame)}; equal strata, the pilot's trials per speaker)"
        )
    )
    if reason is None:
        corpus = _corpus_name(a.run.resolved or {})
        limit = planner.beyond_corpus(
            frame["speakers_per_stratum_needed"].max(),
            planner.corpus_capacity(a.run),
            corpus,
            planner.pilot_voice_groups(a.run),
            _largest_dev(frame),
        )
        if limit:
            follow += f"; but {limit}"
    return follow


def _variant(resolved: dict[str, Any]) -> str:
    """`` --corpus V`` when the pilot ran a variant ``V`` of its experiment ("" otherwise), so the
    follow-up command runs on the pilot's corpus as printed."""
    variant = resolved.get("variant")
    return f" --corpus {variant}" if variant else ""


def _corpus_name(resolved: dict[str, Any]) -> str:
    """The pilot's corpus by name (its ``corpus`` key, a name or a mapping with ``name``)."""
    corpus = resolved.get("corpus")
    if isinstance(corpus, dict):
        corpus = corpus.get("name") or corpus.get("manifest")
    return str(corpus or "pilot's")


def _print_plan(
    a: Any,
    frame: pd.DataFrame,
    settings: Settings,
    path: Path,
    title: str,
    reason: str | None,
    follow: str,
    *,
    wide: bool,
    as_json: bool,
) -> None:
    """The plan on the console (fits the terminal) or as JSON."""
    from interbias.analysis import planner
    from interbias.analysis.effect_names import effect_name

    pilot = planner.pilot_of(a.run.design())
    if as_json:
        import json

        out_json = {
            "pilot": pilot.describe(),
            "level": _level_line(frame, settings),
            "recommendation": json.loads(planner.recommendation(frame).to_json(orient="records")),
            "effects": json.loads(frame.to_json(orient="records")),
            "follow_up": follow,
            "wrote": str(path),
        }
        typer.echo(json.dumps(out_json, indent=1))
        return
    rec = planner.recommendation(frame).rename(columns=_SHORT)
    columns = ["kind", "effects", "resolved", "med_mde", "med_speakers", "max_speakers", "experiment"]
    print_frame(rec, title, columns, wide=wide, full=path.name)
    per = _named_first(frame)
    per = per.assign(effect=[effect_name(r) for r in per.itertuples(index=False)]).rename(columns=_SHORT)
    at = [c for c in frame.columns if str(c).startswith("mde_at_")]
    shown = ["model", "effect", "speakers", *at, "mde", "estimate", "lo", "hi"]
    print_frame(
        per,
        "per effect (the question's effects first, largest need first)",
        [*shown, "note"],
        wide=wide,
        full=path.name,
        max_rows=15,
        min_keep=len(shown),  # the effect's name folds between words so that its interval is shown
    )
    echo_wrapped(
        "speakers: per stratum, to resolve the effect at the planned power; med_/max_: the median/"
        "largest over the kind's effects; mde: the smallest effect the pilot resolves",
        wide=wide,
    )
    for line in (
        f"pilot: {pilot.describe()}",
        f"model: {planner.MODEL}",
        f"assumptions: {planner.ASSUMPTIONS}",
        f"standard errors: {a.replicates.describe()}",
        _level_line(frame, settings),
    ):
        echo_wrapped(line, wide=wide)
    if reason is not None:
        echo_wrapped(f"follow-up: {reason}", wide=wide)
    else:
        echo_wrapped(f"a follow-up of the planned size: {follow}", wide=wide)
        for command in re.findall(r"interbias data build synthetic --speakers \d+", follow):
            typer.echo(f"  {command}")
    echo_wrapped(f"wrote {path} ({len(frame)} effect(s))", wide=wide)


#: Short column headers for the console (plan.csv keeps the full names), so the tables fit 80
#: columns without breaking a word.
_SHORT = {
    "n_effects": "effects",
    "n_resolved": "resolved",
    "median_mde": "med_mde",
    "median_speakers_needed": "med_speakers",
    "max_speakers_needed": "max_speakers",
    "speakers_per_stratum_needed": "speakers",
}


def _named_first(frame: pd.DataFrame) -> pd.DataFrame:
    """The per-effect rows in the plan's kind order (the experiment's central kind, the effects
    its question names, first; see :func:`planner.central_first`), each kind largest need first."""
    order = {k: i for i, k in enumerate(dict.fromkeys(frame["kind"].astype(str)))}
    key = frame["kind"].astype(str).map(order)
    ranked = frame.assign(_rank=key, _need=-frame["speakers_per_stratum_needed"].astype(float))
    return ranked.sort_values(["_rank", "_need"], kind="stable").drop(columns=["_rank", "_need"])


def _largest_dev(frame: pd.DataFrame) -> int:
    """The dev speakers per stratum of the effect with the largest need (0 when none)."""
    need = frame["speakers_per_stratum_needed"]
    if not need.notna().any() or "dev_speakers_per_stratum_needed" not in frame:
        return 0
    return int(frame.loc[need.idxmax(), "dev_speakers_per_stratum_needed"])


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
