"""``interbias fuse``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from interbias.cli import app, guarded
from interbias.cli.tables import echo_wrapped
from interbias.utils.keyvalue import comma_list


@app.command(epilog='Example: interbias fuse results/<run_id> --models "CAM++,mfcc-stats" --out results/E16-fused')
@guarded
def fuse(
    run_dir: Annotated[Path, typer.Argument(help="A finished run directory with a dev split.")],
    models: Annotated[str, typer.Option(help="Comma-separated models of the run to fuse (two or more).")],
    out: Annotated[Path, typer.Option(help="New run directory: the run plus the fused model.")],
) -> None:
    """Fuse models' scores by linear logistic regression fitted on the reference cells' dev
    trials (prior 0.5): the copy of the run at --out gains a model "A+B fused" with score files,
    results rows, calibration and fairness, so analyze, report, fairness and plan read it like
    any other model."""
    from interbias.analysis.fusion.fuse import fuse_run

    fusion = fuse_run(run_dir, comma_list(models), out)
    weights = ", ".join(f"{n} {w:.4g}" for n, w in zip(fusion.fit.names, fusion.fit.weights, strict=True))
    echo_wrapped(
        f"{fusion.label}: llr = {weights} (weights), offset {fusion.fit.offset:.4g}; fitted on "
        f"{fusion.fit.n_target} target and {fusion.fit.n_nontarget} non-target dev trials; "
        f"{len(fusion.cells)} cells written to {fusion.out}"
    )
    for line in fusion.verdicts:
        echo_wrapped(line)
    echo_wrapped(f"per cell: {fusion.out / 'fusion_comparison.csv'}")
    if fusion.left:
        echo_wrapped(
            f"not copied from {run_dir}: {', '.join(fusion.left)} (its analysis, which does not know the fused "
            f"model); analyse the copy: interbias analyze {fusion.out}"
        )
