"""``interbias analyze``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from interbias.cli import app, guarded
from interbias.cli.analysis_options import DEFAULT_CHOICE, AnalysisChoice, with_analysis_options
from interbias.cli.numeric import check_numbers
from interbias.cli.options import JsonOpt, WideOpt, quiet_flag
from interbias.cli.tables import print_frame
from interbias.utils.progress import Reporter

if TYPE_CHECKING:
    from interbias.analysis.suite import Analysis


def print_answer(a: Analysis, found: object, *, wide: bool) -> None:
    """The central statement and one line per model and kind, wrapped to the width (the
    question and its answer come last: :func:`print_question`)."""
    from interbias.analysis.reporting.answer import answer
    from interbias.analysis.reporting.headline import HEADLINE_POWER, PLAN_LEVEL
    from interbias.cli.tables import echo_wrapped

    frame = found.findings  # type: ignore[attr-defined]
    if frame is None:
        echo_wrapped(found.lines[0], wide=wide)  # type: ignore[attr-defined]
        return
    ans = answer(frame, a.run.resolved or {}, a.options.metric, a.replicates.pct, str(a.run.path))
    if ans.central and ans.key:
        echo_wrapped(ans.central, wide=wide)
    for model, _, line in ans.lines:
        echo_wrapped(f"{model}: {line}", "  ", wide=wide)
    echo_wrapped(f"MDE and speakers needed: power {HEADLINE_POWER:g}, {PLAN_LEVEL} (as interbias plan).", wide=wide)


def print_question(a: Analysis, found: object, *, wide: bool) -> None:
    """analyze's last lines, so the answer is on screen at 80x24: the question, then per effect
    it names and model the count resolved and the largest in words (else the central
    statement), then for runs with countermeasures what the CM does per group, and for a fused
    copy whether the fusion helped against each component."""
    from interbias.analysis.fusion.compare import fusion_answer
    from interbias.analysis.reporting.answer import central_line, key_brief, question
    from interbias.analysis.security.sasv_run import sasv_answer
    from interbias.cli.tables import echo_wrapped

    metric = a.options.metric
    echo_wrapped("answer: " + question(a.run.resolved or {}, metric), wide=wide)
    frame = found.findings  # type: ignore[attr-defined]
    pct = a.replicates.pct if a.replicates is not None else "95%"
    lines = [] if frame is None else key_brief(frame, a.run.resolved or {}, metric, pct)
    if frame is not None and not lines:
        lines = [central_line(frame, (a.run.resolved or {}).get("use"), str(a.run.path), pct)]
    if frame is None:
        lines = [found.lines[0]]  # type: ignore[attr-defined]
    fused = fusion_answer(a.run.path)  # a fused copy: whether the fusion helped
    for line in [*[x for x in lines if x], *sasv_answer(a.run.path), *(fused[1] if fused else [])]:
        echo_wrapped(line, "  ", wide=wide)


@app.command(epilog="Example: interbias analyze results/<run_id>/results.csv --bootstrap 1000")
@guarded
@with_analysis_options
def analyze(
    results: Annotated[Path, typer.Argument(help="results.csv (or a run directory).")],
    out: Annotated[Path | None, typer.Option(help="Output folder (default: beside the results).")] = None,
    analysis: AnalysisChoice = DEFAULT_CHOICE,
    equivalence: Annotated[
        float | None,
        typer.Option(
            help="Margin (metric units) stated in advance: TOST per effect, adjusted over the family (--adjust), "
            "says per model how many effects are shown within ±MARGIN; writes equivalence.csv."
        ),
    ] = None,
    quiet: Annotated[bool, quiet_flag("Do not print tables or progress.")] = False,
    wide: WideOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Findings (every main effect, interaction and gap with its interval), contrasts (IE, NLI),
    summaries, subgroup gaps, additivity and bootstrap CIs of a run's results.csv."""
    analysis.check("analyze")
    check_numbers("analyze", equivalence=equivalence)
    from interbias.analysis.findings_store import write_findings
    from interbias.analysis.reporting.headline import headline
    from interbias.analysis.suite import analyse, write_tables
    from interbias.cli.tables import echo_wrapped

    if not results.exists():
        from interbias.utils.errors import AnalysisError

        raise AnalysisError(f"{results} does not exist")
    a = analyse(results, analysis.options(results), Reporter(quiet=quiet or as_json))
    folder = out or (results if results.is_dir() else results.parent)
    found = headline(a)
    paths = write_tables(a, folder) + write_findings(a, folder, found)
    within = _equivalence(a, found, equivalence, folder, paths)
    if as_json:
        _print_json(a, found, paths)
        return
    typer.echo("findings:")
    if wide:
        for line in found.lines:
            typer.echo(line)
    else:
        print_answer(a, found, wide=wide)
    for i, line in enumerate(within):
        echo_wrapped(line, "  " if i else "", wide=wide)
    if not quiet:
        _print_tables(a, a.options.metric, a.options.tolerance, wide)
    _print_crossed(a, wide)
    _closing(a, a.options.metric, paths, folder)
    print_question(a, found, wide=wide)


def _equivalence(a: Analysis, found: Any, margin: float | None, folder: Path, paths: list[Path]) -> list[str]:
    """With a margin: equivalence.csv (TOST per effect, :mod:`interbias.analysis.stats.equivalence`)
    appended to ``paths``, and the per-model lines to print."""
    if margin is None:
        return []
    from interbias.analysis.stats import equivalence as eq
    from interbias.utils import atomic
    from interbias.utils.errors import AnalysisError

    if found.findings is None:
        raise AnalysisError("--equivalence needs the findings' intervals (--bootstrap > 0 on a run with scores)")
    alpha = round(1 - a.replicates.level, 12)  # type: ignore[union-attr]
    frame = eq.tost(found.findings, margin, alpha, a.options.adjust)
    atomic.write_csv(folder / "equivalence.csv", frame)
    paths.append(folder / "equivalence.csv")
    return ["equivalence:", *eq.lines(frame, margin, a.options.adjust)]


