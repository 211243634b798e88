"""``interbias scores metrics``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import numpy as np
import typer

from interbias.cli import guarded
from interbias.cli.numeric import check_numbers
from interbias.cli.options import JsonOpt
from interbias.cli.scores import scores_app
from interbias.metrics.verification import P_TARGET
from interbias.run.measured import SV_LINE, read_score_file
from interbias.utils.errors import MetricError


def read_scores(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Scores and labels from a CSV (``score``, ``label``) or a whitespace file
    ``enrol test score target|nontarget`` (:func:`interbias.run.measured.read_score_file`)."""
    frame = read_score_file(path, error=MetricError, layout=SV_LINE)
    return frame["score"].to_numpy(np.float64), frame["label"].to_numpy(np.int8)


@scores_app.command(epilog="Example: interbias scores metrics scores.txt --json")
@guarded
def metrics(
    scores: Annotated[Path, typer.Argument(help="CSV with score,label or 'enrol test score target|nontarget'.")],
    p_target: Annotated[float, typer.Option(help="Target prior for minDCF.")] = P_TARGET,
    as_json: JsonOpt = False,
) -> None:
    """The results.csv metrics of a score file: EER (interpolated and legacy), minDCF, AUC, FRR at FAR 1 %."""
    check_numbers("scores metrics", p_target=p_target)
    from interbias.metrics.verification import summarize

    s, lab = read_scores(scores)
    summ = summarize(s, lab, p_target=p_target)
    out = summ.as_dict()
    if as_json:
        typer.echo(json.dumps(out))
    else:
        for k, v in out.items():
            typer.echo(f"{k:12s} {v:.6f}" if isinstance(v, float) else f"{k:12s} {v}")
