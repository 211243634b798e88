"""``interbias fuse``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from interbias.cli import app, guarded
from interbias.cli.tables import echo_wrapped
from interbias.utils.keyvalue import comma_list

#: Replicates of the comparison's intervals and of the copy's analysis when not told.
DEFAULT_BOOT = 1000


@app.command(epilog='Example: interbias fuse results/<run_id> --models "CAM++,mfcc-stats" --out results/E16-fused')
@guarded
def fuse(
    run_dir: Annotated[Path, typer.Argument(help="A finished run directory with a dev split.")],
    models: Annotated[str, typer.Option(help="Comma-separated models of the run to fuse (two or more).")],
    out: Annotated[Path, typer.Option(help="New run directory: the run plus the fused model.")],
    bootstrap: Annotated[
        int,
        typer.Option(help="Speaker-bootstrap replicates of the comparison's intervals and the copy's analysis."),
    ] = DEFAULT_BOOT,
) -> None:
    """Fuse models' scores by linear logistic regression fitted on the reference cells' dev
    trials (prior 0.5): the copy of the run at --out gains a model "A+B fused" (score files,
    results rows, calibration, fairness), then its own analysis and report, which open with the
    fused model against each component (macro and per cell EER change, 95 % intervals; also in
    fusion_comparison.csv)."""
    from interbias.analysis.fusion.fuse import fuse_run
    from interbias.analysis.stats.bootstrap import MIN_BOOT_CORRECTED
    from interbias.cli.numeric import check_numbers
    from interbias.utils.errors import ConfigError

    check_numbers("fuse", bootstrap=bootstrap)
    if bootstrap < MIN_BOOT_CORRECTED:
        raise ConfigError(f"--bootstrap {bootstrap}: the comparison's intervals need at least "
                          f"{MIN_BOOT_CORRECTED} replicates (1000 is usual)")  # fmt: skip
    fusion = fuse_run(run_dir, comma_list(models), out, n_boot=bootstrap)
    weights = ", ".join(f"{n} {w:.4g}" for n, w in zip(fusion.fit.names, fusion.fit.weights, strict=True))
    echo_wrapped(
        f"{fusion.label}: llr = {weights} (weights), offset {fusion.fit.offset:.4g}; fitted on "
        f"{fusion.fit.n_target} target and {fusion.fit.n_nontarget} non-target dev trials; "
        f"{len(fusion.cells)} cells written to {fusion.out}"
    )
    if fusion.left:
        echo_wrapped(f"not copied from {run_dir} (its analysis, which does not know the fused model): "
                     f"{', '.join(fusion.left)}")  # fmt: skip
    report = analyse_copy(fusion.out, bootstrap)
    echo_wrapped(f"analysed the copy: {report} (and report.html, findings.csv), per cell: fusion_comparison.csv")
    for line in fusion.verdicts:
        echo_wrapped(line)


def analyse_copy(path: Path, n_boot: int) -> Path:
    """``interbias analyze`` and ``interbias report`` of the fused copy at ``path`` with their
    default options and ``n_boot`` replicates (tables, findings, report.md and report.html in
    ``path``); returns report.md's path."""
    from interbias.analysis.findings_store import write_findings
    from interbias.analysis.reporting.document import write_report
    from interbias.analysis.reporting.headline import headline
    from interbias.analysis.reporting.report import build_report
    from interbias.analysis.suite import analyse, write_tables
    from interbias.cli.analysis_options import analysis_options

    a = analyse(path, analysis_options(path, n_boot))
    found = headline(a)
    write_tables(a, path)
    write_findings(a, path, found)
    md, _ = write_report(build_report(a, findings=found), path)
    return md