def _print_crossed(a: Analysis, wide: bool) -> None:
    """The run's crossed fairness groupings (YAML ``fairness.groups`` such as ``gender×age_band``):
    cells with speakers, comparisons tested or refused (:mod:`interbias.analysis.groups.fairness_cross_summary`)."""
    from interbias.analysis.groups.fairness_cross_summary import crossed_lines
    from interbias.cli.tables import echo_wrapped
    from interbias.run.rundir import RunDir

    if not a.run.path.is_dir():
        return
    for line in crossed_lines(*RunDir(a.run.path).read_fairness(keep_default_na=False)):
        echo_wrapped(line, "  ", wide=wide)


def _closing(a: Analysis, metric: str, paths: list[Path], folder: Path) -> None:
    from interbias.cli.tables import echo_wrapped

    c = a.contrasts.contrasts
    echo_wrapped(f"{len(c)} contrast(s), {len(a.contrasts.missing)} setting(s) with missing terms")
    from interbias.run.frame import errored_split

    errored, _ = errored_split((a.run.run_json or {}).get("errored_cells", []))
    if errored:  # the family is smaller than the design: said, not silent
        echo_wrapped(
            f"note: {len(errored)} cell(s) errored in the run (run.json errored_cells; first: {errored[0]}): they have "
            "no results row, so the settings that need them are in missing_terms.csv and out of the contrasts' "
            "multiplicity family"
        )
    if len(a.above_chance):
        echo_wrapped(f"{len(a.above_chance)} cell(s) with {metric} above chance (0.5): listed in above_chance.csv")
    if a.replicates is not None:
        echo_wrapped(f"intervals of effects (findings, contrasts.csv, gaps.csv): {a.interval_method}")
        echo_wrapped(f"intervals of cells and means: {a.replicates.describe()}")
    echo_wrapped(f"wrote {len(paths)} files in {folder} (findings.csv: every effect; docs/outputs.md)")


def _print_json(a: Analysis, found: object, paths: list[Path]) -> None:
    import json

    frame = found.findings  # type: ignore[attr-defined]
    out = {
        "lines": found.lines,  # type: ignore[attr-defined]
        "findings": json.loads(frame.to_json(orient="records")) if frame is not None else None,
        "intervals": a.replicates.describe() if a.replicates is not None else None,
        "wrote": [str(p) for p in paths],
    }
    typer.echo(json.dumps(out, indent=1))


def _print_tables(a: Analysis, metric: str, tolerance: float, wide: bool) -> None:
    """The macro metric per model; with ``wide`` also contrasts, their summary, subgroup gaps and
    additivity in full (else named with their files)."""
    import pandas as pd

    from interbias.analysis.contrasts import R_NOTE
    from interbias.cli.tables import echo_wrapped

    mlohi = ["lo", "hi"] if a.replicates is not None else []
    macro = a.macro[a.macro["scope"] == "macro"].copy()
    flat = (macro["hi"] <= macro["lo"]) if mlohi else pd.Series(False, index=macro.index)
    if flat.any():  # replicates that do not vary: no interval, never a zero-width one
        macro.loc[flat, ["lo", "hi"]] = float("nan")
    print_frame(
        macro,
        f"macro {metric} per model",
        ["model", "value", *mlohi, "n_cells", "n_experiments", "family"],
        wide=wide,
        full="macro.csv",
    )
    if flat.any():
        echo_wrapped(
            f"no interval for {', '.join(macro.loc[flat, 'model'].astype(str))}: the bootstrap replicates do not vary"
        )
    if not wide:
        echo_wrapped(
            "contrasts: contrasts.csv, summary.csv; subgroup gaps: gaps.csv, gap_summary.csv; additivity: "
            "additivity_summary.csv; every effect: findings.csv (--wide prints them all)"
        )
        return
    c = a.contrasts.contrasts
    ci = ["ie_lo", "ie_hi"] if a.replicates is not None else []
    cols = ["model", "contrast", "level_a", "level_b", "level_c", "predicted", "ie", *ci, "nli", "flags"]
    print_frame(c, f"contrasts ({metric})", cols, wide=True)
    lohi = ["mean_ie_lo", "mean_ie_hi"] if a.replicates is not None else []
    cols = ["experiment", "contrast", "family", "n", "mean_ie", *lohi, "sd_ie", "pct_positive", "mean_nli", "n_nli"]
    print_frame(
        a.summary, "summary by experiment × contrast × family", [*cols, "mean_predicted", "r_predicted_ie"], wide=True
    )
    typer.echo(f"r_predicted_ie: {R_NOTE}")
    # means over models, no interval: each model's gap has the findings' interval (gaps.csv, findings.csv)
    cols = ["experiment", "group_level", "condition", "n_models", "mean_gap", "mean_abs_gap", "max_abs_gap"]
    print_frame(
        a.gaps.summary,
        "subgroup gaps over models (gap = group level − reference group)",
        [*cols, "n_ratio_flagged"],
        wide=True,
    )
    cols = ["experiment", "model", "n_settings", "n_estimable", "share_within", "mean_abs_error", "max_abs_error"]
    print_frame(a.additivity.summary, f"additivity (leave-one-setting-out, tolerance {tolerance:g})", cols, wide=True)
    for r in a.additivity.summary.itertuples(index=False):
        typer.echo(f"worst settings, {r.model}: {r.worst_settings}")
